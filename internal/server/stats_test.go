package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/skills"
	"github.com/codecell/codecell/internal/store"
	"github.com/codecell/codecell/internal/upstream"
)

// fakeRun is what scripted does for one code string.
type fakeRun struct {
	ms      int      // the execution's duration
	errType string   // "" succeeds
	stdout  string   // printed
	calls   []string // tools called through the request's handler, as server.tool
}

// scripted runs each code string as its script says, making the script's
// tool calls through the same handler the sandbox uses.
func scripted(scripts map[string]fakeRun) execFunc {
	return func(ctx context.Context, req sandbox.Request) *sandbox.Result {
		run, ok := scripts[req.Code]
		if !ok {
			return &sandbox.Result{Error: &sandbox.ExecError{Type: sandbox.ErrSandbox, Message: "no script for " + req.Code}}
		}
		for _, c := range run.calls {
			srv, tool, _ := strings.Cut(c, ".")
			params, _ := json.Marshal(map[string]any{"server": srv, "tool": tool, "arguments": map[string]any{"text": "hi"}})
			req.Calls.HandleCall(ctx, "tool", params) // a failing call is recorded; the script goes on
		}
		res := &sandbox.Result{OK: run.errType == "", Stdout: run.stdout, Duration: time.Duration(run.ms) * time.Millisecond}
		if run.errType != "" {
			res.Error = &sandbox.ExecError{Type: run.errType, Message: "boom"}
			if run.errType != "Timeout" {
				res.Error.Traceback = "Traceback (most recent call last):\n  File \"<cell>\", line 1, in <module>\n" + run.errType + ": boom\n"
			}
		}
		return res
	}
}

// pooledExec is an execFunc that reports a pool, as *sandbox.Manager does.
type pooledExec struct{ execFunc }

func (pooledExec) PoolStats() sandbox.PoolStats {
	return sandbox.PoolStats{Size: 4, Idle: 3, Starting: 1, Busy: 0, Unbound: 2}
}

// fakeUpstreams has one server, "fake", with a tool that answers and one
// that fails.
type fakeUpstreams struct{}

func (fakeUpstreams) Call(_ context.Context, server, tool string, _ json.RawMessage) (*mcp.CallToolResult, error) {
	switch tool {
	case "echo":
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a reply of some length"}}}, nil
	case "fail":
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
	}
	return nil, upstream.ErrUnknownServer
}
func (fakeUpstreams) Tools() []catalog.Tool {
	return []catalog.Tool{{Server: "fake", Name: "echo"}, {Server: "fake", Name: "fail"}}
}
func (fakeUpstreams) Statuses() []upstream.Status {
	return []upstream.Status{{Name: "fake", State: upstream.Connected, Tools: 2}, {Name: "gone", State: upstream.Failed, Error: "exit status 1"}}
}
func (fakeUpstreams) Wait(_ context.Context, server string) error {
	if server == "fake" {
		return nil
	}
	return fmt.Errorf("%w: %s failed (exit status 1)", upstream.ErrUnavailable, server)
}

