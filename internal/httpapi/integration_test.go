package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/httpapi"
	"github.com/codecell/codecell/internal/httpapi/httpapitest"
	"github.com/codecell/codecell/internal/metrics"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/store"
	"github.com/codecell/codecell/internal/upstream"
)

// lineExecutor runs a tiny language instead of Python, one statement per
// line: "print TEXT", "call SERVER.TOOL" (through the host, as the
// sandbox's generated code does), "raise TYPE", "sleep MS".
type lineExecutor struct{}

func (lineExecutor) Exec(ctx context.Context, req sandbox.Request) *sandbox.Result {
	res := &sandbox.Result{OK: true, Isolation: sandbox.Production}
	for _, line := range strings.Split(req.Code, "\n") {
		op, arg, _ := strings.Cut(line, " ")
		switch op {
		case "print":
			res.Stdout += arg + "\n"
		case "call":
			srv, tool, _ := strings.Cut(arg, ".")
			params, _ := json.Marshal(map[string]any{"server": srv, "tool": tool, "arguments": map[string]any{}})
			req.Calls.HandleCall(ctx, "tool", params)
		case "raise":
			res.OK, res.Error = false, &sandbox.ExecError{Type: arg, Message: "raised"}
		case "sleep":
			var ms int
			fmt.Sscan(arg, &ms)
			res.Duration += time.Duration(ms) * time.Millisecond
		}
	}
	return res
}
func (lineExecutor) Level() sandbox.Level { return sandbox.Production }

// oneUpstream is a server "docs" with a tool "get-page" that answers.
type oneUpstream struct{}

func (oneUpstream) Call(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("page ", 200)}}}, nil
}
func (oneUpstream) Tools() []catalog.Tool {
	return []catalog.Tool{{Server: "docs", Name: "get-page", Description: "Fetch one page of the documentation."}}
}
func (oneUpstream) Statuses() []upstream.Status {
	return []upstream.Status{{Name: "docs", State: upstream.Connected, Tools: 1}}
}
func (oneUpstream) Wait(context.Context, string) error { return nil }

