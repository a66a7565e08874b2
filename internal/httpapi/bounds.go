package httpapi

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"
)

// Bounds on every connection, whoever makes it: a client without a valid
// token (or with one) cannot hold a connection, or the server's file
// descriptors, past them.
const (
	// headerTimeout bounds the request line and headers.
	headerTimeout = 10 * time.Second
	// bodyTimeout bounds a request's body, from its headers to its last
	// byte: 4 MiB (MaxRequestBody) at 140 KiB/s.
	bodyTimeout = 30 * time.Second
	// idleTimeout bounds a kept-alive connection between requests.
	idleTimeout = 2 * time.Minute
	// MaxConnections is how many connections the server holds at once;
	// more wait to be accepted. A 2025 client's MCP session holds one for
	// its event stream.
	MaxConnections = 4096
)

// NewServer returns the HTTP server of handler h, with the bounds above.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout}
}

// Listen listens on addr, accepting at most MaxConnections at once.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return netutil.LimitListener(ln, MaxConnections), nil
}

// boundBodies bounds how long a request's body may take, and closes the
// connection after an answer sent before the body was read whole.
//
// The deadline is the connection's read deadline, lifted once the body has
// been read whole, so that what follows (an execution, an event stream)
// is not cut. The close matters for refusals (401 without a valid token,
// 403, 413): net/http would otherwise read up to 256 KiB of the unread
// body, at the client's pace, before it sent the answer, so a client
// trickling a body held the connection, its refusal unsent, for as long as
// it liked.
func boundBodies(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// Not every writer has a connection (tests' recorders): then there
		// is nothing to bound.
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		body := &watchedBody{ReadCloser: r.Body, whole: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		r.Body = body
		h.ServeHTTP(&closeIfUnread{ResponseWriter: w, body: body}, r)
		if !body.eof.Load() {
			// net/http still reads what is left of the body after the
			// answer, before it closes the connection: not a byte more.
			_ = rc.SetReadDeadline(time.Now())
		}
	})
}

// watchedBody is a request body that notes when it has been read whole.
type watchedBody struct {
	io.ReadCloser
	whole func() // called once, at the body's end
	eof   atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.eof.Swap(true) {
		b.whole()
	}
	return n, err
}

// closeIfUnread asks for the connection to be closed after an answer whose
// request body was not read whole.
type closeIfUnread struct {
	http.ResponseWriter
	body        *watchedBody
	wroteHeader bool
}

func (w *closeIfUnread) WriteHeader(code int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		if !w.body.eof.Load() {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeIfUnread) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the real writer (Flush, for
// event streams; the read deadline).
func (w *closeIfUnread) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush is for callers that assert http.Flusher.
func (w *closeIfUnread) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