// statsServer is a server with cfg (nil for allTools(config.Default())), a store, skills,
// the scripts as its (pooled) sandbox and the fake upstreams, and a client connected to it.
func statsServer(t *testing.T, cfg *config.Config, scripts map[string]fakeRun, log *slog.Logger) (*Server, *store.Store, *mcp.ClientSession) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sk, err := skills.New(skills.Options{Store: st, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, cs := newTestServer(t, func(o *Options) {
		if cfg != nil {
			o.Config = cfg
		}
		o.Executor, o.Upstreams = pooledExec{scripted(scripts)}, fakeUpstreams{}
		o.Store, o.Skills, o.Logger = st, sk, log
	})
	return s, st, cs
}

func runTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return res
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var statsScripts = map[string]fakeRun{
	"ok":      {ms: 10, stdout: "a\n"},
	"calls":   {ms: 20, calls: []string{"fake.echo", "fake.echo"}},
	"value":   {ms: 30, errType: "ValueError"},
	"mixed":   {ms: 40, errType: "ValueError", calls: []string{"fake.fail", "fake.echo"}},
	"timeout": {ms: 1000, errType: "Timeout"},
	"pii":     {ms: 50, stdout: "mail ada@example.org\n"},
}

func TestExecutionStats(t *testing.T) {
	_, st, cs := statsServer(t, nil, statsScripts, nil)
	ctx := context.Background()
	var kept, returned int64
	for _, code := range []string{"ok", "calls", "value", "mixed", "timeout", "pii"} {
		res := runTool(t, cs, "execute_code", map[string]any{"code": code})
		var out ExecuteCodeOutput
		structured(t, res, &out)
		if want := statsScripts[code].errType == ""; out.OK != want {
			t.Fatalf("%s: ok %v: %+v", code, out.OK, out)
		}
		if out.ContextSavings != nil {
			kept += out.ContextSavings.ToolResultBytes
			returned += out.ContextSavings.ReturnedBytes
		} else {
			// Counted as the code printed it, before the gate.
			returned += int64(len(statsScripts[code].stdout))
		}
	}
	if kept == 0 || returned == 0 {
		t.Fatalf("savings %d/%d: the fixture should have both", kept, returned)
	}
	// Another namespace's executions are not counted.
	if _, err := st.RecordExecution(ctx, store.Execution{Namespace: "other", ErrorType: "KeyError", ToolCalls: json.RawMessage(`[{"name":"fake.echo","ok":true}]`)}); err != nil {
		t.Fatal(err)
	}

	res := runTool(t, cs, "get_execution_stats", map[string]any{})
	if res.IsError {
		t.Fatalf("get_execution_stats: %s", textOf(res))
	}
	var got ExecutionStatsOutput
	structured(t, res, &got)
	// Durations 10 20 30 40 50 1000: nearest rank p50 is the 3rd, p95
	// and p99 the 6th.
	want := ExecutionStatsOutput{
		Total: 6, OK: 3, Failed: 3,
		ErrorsByType: map[string]int{"ValueError": 2, "Timeout": 1},
		LatencyMS:    LatencyStats{P50: 30, P95: 1000, P99: 1000},
		ToolCalls: ToolCallStats{Count: 4, Errors: 1, Top: []ToolUsage{
			{Name: "fake.echo", Count: 3}, {Name: "fake.fail", Count: 1, Errors: 1}}},
		ContextSavings: ContextSavings{ToolResultBytes: kept, ReturnedBytes: returned},
		Pool:           &PoolState{Size: 4, Idle: 3, Starting: 1},
		Isolation:      "production",
		Upstreams: []UpstreamState{{Name: "fake", State: "connected", ToolCount: 2},
			{Name: "gone", State: "failed", Error: "exit status 1"}},
	}
	// The fake executions write nothing: the workspace holds nothing.
	if w := got.Workspace; w == nil || w.Bytes != 0 || w.Entries != 0 || w.Quota != 1<<30 || w.MaxEntries != 250000 || w.Enforcement != "watcher" {
		t.Errorf("workspace %+v", got.Workspace)
	}
	got.Workspace = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stats\n got %+v\nwant %+v", got, want)
	}
	text := textOf(res)
	for _, line := range []string{
		"executions since the log began: 6 (3 ok, 3 failed)",
		"errors: ValueError 2, Timeout 1",
		"latency: p50 30 ms, p95 1000 ms, p99 1000 ms",
		"tool calls: 4 (1 failed)",
		"  fake.echo: 3 (0 failed)",
		fmt.Sprintf("context savings: %d bytes of tool results stayed in the sandbox, %d bytes returned", kept, returned),
		"pool: 3 idle, 1 starting, 0 busy (size 4 per workspace)",
		"isolation: production",
		"workspace: 0 bytes used of 1.00 GiB, 0 entries of 250000 (limits enforced by the watcher)",
		"upstream gone: failed, 0 tools (exit status 1)",
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}

	t.Run("since", func(t *testing.T) {
		for _, tc := range []struct {
			since string
			total int
		}{
			{"1h", 6},
			{time.Now().Add(-time.Hour).Format(time.RFC3339), 6},
			{time.Now().Add(time.Hour).Format(time.RFC3339Nano), 0},
		} {
			res := runTool(t, cs, "get_execution_stats", map[string]any{"since": tc.since})
			var got ExecutionStatsOutput
			structured(t, res, &got)
			if res.IsError || got.Total != tc.total || got.Since == "" {
				t.Errorf("since %s: %s", tc.since, textOf(res))
			}
		}
		res := runTool(t, cs, "get_execution_stats", map[string]any{"since": time.Now().Add(time.Hour).Format(time.RFC3339)})
		var none ExecutionStatsOutput
		structured(t, res, &none)
		if none.ErrorsByType == nil || none.ToolCalls.Top == nil || none.LatencyMS != (LatencyStats{}) {
			t.Errorf("empty period: %+v", none)
		}
		for _, bad := range []string{"yesterday", "-1h", "0s", "2026-13-01T00:00:00Z"} {
			res := runTool(t, cs, "get_execution_stats", map[string]any{"since": bad})
			if !res.IsError || !strings.Contains(textOf(res), "since") {
				t.Errorf("since %q: isError=%v %q, want a field error naming since", bad, res.IsError, textOf(res))
			}
		}
	})

	t.Run("log", func(t *testing.T) {
		log, err := st.ListExecutions(ctx, DefaultNamespace, 0, 0)
		if err != nil || len(log) != 6 {
			t.Fatalf("%d entries, %v", len(log), err)
		}
		pii, mixed := log[0], log[2]
		if pii.Code != "pii" || !emailLine.MatchString(pii.StdoutExcerpt) || pii.Duration != 50*time.Millisecond ||
			pii.Isolation != "production" || pii.ErrorType != "" {
			t.Errorf("the log holds %+v; personal data must be tokenized as for the model", pii)
		}
		var calls []ToolCall
		if err := json.Unmarshal(mixed.ToolCalls, &calls); err != nil || len(calls) != 2 ||
			calls[0].Name != "fake.fail" || calls[0].OK || calls[1].Name != "fake.echo" || !calls[1].OK {
			t.Errorf("tool calls of mixed: %s", mixed.ToolCalls)
		}
		if mixed.ErrorType != "ValueError" || mixed.ErrorMessage != "boom" || mixed.ToolResultBytes == 0 {
			t.Errorf("mixed: %+v", mixed)
		}
	})
}