// TestOverHTTP runs known executions through /mcp as two namespaces and
// reads them back through /metrics and the REST API.
func TestOverHTTP(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := server.New(server.Options{Config: config.Default(), Executor: lineExecutor{}, Upstreams: oneUpstream{},
		Store: st, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{"tok-alice": "alice", "tok-bob": "bob"}
	h, err := httpapi.Handler(httpapi.Options{Server: srv.MCP(), Tokens: tokens, API: srv.API(), Metrics: srv.MetricsHandler(), Gate: srv.Gate()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close) // after the clients' Cleanup: their open streams would hold Close
	ctx := context.Background()
	connect := func(token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: ts.URL + "/mcp", HTTPClient: httpapitest.BearerClient(token)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := connect("tok-alice"), connect("tok-bob")
	run := func(cs *mcp.ClientSession, code string) {
		t.Helper()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code}}); err != nil {
			t.Fatal(err)
		}
	}
	run(alice, "print one\nsleep 3")
	run(alice, "call docs.get-page\ncall docs.get-page\nprint summary\nsleep 20")
	run(alice, "print mail ada@example.org\nraise ValueError\nsleep 400")
	run(bob, "print bob's\ncall docs.nope\nsleep 2")

	getJSON := func(token, path string, v any) int {
		t.Helper()
		return httpapitest.GetJSON(t, ts.URL+path, token, v)
	}

	t.Run("metrics", func(t *testing.T) {
		a := httpapitest.Do(t, "GET", ts.URL+"/metrics", map[string]string{"Authorization": "Bearer tok-bob"})
		if a.Status != 200 {
			t.Fatalf("/metrics: %d %s", a.Status, a.Body)
		}
		got, err := metrics.ParseText(strings.NewReader(a.Body))
		if err != nil {
			t.Fatal(err)
		}
		// Process-wide: both namespaces' executions count.
		for series, want := range map[string]float64{
			`codecell_executions_total{outcome="ok"}`:                               3,
			`codecell_executions_total{outcome="ValueError"}`:                       1,
			"codecell_execution_duration_seconds_count":                             4,
			`codecell_tool_calls_total{outcome="ok",server="docs",tool="get_page"}`: 2,
			`codecell_tool_calls_total{outcome="unknown_tool",server="",tool=""}`:   1,
			`codecell_pii_tokens_total{kind="EMAIL"}`:                               1,
			"codecell_tool_result_bytes_total":                                      2000,
			`codecell_upstream_up{server="docs"}`:                                   1,
		} {
			if v, ok := got[series]; !ok || v != want {
				t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
			}
		}
		if sum := got["codecell_execution_duration_seconds_sum"]; math.Abs(sum-0.425) > 1e-9 {
			t.Errorf("duration sum %v, want 0.425", sum)
		}
	})

	t.Run("executions", func(t *testing.T) {
		var page server.ExecutionsPage
		if code := getJSON("tok-alice", "/api/v1/executions", &page); code != 200 || len(page.Executions) != 3 || page.NextBefore != nil {
			t.Fatalf("%d %+v", code, page)
		}
		first := page.Executions[0]
		if !strings.HasPrefix(first.Code, "print mail [EMAIL_") || !regexp.MustCompile(`^mail \[EMAIL_[0-9a-f]{6,}\]\n$`).MatchString(first.Stdout) || first.ErrorType != "ValueError" ||
			first.DurationMS != 400 {
			t.Errorf("newest: %+v", first)
		}
		if page.Executions[1].ID >= first.ID || page.Executions[2].ID >= page.Executions[1].ID {
			t.Errorf("not newest first: %+v", page.Executions)
		}
		var one server.ExecutionsPage
		getJSON("tok-alice", "/api/v1/executions?limit=1", &one)
		if len(one.Executions) != 1 || one.NextBefore == nil || *one.NextBefore != first.ID {
			t.Fatalf("limit 1: %+v", one)
		}
		var rest server.ExecutionsPage
		getJSON("tok-alice", fmt.Sprintf("/api/v1/executions?before=%d", *one.NextBefore), &rest)
		if !reflect.DeepEqual(rest.Executions, page.Executions[1:]) {
			t.Errorf("before: %+v", rest)
		}
		// The largest page is allowed (one more is refused, below).
		var most server.ExecutionsPage
		if code := getJSON("tok-alice", fmt.Sprintf("/api/v1/executions?limit=%d", server.MaxExecutionsLimit), &most); code != 200 ||
			!reflect.DeepEqual(most, page) {
			t.Errorf("limit %d: %d %+v", server.MaxExecutionsLimit, code, most)
		}
		var bobs server.ExecutionsPage
		getJSON("tok-bob", "/api/v1/executions", &bobs)
		if len(bobs.Executions) != 1 || bobs.Executions[0].Stdout != "bob's\n" {
			t.Errorf("bob sees %+v", bobs)
		}
		for _, bad := range []string{"limit=0x10", fmt.Sprintf("limit=%d", server.MaxExecutionsLimit+1), "limit=-1", "before=-1"} {
			if code := getJSON("tok-alice", "/api/v1/executions?"+bad, nil); code != 400 {
				t.Errorf("%s: %d, want 400", bad, code)
			}
		}
		for _, token := range []string{"", "tok-carol"} {
			if code := getJSON(token, "/api/v1/executions", nil); code != 401 {
				t.Errorf("token %q: %d, want 401", token, code)
			}
		}
		if a := httpapitest.Do(t, "GET", ts.URL+"/api/v1/executions", map[string]string{"Authorization": "Bearer tok-alice",
			"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}); a.Status != 403 {
			t.Errorf("cross-origin: %d", a.Status)
		}
	})

	t.Run("search", func(t *testing.T) {
		var rest server.SearchToolsOutput
		if code := getJSON("tok-bob", "/api/v1/tools/search?query=documentation+page&detail_level=full", &rest); code != 200 {
			t.Fatal(code)
		}
		res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "documentation page", "detail_level": "full"}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var tool server.SearchToolsOutput
		json.Unmarshal(b, &tool)
		if rest.Total < 1 || rest.Tools[0].Name != "docs.get_page" || !reflect.DeepEqual(rest, tool) {
			t.Errorf("REST %+v\ntool %+v", rest, tool)
		}
		if code := getJSON("tok-bob", "/api/v1/tools/search?detail_level=most", nil); code != 400 {
			t.Errorf("bad detail_level: %d", code)
		}
	})

	t.Run("stats", func(t *testing.T) {
		var stats server.ExecutionStatsOutput
		getJSON("tok-alice", "/api/v1/stats", &stats)
		if stats.Total != 3 || stats.ErrorsByType["ValueError"] != 1 || stats.ToolCalls.Count != 2 {
			t.Errorf("%+v", stats)
		}
		if code := getJSON("tok-alice", "/api/v1/stats?since=yesterday", nil); code != 400 {
			t.Errorf("bad since: %d", code)
		}
		var ups server.UpstreamsList
		getJSON("tok-alice", "/api/v1/upstreams", &ups)
		if len(ups.Upstreams) != 1 || ups.Upstreams[0].State != "connected" {
			t.Errorf("%+v", ups)
		}
		if code := getJSON("tok-alice", "/readyz", nil); code != 200 {
			t.Errorf("readyz: %d", code)
		}
	})

	// Last, as it closes the database under the server: what the store
	// fails to answer is a 500 that keeps the details for the log, and
	// /readyz says 503.
	t.Run("store failure", func(t *testing.T) {
		st.Close()
		alice := map[string]string{"Authorization": "Bearer tok-alice"}
		for _, path := range []string{"/api/v1/executions", "/api/v1/stats"} {
			if a := httpapitest.Do(t, "GET", ts.URL+path, alice); a.Status != 500 || strings.Contains(a.Body, "closed") {
				t.Errorf("%s: %d %s, want 500 without the details", path, a.Status, a.Body)
			}
		}
		if a := httpapitest.Do(t, "GET", ts.URL+"/readyz", alice); a.Status != 503 || !strings.HasPrefix(a.Body, "not ready: database: ") {
			t.Errorf("readyz: %d %q, want 503 naming the database", a.Status, a.Body)
		}
	})
}
