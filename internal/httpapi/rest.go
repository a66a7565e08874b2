package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// API is what the REST routes and /readyz read; server.API is the real one.
// Methods that take a namespace get the caller's ("" for the default
// namespace, when tokens are not configured). Each answer is a value that
// encodes to the response's JSON body. An error that has a Parameter
// method (server.FieldError) is a bad query parameter, answered with 400;
// any other is answered with 500.
type API interface {
	// Ready returns nil when the server can take executions, else why not.
	Ready(ctx context.Context) error
	// SearchTools is search_tools' structured output; limit and offset 0
	// mean its defaults.
	SearchTools(ctx context.Context, query, server, detailLevel string, limit, offset int) (any, error)
	// Executions is a page of the execution log, newest first, of ids
	// below before (0: from the newest); limit 0 means the default.
	Executions(ctx context.Context, namespace string, before int64, limit int) (any, error)
	Skills(ctx context.Context, namespace string) (any, error)
	// Stats is get_execution_stats' structured output.
	Stats(ctx context.Context, namespace, since string) (any, error)
	Upstreams(ctx context.Context) (any, error)
	// Tasks lists the namespace's tasks, newest first.
	Tasks(ctx context.Context, namespace string) (any, error)
}

// readyTimeout bounds /readyz's checks: a database that does not answer,
// or a probe execution that does not finish, in this time is not ready. A
// balancer's check timeout should be at least this.
const readyTimeout = 10 * time.Second

// addOperational adds /readyz, /metrics and /api/v1/* to mux (the routes
// behind the token check). Each is read-only and refuses what a browser
// could be made to send from another site (readOnly).
func addOperational(mux *http.ServeMux, opts Options, cop *http.CrossOriginProtection) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics != nil {
		mux.Handle("/metrics", readOnly(cop, gatedText(opts.Gate, opts.Metrics)))
	}
	api := opts.API
	if api == nil {
		return
	}
	mux.Handle("/readyz", readOnly(cop, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := api.Ready(ctx); err != nil {
			msg, err := opts.Gate.Text(ctx, namespaceOf(r), err.Error())
			if err != nil {
				msg = "(withheld: personal data could not be tokenized)"
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", msg)
			return
		}
		fmt.Fprintln(w, "ready")
	})))
	route := func(path string, answer func(r *http.Request, q query) (any, error)) {
		mux.Handle(path, readOnly(cop, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q, err := parseQuery(r)
			var v any
			if err == nil {
				v, err = answer(r, q)
			}
			if err != nil {
				writeError(w, r, log, opts.Gate, err)
				return
			}
			writeGated(w, r, log, opts.Gate, http.StatusOK, v)
		})))
	}
	route("/api/v1/tools/search", func(r *http.Request, q query) (any, error) {
		limit, offset := q.int("limit"), q.int("offset")
		if q.err != nil {
			return nil, q.err
		}
		return api.SearchTools(r.Context(), q.str("query"), q.str("server"), q.str("detail_level"), limit, offset)
	})
	route("/api/v1/executions", func(r *http.Request, q query) (any, error) {
		limit, before := q.int("limit"), q.int64("before")
		if q.err != nil {
			return nil, q.err
		}
		return api.Executions(r.Context(), namespaceOf(r), before, limit)
	})
	route("/api/v1/skills", func(r *http.Request, _ query) (any, error) {
		return api.Skills(r.Context(), namespaceOf(r))
	})
	route("/api/v1/stats", func(r *http.Request, q query) (any, error) {
		return api.Stats(r.Context(), namespaceOf(r), q.str("since"))
	})
	route("/api/v1/upstreams", func(r *http.Request, _ query) (any, error) {
		return api.Upstreams(r.Context())
	})
	route("/api/v1/tasks", func(r *http.Request, _ query) (any, error) {
		return api.Tasks(r.Context(), namespaceOf(r))
	})
}

