package httpapi

import (
	"fmt"
	"net/http"
)

// ReplicaHeader is the response header that names the replica that
// answered (Options.Replica).
const ReplicaHeader = "Codecell-Replica"

// sessionHeader is the MCP session's header (Streamable HTTP).
const sessionHeader = "Mcp-Session-Id"

// explainUnknownSession replaces the SDK's bare "session not found" (HTTP
// 404, as the MCP spec requires for a session the server does not hold)
// with a message that says why that happens behind a balancer: the session
// lived on another replica, or on one that stopped, and its interpreter
// sessions went with it. The status stays 404, so clients start a new
// session as the spec says; nothing here ever makes one for them, which
// would hand the caller a fresh interpreter under an id it thinks is its
// old one.
func explainUnknownSession(h http.Handler, replica string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionHeader)
		if id == "" {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&notFoundWriter{ResponseWriter: w, replica: replica}, r)
	})
}

// notFoundWriter rewrites the body of a 404 answer and passes anything
// else through.
type notFoundWriter struct {
	http.ResponseWriter
	replica  string
	replaced bool // a 404 was answered with the explanation; drop the SDK's body
}

func (w *notFoundWriter) WriteHeader(code int) {
	if code != http.StatusNotFound || w.replaced {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.replaced = true
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Del("Content-Length")
	w.ResponseWriter.WriteHeader(code)
	where := "this server"
	if w.replica != "" {
		where = fmt.Sprintf("replica %q", w.replica)
	}
	fmt.Fprintf(w.ResponseWriter, "session not found: %s does not hold this MCP session; it lived on another replica, "+
		"or on one that stopped or restarted, and its interpreter sessions ended with it. "+
		"Reconnect: initialize a new session (a request without Mcp-Session-Id).\n", where)
}

func (w *notFoundWriter) Write(p []byte) (int, error) {
	if w.replaced {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the real writer (Flush, for
// the SDK's event streams).
func (w *notFoundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush is for callers that assert http.Flusher rather than use a
// ResponseController.
func (w *notFoundWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
