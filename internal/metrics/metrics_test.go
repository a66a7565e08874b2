package metrics

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestExecutionsAndDuration(t *testing.T) {
	m := New(Options{})
	m.Execution("", 3*time.Millisecond, 5000, 100)
	m.Execution("", 2*time.Second, 0, 10)
	m.Execution("ValueError", 40*time.Millisecond, 200, 300)
	m.Execution("Timeout", 150*time.Second, 0, 0)

	want := `
# HELP codecell_executions_total Executions by outcome: ok, or the error type.
# TYPE codecell_executions_total counter
codecell_executions_total{outcome="Timeout"} 1
codecell_executions_total{outcome="ValueError"} 1
codecell_executions_total{outcome="ok"} 2
# HELP codecell_tool_result_bytes_total Bytes of upstream tool results that code received in the sandbox.
# TYPE codecell_tool_result_bytes_total counter
codecell_tool_result_bytes_total 5200
# HELP codecell_returned_bytes_total Bytes executions returned to the model (output and result).
# TYPE codecell_returned_bytes_total counter
codecell_returned_bytes_total 410
# HELP codecell_context_bytes_saved_total Sum over executions of tool result bytes minus returned bytes, when positive: context kept out of the model.
# TYPE codecell_context_bytes_saved_total counter
codecell_context_bytes_saved_total 4900
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want),
		"codecell_executions_total", "codecell_tool_result_bytes_total", "codecell_returned_bytes_total",
		"codecell_context_bytes_saved_total"); err != nil {
		t.Error(err)
	}

	wantHist := `
# HELP codecell_execution_duration_seconds Wall-clock time of executions.
# TYPE codecell_execution_duration_seconds histogram
codecell_execution_duration_seconds_bucket{le="0.001"} 0
codecell_execution_duration_seconds_bucket{le="0.0025"} 0
codecell_execution_duration_seconds_bucket{le="0.005"} 1
codecell_execution_duration_seconds_bucket{le="0.01"} 1
codecell_execution_duration_seconds_bucket{le="0.025"} 1
codecell_execution_duration_seconds_bucket{le="0.05"} 2
codecell_execution_duration_seconds_bucket{le="0.1"} 2
codecell_execution_duration_seconds_bucket{le="0.25"} 2
codecell_execution_duration_seconds_bucket{le="0.5"} 2
codecell_execution_duration_seconds_bucket{le="1"} 2
codecell_execution_duration_seconds_bucket{le="2.5"} 3
codecell_execution_duration_seconds_bucket{le="5"} 3
codecell_execution_duration_seconds_bucket{le="10"} 3
codecell_execution_duration_seconds_bucket{le="30"} 3
codecell_execution_duration_seconds_bucket{le="60"} 3
codecell_execution_duration_seconds_bucket{le="120"} 3
codecell_execution_duration_seconds_bucket{le="+Inf"} 4
codecell_execution_duration_seconds_sum 152.043
codecell_execution_duration_seconds_count 4
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(wantHist), "codecell_execution_duration_seconds"); err != nil {
		t.Error(err)
	}
}

