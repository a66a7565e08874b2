package dashboard

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	tests := []struct {
		method, path string
		status       int
		contentType  string
		bodyHas      string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script src="/static/app.js"`},
		{"HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"GET", "/static/app.js", 200, "text/javascript; charset=utf-8", "textContent"},
		{"GET", "/static/style.css", 200, "text/css; charset=utf-8", "--bg"},
		{"GET", "/static/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"GET", "/static/", 404, "", ""},
		{"GET", "/static/index.html", 404, "", ""},
		{"GET", "/static/../static/app.js", 404, "", ""},
		{"GET", "/index.html", 404, "", ""},
		{"GET", "/api/v1/executions", 404, "", ""},
		{"POST", "/", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://localhost"+tt.path, nil)
			// httptest cleans nothing: keep the path as written.
			req.URL.Path = tt.path
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if tt.status != 200 {
				return
			}
			if got := rec.Header().Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type %q, want %q", got, tt.contentType)
			}
			for name, want := range map[string]string{"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff"} {
				if got := rec.Header().Get(name); got != want {
					t.Errorf("%s %q, want %q", name, got, want)
				}
			}
			if !strings.Contains(rec.Body.String(), tt.bodyHas) {
				t.Errorf("body lacks %q", tt.bodyHas)
			}
		})
	}
}

// TestCSP pins the policy: the page may run only its own script and style,
// load only its own images, talk only to its own origin, and be framed by
// nobody; nothing inline, nothing evaluated.
func TestCSP(t *testing.T) {
	got := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		if _, dup := got[name]; dup {
			t.Errorf("%s twice", name)
		}
		got[name] = value
	}
	want := map[string]string{
		"default-src": "'none'", "script-src": "'self'", "style-src": "'self'", "img-src": "'self'",
		"connect-src": "'self'", "base-uri": "'none'", "form-action": "'none'", "frame-ancestors": "'none'",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("policy %v, want %v", got, want)
	}
}

// TestServesEveryReference: every asset the page names is served, and
// every embedded file is reachable.
func TestServesEveryReference(t *testing.T) {
	index, err := static.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(string(index), -1)
	if len(refs) < 2 {
		t.Fatalf("index.html references %v", refs)
	}
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, m := range refs {
		resp, err := http.Get(srv.URL + m[1])
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %s", m[1], resp.Status)
		}
	}
	served := map[string]bool{}
	for _, a := range assets {
		served[a.file] = true
	}
	fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !served[p] {
			t.Errorf("%s is embedded but not served", p)
		}
		return err
	})
}

// TestAssetsAreSelfContained: the page works offline (nothing is loaded
// from elsewhere), and the script never turns data into markup.
func TestAssetsAreSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i:(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,})|@import|\burl\(`)
	for _, a := range assets {
		data, err := static.ReadFile(a.file)
		if err != nil {
			t.Fatal(err)
		}
		// An XML namespace names, it loads nothing.
		data = bytes.ReplaceAll(data, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil)
		if m := external.FindString(string(data)); m != "" {
			t.Errorf("%s loads %q from elsewhere", a.file, m)
		}
	}
	js, err := static.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "createContextualFragment"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
}