// TestRecordFailureKeepsResult: when the log cannot be written the
// execution still returns its result, and the failure is logged.
func TestRecordFailureKeepsResult(t *testing.T) {
	var buf bytes.Buffer
	_, st, cs := statsServer(t, nil, statsScripts, slog.New(slog.NewTextHandler(&buf, nil)))
	st.Close()
	res := runTool(t, cs, "execute_code", map[string]any{"code": "ok"})
	if res.IsError || textOf(res) != "a\n" {
		t.Fatalf("isError=%v %q", res.IsError, textOf(res))
	}
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "execution log") {
		t.Errorf("no error logged:\n%s", buf.String())
	}
}

// TestStatsNeedStore: without a store there is no log, and no tool that
// would report zeros.
func TestStatsNeedStore(t *testing.T) {
	_, cs := newTestServer(t, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "get_execution_stats" {
			t.Fatal("get_execution_stats is listed without a store")
		}
	}
	if res := runTool(t, cs, "execute_code", map[string]any{"code": "1"}); res.IsError {
		t.Fatalf("execute_code without a store: %s", textOf(res))
	}
}

// emailLine is "mail " and an e-mail token, on a line.
var emailLine = regexp.MustCompile(`^mail \[EMAIL_[0-9a-f]{6,}\]\n$`)

func TestExcerpt(t *testing.T) {
	s := &Server{gate: offGate(t)} // the gate off: cuts at characters only
	excerpt := s.excerpt
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		// A cut splits no run of value characters (package textcut): a run
		// as long as the text is dropped whole.
		{"0123456789abc", 10, "\n[... 13 more bytes]"},
		{"01234 6789abc", 10, "01234 \n[... 7 more bytes]"},
		{"aaaa aaaaé", 10, "aaaa \n[... 6 more bytes]"}, // é is a letter: its run is not split
		{"", 10, ""},
	} {
		if got := excerpt(tc.in, tc.max); got != tc.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	// A large output is kept to its bound in the log.
	if got := excerpt(strings.Repeat("x", 1<<20), logExcerpt); len(got) > logExcerpt+40 {
		t.Errorf("excerpt of 1 MiB is %d bytes", len(got))
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"  ", time.Time{}, false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"2026-01-02T03:04:05Z", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), false},
		{"2026-01-02T03:04:05.5+01:00", time.Date(2026, 1, 2, 2, 4, 5, 5e8, time.UTC), false},
		{"1d", time.Time{}, true},
		{"-5m", time.Time{}, true},
		{"2026-01-02", time.Time{}, true},
	} {
		got, err := parseSince(tc.in, now)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("parseSince(%q) = %v, %v", tc.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "since") {
			t.Errorf("parseSince(%q): %v does not name the field", tc.in, err)
		}
	}
}