// namespaceOf is the namespace the request acts in: its bearer token's
// (the token verifier puts it in UserID), else "" for the default.
func namespaceOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// readOnly serves h to GET and HEAD requests that come from this server's
// own pages or from outside a browser, and refuses the rest (DNS rebinding
// is refused before it, by refuseRebinding):
//
//   - A browser request from another origin gets 403, GET included: the
//     standard library's cross-origin protection lets safe methods through,
//     but these answers hold code and output. Origins in
//     Options.AllowedOrigins are let through.
//   - Any method but GET and HEAD gets 405.
//
// It does not protect against a client that holds a valid token, nor, when
// no tokens are configured, against any process that can reach the
// listener: that is what the loopback-only default is for.
func readOnly(cop *http.CrossOriginProtection, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Checked as if it were a POST, so that safe methods get the same
		// Sec-Fetch-Site and Origin checks as unsafe ones.
		asUnsafe := r.WithContext(r.Context())
		asUnsafe.Method = http.MethodPost
		if err := cop.Check(asUnsafe); err != nil {
			writeJSON(w, http.StatusForbidden, errorBody{Error: err.Error()})
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: fmt.Sprintf("method %s is not allowed; use GET", r.Method)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// errorBody is the JSON of an error answer.
type errorBody struct {
	Error string `json:"error"`
	// Parameter names the query parameter at fault, for a 400.
	Parameter string `json:"parameter,omitempty"`
}

// paramError is a bad query parameter.
type paramError struct{ name, rule string }

func (e *paramError) Error() string     { return "invalid parameter " + e.name + ": " + e.rule }
func (e *paramError) Parameter() string { return e.name }

func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, g Gate, err error) {
	var bad interface{ Parameter() string }
	if errors.As(err, &bad) {
		writeGated(w, r, log, g, http.StatusBadRequest, errorBody{Error: err.Error(), Parameter: bad.Parameter()})
		return
	}
	// The details (a database error, say) are for the operator's log.
	log.Error("api", "path", r.URL.Path, "error", err)
	writeJSON(w, http.StatusInternalServerError, errorBody{Error: "internal error; the server log has the details"})
}

// writeGated writes v as JSON once the gate has tokenized it, whole; an
// answer it cannot tokenize is withheld.
func writeGated(w http.ResponseWriter, r *http.Request, log *slog.Logger, g Gate, status int, v any) {
	body, err := json.Marshal(v)
	if err == nil {
		body, err = g.JSON(r.Context(), namespaceOf(r), body)
	}
	if err != nil {
		log.Error("api: an answer was withheld", "path", r.URL.Path, "error", err)
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: "the answer was withheld: personal data in it could not be tokenized"})
		return
	}
	writeJSON(w, status, json.RawMessage(body))
}

// gatedText serves h's answer, a text, once the gate has tokenized it.
func gatedText(g Gate, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		// The gate reads text: no compression.
		r = r.Clone(r.Context())
		r.Header.Del("Accept-Encoding")
		h.ServeHTTP(rec, r)
		body, err := g.Text(r.Context(), namespaceOf(r), rec.body.String())
		if err != nil {
			http.Error(w, "the answer was withheld: personal data in it could not be tokenized", http.StatusInternalServerError)
			return
		}
		for k, v := range rec.header {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.status)
		io.WriteString(w, body)
	})
}

// recorder keeps an answer to pass it through the gate.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }
func (r *recorder) WriteHeader(status int)      { r.status = status }

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"encode the answer"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// query reads a request's query parameters; the first that fails to parse
// is kept in err.
type query struct {
	vals map[string][]string
	err  error
}

func parseQuery(r *http.Request) (query, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return query{}, &paramError{name: "query string", rule: err.Error()}
	}
	return query{vals: vals}, nil
}

func (q *query) str(name string) string {
	if v := q.vals[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// int64 is an integer parameter, 0 when absent.
func (q *query) int64(name string) int64 { return q.integer(name, 64) }

// int is an integer parameter of at most 32 bits, 0 when absent.
func (q *query) int(name string) int { return int(q.integer(name, 32)) }

func (q *query) integer(name string, bits int) int64 {
	s := q.str(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil && q.err == nil {
		q.err = &paramError{name: name, rule: fmt.Sprintf("%q is not an integer of at most %d bits", s, bits)}
	}
	return n
}
