package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/httpapi/httpapitest"
	"github.com/codecell/codecell/internal/metrics"
	"github.com/codecell/codecell/internal/server"
)

// jsonLog collects a process's JSON log lines.
type jsonLog struct {
	mu    sync.Mutex
	lines []map[string]any
}

// add is startHTTP's onLine: a line that is not JSON is kept as not_json.
func (l *jsonLog) add(line string) {
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		rec = map[string]any{"not_json": line}
	}
	l.mu.Lock()
	l.lines = append(l.lines, rec)
	l.mu.Unlock()
}

func (l *jsonLog) snapshot() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]map[string]any(nil), l.lines...)
}

// scrapeMetrics reads /metrics with metrics.ParseText.
func scrapeMetrics(t *testing.T, base, token string) map[string]float64 {
	t.Helper()
	a := httpapitest.Do(t, "GET", base+"/metrics", map[string]string{"Authorization": "Bearer " + token})
	if a.Status != 200 {
		t.Fatalf("/metrics: %d %s", a.Status, a.Body)
	}
	out, err := metrics.ParseText(strings.NewReader(a.Body))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetricsAndRESTE2E runs known executions through /mcp under
// production isolation as two namespaces, then reads /metrics (values, not
// just names), the REST API and the JSON log.
func TestMetricsAndRESTE2E(t *testing.T) {
	requireProduction(t)
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"fake": map[string]any{"command": fakeUpstream(t)}},
		"sandbox":    map[string]any{"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "20s"},
		"http":       map[string]any{"tokens": map[string]string{tokenA: "team-a", tokenB: "team-b"}},
	})
	log := &jsonLog{}
	base := startHTTP(t, string(cfg), log.add, "--log-format", "json")
	ctx := context.Background()
	a, b := connectWithToken(t, base, tokenA), connectWithToken(t, base, tokenB)
	waitUpstream(ctx, a)

	startLog := len(log.snapshot())
	runs := []struct {
		code, errType string
	}{
		{code: "print('hello')"},
		{code: "raise ValueError('bad value')", errType: "ValueError"},
		{code: "from servers.fake import echo\necho(text='a')\necho(text='b')"},
		{code: "import servers\nfrom servers.fake import fail\ntry:\n    fail(text='no')\nexcept servers.ToolError:\n    pass"},
		{code: "print('mail ' + 'ada' + '@example.org')"},
	}
	for _, r := range runs {
		if _, out := call(t, a, map[string]any{"code": r.code}); out.OK != (r.errType == "") || (out.Error != nil && out.Error.Type != r.errType) {
			t.Fatalf("%q: %+v", r.code, out)
		}
	}
	if _, out := call(t, b, map[string]any{"code": "x = 1\nx", "session_id": "s1"}); !out.OK {
		t.Fatalf("team-b: %+v", out)
	}

	t.Run("metrics", func(t *testing.T) {
		got := scrapeMetrics(t, base, tokenB)
		for k, want := range map[string]float64{
			`codecell_executions_total{outcome="ok"}`:                              5,
			`codecell_executions_total{outcome="ValueError"}`:                      1,
			"codecell_execution_duration_seconds_count":                            6,
			`codecell_tool_calls_total{outcome="ok",server="fake",tool="echo"}`:    2,
			`codecell_tool_calls_total{outcome="error",server="fake",tool="fail"}`: 1,
			`codecell_pii_tokens_total{kind="EMAIL"}`:                              1,
			`codecell_upstream_up{server="fake"}`:                                  1,
			"codecell_pool_target_size":                                            1,
		} {
			if got[k] != want {
				t.Errorf("%s = %v, want %v", k, got[k], want)
			}
		}
		if got["codecell_tool_result_bytes_total"] < 2 || got["codecell_returned_bytes_total"] <= 0 {
			t.Errorf("bytes: %v kept, %v returned", got["codecell_tool_result_bytes_total"], got["codecell_returned_bytes_total"])
		}
		if rss := got["process_resident_memory_bytes"]; rss < 1<<20 || rss > 1<<30 {
			t.Errorf("process_resident_memory_bytes %v", rss)
		}
	})

	getJSON := func(t *testing.T, token, path string, v any) int {
		t.Helper()
		return httpapitest.GetJSON(t, base+path, token, v)
	}

	t.Run("executions", func(t *testing.T) {
		var page server.ExecutionsPage
		if code := getJSON(t, tokenA, "/api/v1/executions", &page); code != 200 || len(page.Executions) != len(runs) || page.NextBefore != nil {
			t.Fatalf("%d: %+v", code, page)
		}
		for i, e := range page.Executions {
			r := runs[len(runs)-1-i] // newest first
			if e.Code != r.code || e.ErrorType != r.errType || e.Isolation != "production" || e.CreatedAt.IsZero() {
				t.Errorf("entry %d: %+v, want the run %q", i, e, r.code)
			}
		}
		if e := page.Executions[0]; !regexp.MustCompile(`^mail \[EMAIL_[0-9a-f]{6,}\]\n$`).MatchString(e.Stdout) {
			t.Errorf("the email execution's stdout %q: personal data must stay tokenized", e.Stdout)
		}
		var calls []server.ToolCall
		if err := json.Unmarshal(page.Executions[2].ToolCalls, &calls); err != nil || len(calls) != 2 || calls[0].Name != "fake.echo" || !calls[0].OK {
			t.Errorf("tool calls %s", page.Executions[2].ToolCalls)
		}
		if e := page.Executions[3]; e.ErrorMessage != "bad value" {
			t.Errorf("error message %q", e.ErrorMessage)
		}

		// Pages of two, chained by next_before, give the same list.
		var paged []server.ExecutionEntry
		path := "/api/v1/executions?limit=2"
		for range 5 {
			var p server.ExecutionsPage
			getJSON(t, tokenA, path, &p)
			paged = append(paged, p.Executions...)
			if p.NextBefore == nil {
				break
			}
			path = fmt.Sprintf("/api/v1/executions?limit=2&before=%d", *p.NextBefore)
		}
		if !reflect.DeepEqual(paged, page.Executions) {
			t.Errorf("paged %d entries differ from the whole list", len(paged))
		}

		var bs server.ExecutionsPage
		getJSON(t, tokenB, "/api/v1/executions", &bs)
		if len(bs.Executions) != 1 || bs.Executions[0].SessionID != "s1" || bs.Executions[0].Result != 1.0 {
			t.Errorf("team-b sees %+v", bs)
		}
		for path, want := range map[string]int{
			"/api/v1/executions?limit=1000": 400, "/api/v1/executions?limit=two": 400,
		} {
			if code := getJSON(t, tokenA, path, nil); code != want {
				t.Errorf("%s: %d, want %d", path, code, want)
			}
		}
		if code := getJSON(t, "", "/api/v1/executions", nil); code != 401 {
			t.Errorf("no token: %d", code)
		}
		if code := getJSON(t, "token-c-0123456789abcdef", "/metrics", nil); code != 401 {
			t.Errorf("wrong token on /metrics: %d", code)
		}
		if a := httpapitest.Do(t, "GET", base+"/api/v1/executions", map[string]string{"Authorization": "Bearer " + tokenA,
			"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}); a.Status != 403 {
			t.Errorf("cross-origin: %d %s", a.Status, a.Body)
		}
	})

	t.Run("search, stats, upstreams, readyz", func(t *testing.T) {
		var search server.SearchToolsOutput
		if code := getJSON(t, tokenA, "/api/v1/tools/search?query=echo+text&limit=3", &search); code != 200 ||
			len(search.Tools) == 0 || search.Tools[0].Name != "fake.echo" {
			t.Errorf("search: %d %+v", code, search)
		}
		var stats server.ExecutionStatsOutput
		getJSON(t, tokenA, "/api/v1/stats?since=1h", &stats)
		if stats.Total != 5 || stats.ErrorsByType["ValueError"] != 1 || stats.ToolCalls.Count != 3 || stats.Isolation != "production" {
			t.Errorf("stats: %+v", stats)
		}
		var ups server.UpstreamsList
		getJSON(t, tokenA, "/api/v1/upstreams", &ups)
		if len(ups.Upstreams) != 1 || ups.Upstreams[0].Name != "fake" || ups.Upstreams[0].State != "connected" {
			t.Errorf("upstreams: %+v", ups)
		}
		if code := getJSON(t, tokenA, "/readyz", nil); code != 200 {
			t.Errorf("readyz: %d", code)
		}
	})

	t.Run("log", func(t *testing.T) {
		// Each line is written before its result returns, but the reader
		// of the process's stderr may still be behind.
		lines := log.snapshot()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); lines = log.snapshot() {
			n := 0
			for _, rec := range lines[startLog:] {
				if rec["msg"] == "execution" {
					n++
				}
			}
			if n >= len(runs)+1 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		var execLines []map[string]any
		for _, rec := range lines[startLog:] {
			// The upstream's own line may come just after waitUpstream saw
			// it connected: its state is set before its tools are listed
			// and the line written.
			if rec["level"] != "INFO" || rec["msg"] == "upstream server connected" {
				continue
			}
			if rec["msg"] != "execution" {
				t.Errorf("an info line other than the execution's: %v", rec)
				continue
			}
			execLines = append(execLines, rec)
		}
		if len(execLines) != len(runs)+1 {
			t.Fatalf("%d execution lines for %d executions", len(execLines), len(runs)+1)
		}
		second, last := execLines[1], execLines[len(runs)]
		if second["namespace"] != "team-a" || second["ok"] != false || second["error_type"] != "ValueError" ||
			second["isolation"] != "production" || second["tool_calls"] != 0.0 {
			t.Errorf("second line: %v", second)
		}
		if execLines[2]["tool_calls"] != 2.0 {
			t.Errorf("third line: %v", execLines[2])
		}
		if last["namespace"] != "team-b" || last["session_id"] != "s1" || last["ok"] != true {
			t.Errorf("team-b's line: %v", last)
		}
		if d, ok := last["duration_ms"].(float64); !ok || d <= 0 {
			t.Errorf("duration_ms %v", last["duration_ms"])
		}
		for _, rec := range execLines {
			if b, _ := json.Marshal(rec); strings.Contains(string(b), "example.org") || strings.Contains(string(b), "print(") {
				t.Errorf("the log holds code or output: %s", b)
			}
		}
	})
}
