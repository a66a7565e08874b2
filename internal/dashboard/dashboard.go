package dashboard

import (
	"bytes"
	"embed"
	"net/http"
	"time"
)

//go:embed static
var static embed.FS

// Paths are the http.ServeMux patterns to mount Handler at: the page itself
// at exactly "/" and its assets under "/static/".
var Paths = []string{"GET /{$}", "GET /static/"}

// csp allows the page to load only its own script and style and to talk only
// to its own origin, so that a sandbox's output that slipped into markup
// still could not run script or send data elsewhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file and how to serve it.
type asset struct {
	file, contentType string
}

var assets = map[string]asset{
	"/":                   {"static/index.html", "text/html; charset=utf-8"},
	"/static/app.js":      {"static/app.js", "text/javascript; charset=utf-8"},
	"/static/style.css":   {"static/style.css", "text/css; charset=utf-8"},
	"/static/favicon.svg": {"static/favicon.svg", "image/svg+xml"},
}

// Handler returns a handler serving the dashboard page at "/" and its assets
// under "/static/". Other paths get 404. It is safe for concurrent use.
func Handler() http.Handler {
	// Embedded files have no modification time; the time the handler was
	// made stands in, so that a browser revalidates after a restart (an
	// upgrade included) and not between.
	modTime := time.Now()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		data, err := static.ReadFile(a.file)
		if err != nil { // cannot happen: the files are embedded
			http.Error(w, "missing asset", http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, a.file, modTime, bytes.NewReader(data))
	})
}
