package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/metrics"
	"github.com/codecell/codecell/internal/sandbox"
)

// scrape reads the server's /metrics answer with metrics.ParseText.
func scrape(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	s.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out, err := metrics.ParseText(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var metricsScripts = map[string]fakeRun{
	"ok":      {ms: 10, stdout: "a\n"},
	"calls":   {ms: 20, calls: []string{"fake.echo", "fake.echo"}},
	"value":   {ms: 30, errType: "ValueError"},
	"mixed":   {ms: 40, errType: "ValueError", calls: []string{"fake.fail", "fake.echo"}},
	"timeout": {ms: 1000, errType: "Timeout"},
	"pii":     {ms: 50, stdout: "mail ada@example.org and bob@example.com, call +1 415 555 0100\n"},
	"unknown": {ms: 5, calls: []string{"fake.nope", "nosuch.tool"}},
}

// TestMetricsMove makes known executions and checks every series by value,
// and that each execution logs exactly one line at info level.
func TestMetricsMove(t *testing.T) {
	var logs bytes.Buffer
	s, _, cs := statsServer(t, nil, metricsScripts, slog.New(slog.NewJSONHandler(&logs, nil)))

	before := scrape(t, s)
	if before[`codecell_executions_total{outcome="ok"}`] != 0 || before["codecell_execution_duration_seconds_count"] != 0 {
		t.Fatalf("a new server has counts: %v", before)
	}
	logs.Reset()
	var kept, returned, saved int64
	runs := []string{"ok", "ok", "value", "calls", "mixed", "timeout", "pii", "unknown"}
	for _, code := range runs {
		res := runTool(t, cs, "execute_code", map[string]any{"code": code})
		var out ExecuteCodeOutput
		structured(t, res, &out)
		// The answer shows context_savings only after tool calls; the
		// bytes returned are counted as the code printed them, before the
		// gate.
		cs := ContextSavings{ReturnedBytes: int64(len(metricsScripts[code].stdout))}
		if out.ContextSavings != nil {
			cs = *out.ContextSavings
		}
		kept += cs.ToolResultBytes
		returned += cs.ReturnedBytes
		saved += max(0, cs.ToolResultBytes-cs.ReturnedBytes)
	}
	got := scrape(t, s)
	want := map[string]float64{
		`codecell_executions_total{outcome="ok"}`:                              5,
		`codecell_executions_total{outcome="ValueError"}`:                      2,
		`codecell_executions_total{outcome="Timeout"}`:                         1,
		"codecell_execution_duration_seconds_count":                            8,
		"codecell_execution_duration_seconds_sum":                              (10 + 10 + 30 + 20 + 40 + 1000 + 50 + 5) / 1000.0,
		`codecell_tool_calls_total{outcome="ok",server="fake",tool="echo"}`:    3,
		`codecell_tool_calls_total{outcome="error",server="fake",tool="fail"}`: 1,
		`codecell_tool_calls_total{outcome="unknown_tool",server="",tool=""}`:  2,
		`codecell_pii_tokens_total{kind="EMAIL"}`:                              2,
		`codecell_pii_tokens_total{kind="PHONE"}`:                              1,
		"codecell_tool_result_bytes_total":                                     float64(kept),
		"codecell_returned_bytes_total":                                        float64(returned),
		"codecell_context_bytes_saved_total":                                   float64(saved),
		`codecell_pool_sandboxes{state="idle"}`:                                3,
		`codecell_pool_sandboxes{state="starting"}`:                            1,
		`codecell_pool_sandboxes{state="busy"}`:                                0,
		`codecell_pool_sandboxes{state="unbound"}`:                             2,
		"codecell_pool_target_size":                                            4,
		`codecell_upstream_up{server="fake"}`:                                  1,
		`codecell_upstream_up{server="gone"}`:                                  0,
		`codecell_upstream_tools{server="fake"}`:                               2,
	}
	if kept != int64(3*len("a reply of some length")+len("no")) || saved == 0 {
		t.Fatalf("fixture: kept %d, saved %d", kept, saved)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "codecell_") {
			if _, ok := want[k]; !ok && !strings.HasPrefix(k, "codecell_upstream_tools") {
				t.Errorf("unexpected series %s = %v", k, got[k])
			}
		}
	}
	if got["process_resident_memory_bytes"] <= 0 || got["go_goroutines"] <= 0 {
		t.Errorf("runtime series missing: rss %v, goroutines %v", got["process_resident_memory_bytes"], got["go_goroutines"])
	}

	// One line per execution at info level, and nothing else at info.
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if rec["level"] == "INFO" {
			lines = append(lines, rec)
		}
	}
	if len(lines) != len(runs) {
		t.Fatalf("%d info lines for %d executions:\n%s", len(lines), len(runs), logs.String())
	}
	for i, rec := range lines {
		if rec["msg"] != "execution" || rec["namespace"] != DefaultNamespace || rec["isolation"] != "production" {
			t.Errorf("line %d: %v", i, rec)
		}
	}
	mixed, pii := lines[4], lines[6]
	if mixed["ok"] != false || mixed["error_type"] != "ValueError" || mixed["duration_ms"] != 40.0 || mixed["tool_calls"] != 2.0 || mixed["session_id"] != "" {
		t.Errorf("mixed: %v", mixed)
	}
	if pii["ok"] != true || pii["error_type"] != "" || pii["tool_calls"] != 0.0 {
		t.Errorf("pii: %v", pii)
	}
	if strings.Contains(logs.String(), "example.org") || strings.Contains(logs.String(), "mail ") {
		t.Errorf("the log holds output:\n%s", logs.String())
	}

	// sanitize_pii tokenizes for the model too, and counts.
	runTool(t, cs, "sanitize_pii", map[string]any{"text": "x@example.net"})
	if g := scrape(t, s)[`codecell_pii_tokens_total{kind="EMAIL"}`]; g != 3 {
		t.Errorf("after sanitize_pii EMAIL = %v, want 3", g)
	}
}

// TestToolCallOutcomes: each way a tool call ends has its outcome label.
func TestToolCallOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{&sandbox.CallError{Kind: "ToolError"}, "error"},
		{&sandbox.CallError{Kind: "PermissionError"}, "denied"},
		{&sandbox.CallError{Kind: "ValueError"}, "bad_arguments"},
		{&sandbox.CallError{Kind: "TimeoutError"}, "timeout"},
		{fmt.Errorf("wrapped: %w", &sandbox.CallError{Kind: "PermissionError"}), "denied"},
		{context.Canceled, "error"},
	} {
		if got := toolOutcome(tc.err); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestDeniedToolCallCounted: a call policy refuses counts as denied under
// the tool's names.
func TestDeniedToolCallCounted(t *testing.T) {
	cfg := allTools(config.Default())
	cfg.Policy.Deny = []string{"fake.fail"}
	s, _, cs := statsServer(t, cfg, metricsScripts, nil)
	runTool(t, cs, "execute_code", map[string]any{"code": "mixed"})
	got := scrape(t, s)
	if g := got[`codecell_tool_calls_total{outcome="denied",server="fake",tool="fail"}`]; g != 1 {
		t.Errorf("denied = %v, want 1; %v", g, got)
	}
	if g := got[`codecell_tool_calls_total{outcome="ok",server="fake",tool="echo"}`]; g != 1 {
		t.Errorf("echo ok = %v, want 1", g)
	}
}
