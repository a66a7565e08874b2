package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/httpapi/httpapitest"
)

// fakeAPI records what the routes asked and answers as the test says.
type fakeAPI struct {
	mu    sync.Mutex
	asked []string // one line per call
	err   error    // returned by every method
	ready error
}

func (f *fakeAPI) note(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(args)
	f.asked = append(f.asked, format+" "+string(b))
}

func (f *fakeAPI) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.asked) == 0 {
		return ""
	}
	return f.asked[len(f.asked)-1]
}

func (f *fakeAPI) Ready(context.Context) error { return f.ready }
func (f *fakeAPI) SearchTools(_ context.Context, query, server, detail string, limit, offset int) (any, error) {
	f.note("search", query, server, detail, limit, offset)
	return map[string]any{"tools": []any{}}, f.err
}
func (f *fakeAPI) Executions(_ context.Context, ns string, before int64, limit int) (any, error) {
	f.note("executions", ns, before, limit)
	return map[string]any{"executions": []any{}, "next_before": nil}, f.err
}
func (f *fakeAPI) Skills(_ context.Context, ns string) (any, error) {
	f.note("skills", ns)
	return map[string]any{"skills": []any{}}, f.err
}
func (f *fakeAPI) Stats(_ context.Context, ns, since string) (any, error) {
	f.note("stats", ns, since)
	return map[string]any{"total": 0}, f.err
}
func (f *fakeAPI) Upstreams(context.Context) (any, error) {
	f.note("upstreams")
	return map[string]any{"upstreams": []any{}}, f.err
}

func (f *fakeAPI) Tasks(_ context.Context, ns string) (any, error) {
	f.note("tasks " + ns)
	return map[string]any{"tasks": []any{}}, f.err
}

// fieldErr is an error with a Parameter, as server.FieldError.
type fieldErr struct{ name string }

func (e fieldErr) Error() string     { return "invalid argument " + e.name + ": bad" }
func (e fieldErr) Parameter() string { return e.name }

func serve(t *testing.T, opts Options) *httptest.Server {
	t.Helper()
	if opts.Server == nil {
		opts.Server = mcp.NewServer(&mcp.Implementation{Name: "test"}, nil)
	}
	if opts.Gate == nil {
		opts.Gate = passGate{}
	}
	h, err := Handler(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// get sends a request without a body to the test server.
func get(t *testing.T, ts *httptest.Server, method, path string, header map[string]string) httpapitest.Answer {
	t.Helper()
	return httpapitest.Do(t, method, ts.URL+path, header)
}

var metricsStub = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	io.WriteString(w, "codecell_up 1\n")
})