func TestOutcomesBounded(t *testing.T) {
	m := New(Options{})
	m.Execution("KeyError", time.Millisecond, 0, 0)
	for i := range 70 {
		m.Execution(fmt.Sprintf("Made%dError", i), time.Millisecond, 0, 0)
	}
	m.Execution("ada@example.org", time.Millisecond, 0, 0) // a class can be named anything
	m.Execution("KeyError", time.Millisecond, 0, 0)
	m.Execution("Timeout", time.Millisecond, 0, 0)
	m.Execution("", time.Millisecond, 0, 0)
	if got := testutil.CollectAndCount(m.executions); got != 4 {
		t.Errorf("%d outcome series, want 4 (KeyError, Timeout, other, ok)", got)
	}
	if got := testutil.ToFloat64(m.executions.WithLabelValues("KeyError")); got != 2 {
		t.Errorf("KeyError = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.executions.WithLabelValues("other")); got != 71 {
		t.Errorf("other = %v, want 71", got)
	}
}

func TestToolCallsAndPII(t *testing.T) {
	m := New(Options{})
	m.ToolCall("everything", "get-sum", ToolOK)
	m.ToolCall("everything", "get-sum", ToolOK)
	m.ToolCall("everything", "get-sum", ToolError)
	m.ToolCall("", "", ToolUnknown)
	m.PIITokens(map[string]int{"EMAIL": 2, "PHONE": 0})
	m.PIITokens(map[string]int{"EMAIL": 1, "IBAN": 1})
	m.PIITokens(nil)
	want := `
# HELP codecell_tool_calls_total Upstream tool calls made by code, by server, tool and outcome.
# TYPE codecell_tool_calls_total counter
codecell_tool_calls_total{outcome="error",server="everything",tool="get-sum"} 1
codecell_tool_calls_total{outcome="ok",server="everything",tool="get-sum"} 2
codecell_tool_calls_total{outcome="unknown_tool",server="",tool=""} 1
# HELP codecell_pii_tokens_total Personal data values replaced by tokens in what went to clients, by kind.
# TYPE codecell_pii_tokens_total counter
codecell_pii_tokens_total{kind="EMAIL"} 3
codecell_pii_tokens_total{kind="IBAN"} 1
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want),
		"codecell_tool_calls_total", "codecell_pii_tokens_total"); err != nil {
		t.Error(err)
	}
}

func TestScrapeTimeCollectors(t *testing.T) {
	pool := Pool{Size: 2, Idle: 1, Starting: 1}
	ups := []Upstream{{Name: "a", Up: true, Tools: 3}, {Name: "b"}, {Name: "a"}}
	m := New(Options{Pool: func() Pool { return pool }, Upstreams: func() []Upstream { return ups }})
	want := func(idle, busy int, bUp int) string {
		return fmt.Sprintf(`
# HELP codecell_pool_sandboxes Sandboxes of the warm pool by state: idle (ready for an execution), starting, busy, unbound (started for no namespace yet, ready or starting).
# TYPE codecell_pool_sandboxes gauge
codecell_pool_sandboxes{state="busy"} %d
codecell_pool_sandboxes{state="idle"} %d
codecell_pool_sandboxes{state="starting"} 1
codecell_pool_sandboxes{state="unbound"} 0
# HELP codecell_pool_target_size Idle sandboxes kept warm per workspace.
# TYPE codecell_pool_target_size gauge
codecell_pool_target_size 2
# HELP codecell_upstream_up 1 when the upstream MCP server is connected, else 0.
# TYPE codecell_upstream_up gauge
codecell_upstream_up{server="a"} 1
codecell_upstream_up{server="b"} %d
# HELP codecell_upstream_tools Tools the upstream MCP server offers.
# TYPE codecell_upstream_tools gauge
codecell_upstream_tools{server="a"} 3
codecell_upstream_tools{server="b"} 0
`, busy, idle, bUp)
	}
	names := []string{"codecell_pool_sandboxes", "codecell_pool_target_size", "codecell_upstream_up", "codecell_upstream_tools"}
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want(1, 0, 0)), names...); err != nil {
		t.Error(err)
	}
	// Read at scrape time: a change shows in the next scrape.
	pool.Idle, pool.Busy = 0, 1
	ups[1].Up = true
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want(0, 1, 1)), names...); err != nil {
		t.Error(err)
	}
}

func TestHandler(t *testing.T) {
	for _, runtime := range []bool{false, true} {
		t.Run(fmt.Sprint("runtime=", runtime), func(t *testing.T) {
			m := New(Options{Runtime: runtime})
			m.Execution("", time.Millisecond, 0, 0)
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
				t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			if !strings.Contains(string(body), `codecell_executions_total{outcome="ok"} 1`) {
				t.Errorf("no execution count in\n%s", body)
			}
			if got := strings.Contains(string(body), "process_resident_memory_bytes"); got != runtime {
				t.Errorf("process_resident_memory_bytes present = %v, want %v", got, runtime)
			}
		})
	}
}

func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	m.Execution("ValueError", time.Second, 1, 2)
	m.ToolCall("a", "b", ToolOK)
	m.PIITokens(map[string]int{"EMAIL": 1})
}

func TestLint(t *testing.T) {
	m := New(Options{Pool: func() Pool { return Pool{} }, Upstreams: func() []Upstream { return []Upstream{{Name: "x"}} }})
	m.Execution("", time.Millisecond, 0, 0)
	m.ToolCall("x", "y", ToolOK)
	m.PIITokens(map[string]int{"EMAIL": 1})
	problems, err := testutil.GatherAndLint(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestReplicaLabel: with a replica name every series carries it, so that
// replicas' series stay apart wherever they are gathered.
func TestReplicaLabel(t *testing.T) {
	m := New(Options{Replica: "r2", Pool: func() Pool { return Pool{Size: 1} }})
	m.Execution("", time.Millisecond, 10, 1)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{`codecell_executions_total{outcome="ok",replica="r2"} 1`, `replica="r2"`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "codecell_") && !strings.Contains(line, `replica="r2"`) {
			t.Errorf("series without the replica label: %s", line)
		}
	}
}