func TestRoutesAndParameters(t *testing.T) {
	api := &fakeAPI{}
	var logs bytes.Buffer
	ts := serve(t, Options{API: api, Metrics: metricsStub, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, tc := range []struct {
		path   string
		status int
		asked  string // the API call made, "" for none
		param  string // the parameter a 400 names
	}{
		{"/api/v1/tools/search?query=get+sum&server=ev&detail_level=full&limit=5&offset=10", 200, `search ["get sum","ev","full",5,10]`, ""},
		{"/api/v1/tools/search", 200, `search ["","","",0,0]`, ""},
		{"/api/v1/tools/search?limit=ten", 400, "", "limit"},
		{"/api/v1/tools/search?offset=1.5", 400, "", "offset"},
		{"/api/v1/tools/search?limit=99999999999", 400, "", "limit"},
		{"/api/v1/executions", 200, `executions ["",0,0]`, ""},
		{"/api/v1/executions?before=42&limit=7", 200, `executions ["",42,7]`, ""},
		{"/api/v1/executions?before=x", 400, "", "before"},
		{"/api/v1/executions?limit=", 200, `executions ["",0,0]`, ""},
		{"/api/v1/executions?limit=%zz", 400, "", "query string"},
		{"/api/v1/skills", 200, `skills [""]`, ""},
		{"/api/v1/stats?since=1h", 200, `stats ["","1h"]`, ""},
		{"/api/v1/upstreams", 200, "upstreams null", ""},
		{"/api/v1/nothing", 404, "", ""},
	} {
		api.asked = nil
		a := get(t, ts, "GET", tc.path, nil)
		if a.Status != tc.status || api.last() != tc.asked {
			t.Errorf("%s: %d %q, asked %q; want %d, %q", tc.path, a.Status, a.Body, api.last(), tc.status, tc.asked)
			continue
		}
		if tc.status == 404 {
			continue
		}
		if ct := a.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", tc.path, ct)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(a.Body), &body); err != nil {
			t.Errorf("%s: not JSON: %q", tc.path, a.Body)
		}
		if tc.status == 400 && (body["parameter"] != tc.param || !strings.Contains(body["error"].(string), tc.param)) {
			t.Errorf("%s: %v, want the error to name %s", tc.path, body, tc.param)
		}
	}

	// The API's own errors: a bad parameter is 400 naming it, anything else
	// 500 without the details, which go to the log.
	api.err = fieldErr{"detail_level"}
	a := get(t, ts, "GET", "/api/v1/tools/search?detail_level=most", nil)
	if a.Status != 400 || !strings.Contains(a.Body, `"parameter":"detail_level"`) {
		t.Errorf("field error: %d %s", a.Status, a.Body)
	}
	api.err = errors.New("database is locked at /secret/path")
	a = get(t, ts, "GET", "/api/v1/executions", nil)
	if a.Status != 500 || strings.Contains(a.Body, "/secret/path") || !strings.Contains(logs.String(), "/secret/path") {
		t.Errorf("internal error: %d %s; log %s", a.Status, a.Body, logs.String())
	}
	api.err = nil

	for _, method := range []string{"POST", "PUT", "DELETE"} {
		for _, path := range []string{"/api/v1/executions", "/metrics", "/readyz"} {
			a := get(t, ts, method, path, nil)
			if a.Status != 405 || a.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d %q", method, path, a.Status, a.Header.Get("Allow"))
			}
		}
	}
	if a := get(t, ts, "HEAD", "/api/v1/skills", nil); a.Status != 200 {
		t.Errorf("HEAD: %d", a.Status)
	}

	if a := get(t, ts, "GET", "/readyz", nil); a.Status != 200 || a.Body != "ready\n" {
		t.Errorf("readyz: %d %q", a.Status, a.Body)
	}
	api.ready = errors.New("database: disk I/O error")
	if a := get(t, ts, "GET", "/readyz", nil); a.Status != 503 || a.Body != "not ready: database: disk I/O error\n" {
		t.Errorf("readyz not ready: %d %q", a.Status, a.Body)
	}
	if a := get(t, ts, "GET", "/metrics", nil); a.Status != 200 || a.Body != "codecell_up 1\n" {
		t.Errorf("metrics: %d %q", a.Status, a.Body)
	}
}

func TestOptionalRoutes(t *testing.T) {
	ts := serve(t, Options{})
	for _, path := range []string{"/metrics", "/readyz", "/api/v1/executions"} {
		if a := get(t, ts, "GET", path, nil); a.Status != 404 {
			t.Errorf("%s without API or Metrics: %d", path, a.Status)
		}
	}
}

func TestTokens(t *testing.T) {
	api := &fakeAPI{}
	ts := serve(t, Options{API: api, Metrics: metricsStub, Tokens: map[string]string{"tok-a": "alice", "tok-b": "bob"}})
	// Every route but /healthz and the dashboard's: /mcp, and paths that
	// do not exist, which must not tell a caller without a token so.
	for _, path := range []string{"/api/v1/executions", "/api/v1/tools/search", "/api/v1/skills", "/api/v1/stats",
		"/api/v1/upstreams", "/metrics", "/readyz", "/mcp", "/api/v1/nothing", "/index.html"} {
		for _, auth := range []string{"", "Bearer wrong", "Basic dG9rLWE6", "Bearer tok-ab", "Bearer TOK-A", "tok-a"} {
			for _, method := range []string{"GET", "POST"} {
				api.asked = nil
				a := get(t, ts, method, path, map[string]string{"Authorization": auth})
				if a.Status != 401 || api.last() != "" {
					t.Errorf("%s %s with %q: %d, asked %q", method, path, auth, a.Status, api.last())
				}
			}
		}
	}
	for tok, ns := range map[string]string{"tok-a": "alice", "tok-b": "bob"} {
		for path, want := range map[string]string{
			"/api/v1/executions?limit=3": `executions ["` + ns + `",0,3]`,
			"/api/v1/skills":             `skills ["` + ns + `"]`,
			"/api/v1/stats":              `stats ["` + ns + `",""]`,
		} {
			a := get(t, ts, "GET", path, map[string]string{"Authorization": "Bearer " + tok})
			if a.Status != 200 || api.last() != want {
				t.Errorf("%s as %s: %d, asked %q, want %q", path, ns, a.Status, api.last(), want)
			}
		}
	}
	if a := get(t, ts, "GET", "/healthz", nil); a.Status != 200 {
		t.Errorf("healthz needs no token: %d", a.Status)
	}
	// The dashboard's page and assets hold no data: no token, and they
	// keep their Content-Security-Policy through this handler.
	for _, path := range []string{"/", "/static/app.js", "/static/style.css"} {
		a := get(t, ts, "GET", path, nil)
		if csp := a.Header.Get("Content-Security-Policy"); a.Status != 200 || !strings.Contains(csp, "default-src 'none'") ||
			!strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s without a token: %d, CSP %q", path, a.Status, csp)
		}
	}
}

func TestOriginChecks(t *testing.T) {
	api := &fakeAPI{}
	ts := serve(t, Options{API: api, Metrics: metricsStub, AllowedOrigins: []string{"https://dash.example"}})
	host := strings.TrimPrefix(ts.URL, "http://")
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"no browser headers (curl)", nil, 200},
		{"same origin (the dashboard)", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": ts.URL}, 200},
		{"typed into the address bar", map[string]string{"Sec-Fetch-Site": "none"}, 200},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"same-site but another origin", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://other.localhost"}, 403},
		{"old browser, foreign Origin", map[string]string{"Origin": "https://evil.example"}, 403},
		{"allowed origin", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://dash.example"}, 200},
		{"DNS rebinding", map[string]string{"Host": "evil.example:" + host[strings.LastIndex(host, ":")+1:]}, 403},
		{"localhost by name", map[string]string{"Host": "localhost"}, 200},
	} {
		for _, path := range []string{"/api/v1/executions", "/metrics", "/readyz"} {
			api.asked = nil
			a := get(t, ts, "GET", path, tc.header)
			if a.Status != tc.status {
				t.Errorf("%s, %s: %d %q, want %d", tc.name, path, a.Status, a.Body, tc.status)
			}
			if tc.status == 403 && api.last() != "" {
				t.Errorf("%s, %s: the API was asked %q", tc.name, path, api.last())
			}
		}
	}
}

// TestMCPOriginChecks: /mcp refuses DNS rebinding (refuseRebinding, as the
// SDK's own check is off) and cross-site requests before the SDK reads
// them, and lets the rest through to it.
func TestMCPOriginChecks(t *testing.T) {
	ts := serve(t, Options{})
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	for _, tc := range []struct {
		name    string
		header  map[string]string
		refused bool
	}{
		{"no browser headers", nil, false},
		{"localhost by name", map[string]string{"Host": "localhost:" + port}, false},
		{"DNS rebinding", map[string]string{"Host": "evil.example:" + port}, true},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, true},
	} {
		// Without a body and its Content-Type, the SDK answers 415 when it
		// gets the request: anything but 403 means it got there.
		if a := get(t, ts, "POST", "/mcp", tc.header); (a.Status == 403) != tc.refused || a.Status == 200 {
			t.Errorf("%s: %d %s, want refused %v", tc.name, a.Status, a.Body, tc.refused)
		}
	}
}

// passGate is a gate that finds nothing: these tests' answers hold no
// personal data, and the gate's own tests are server's.
type passGate struct{}

func (passGate) JSON(_ context.Context, _ string, raw []byte) ([]byte, error) { return raw, nil }
func (passGate) Text(_ context.Context, _, s string) (string, error)          { return s, nil }

// TestGateRequired: the routes whose answers pass the gate are not served
// without one.
func TestGateRequired(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test"}, nil)
	for name, opts := range map[string]Options{
		"api":     {Server: srv, API: &fakeAPI{}},
		"metrics": {Server: srv, Metrics: metricsStub},
	} {
		if _, err := Handler(opts); err == nil || !strings.Contains(err.Error(), "Gate is required") {
			t.Errorf("%s without a gate: %v", name, err)
		}
	}
}
