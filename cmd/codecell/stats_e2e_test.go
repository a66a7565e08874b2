package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/store"
)

// TestExecutionStatsE2E makes known executions under production isolation,
// some failing and some calling a real upstream, and checks that
// get_execution_stats counts exactly those, and that the log and so the
// stats survive a restart on the same data dir.
func TestExecutionStatsE2E(t *testing.T) {
	requireProduction(t)
	cfg := fmt.Sprintf(`{"mcpServers": {"fake": {"command": %q}},
		"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "20s"}}`, fakeUpstream(t))
	cfgPath, dataDir := testDirs(t, cfg)
	connect := func() *mcp.ClientSession {
		t.Helper()
		cs := serveStdio(t, cfgPath, dataDir, nil)
		waitUpstream(context.Background(), cs)
		return cs
	}
	cs := connect()
	defer func() { cs.Close() }()

	runs := []struct {
		code    string
		timeout float64
		errType string // "" succeeds
		printed string // what the code prints, where the answer shows it tokenized
	}{
		{code: "print('hello')"},
		{code: "x = 6 * 7\nx"},
		{code: "raise ValueError('bad value')", errType: "ValueError"},
		{code: "{}['missing']", errType: "KeyError"},
		{code: "1 / 0", errType: "ZeroDivisionError"},
		{code: "while True: pass", timeout: 1, errType: "Timeout"},
		{code: "from servers.fake import echo\nresult = [echo(text=str(i)) for i in range(3)]"},
		{code: "import servers\nfrom servers.fake import fail, add_numbers\ntry:\n    fail(text='no')\nexcept servers.ToolError:\n    pass\nadd_numbers(a=1, b=2)"},
		{code: "from servers.fake import echo\necho(text='x' * 5000)\nraise ValueError('after a call')", errType: "ValueError"},
		{code: "print('write to ada@example.org')", printed: "write to ada@example.org\n"},
	}
	var ms []int64
	var kept, returned int64
	for _, r := range runs {
		args := map[string]any{"code": r.code}
		if r.timeout > 0 {
			args["timeout_seconds"] = r.timeout
		}
		_, out := call(t, cs, args)
		errType := ""
		if out.Error != nil {
			errType = out.Error.Type
		}
		if errType != r.errType || out.OK != (r.errType == "") {
			t.Fatalf("%q: ok=%v error %+v, want error type %q", r.code, out.OK, out.Error, r.errType)
		}
		// The log keeps whole milliseconds of the microseconds reported.
		ms = append(ms, int64(math.Round(out.DurationMS*1000))/1000)
		if out.ContextSavings != nil { // shown after tool calls only
			kept += out.ContextSavings.ToolResultBytes
			returned += out.ContextSavings.ReturnedBytes
		} else {
			// Counted as the code printed it, before the gate
			// tokenized it.
			stdout := out.Stdout
			if r.printed != "" {
				stdout = r.printed
			}
			returned += int64(len(stdout) + len(out.Stderr))
			if out.Result != nil {
				b, _ := json.Marshal(out.Result)
				returned += int64(len(b))
			}
		}
	}
	if kept < 5000 {
		t.Fatalf("tool results of %d bytes: the echo of 5000 should count", kept)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i] < ms[j] })
	rank := func(p int) int64 { return ms[(p*len(ms)+99)/100-1] }

	want := server.ExecutionStatsOutput{
		Total: 10, OK: 5, Failed: 5,
		ErrorsByType: map[string]int{"ValueError": 2, "KeyError": 1, "ZeroDivisionError": 1, "Timeout": 1},
		LatencyMS:    server.LatencyStats{P50: rank(50), P95: rank(95), P99: rank(99)},
		ToolCalls: server.ToolCallStats{Count: 6, Errors: 1, Top: []server.ToolUsage{
			{Name: "fake.echo", Count: 4}, {Name: "fake.add_numbers", Count: 1}, {Name: "fake.fail", Count: 1, Errors: 1}}},
		ContextSavings: server.ContextSavings{ToolResultBytes: kept, ReturnedBytes: returned},
		Isolation:      "production",
	}
	check := func(when string, cs *mcp.ClientSession) {
		t.Helper()
		var got server.ExecutionStatsOutput
		res, text := callToolInto(t, cs, "get_execution_stats", map[string]any{}, &got)
		if res.IsError {
			t.Fatalf("%s: get_execution_stats: %s", when, text)
		}
		if got.Pool == nil || got.Pool.Size != 1 {
			t.Errorf("%s: pool %+v, want size 1", when, got.Pool)
		}
		if len(got.Upstreams) != 1 || got.Upstreams[0].Name != "fake" || got.Upstreams[0].State != "connected" || got.Upstreams[0].ToolCount == 0 {
			t.Errorf("%s: upstreams %+v", when, got.Upstreams)
		}
		// The workspace against its quota: the default 1 GiB, enforced by
		// the kernel where this host can mount images, else watched.
		if w := got.Workspace; w == nil || w.Quota != 1<<30 || w.MaxEntries != 250000 || w.Bytes < 0 || w.Bytes > w.Quota ||
			(w.Enforcement != "kernel" && w.Enforcement != "watcher") || !strings.Contains(text, "workspace: ") {
			t.Errorf("%s: workspace %+v", when, got.Workspace)
		}
		got.Pool, got.Upstreams, got.Workspace = nil, nil, nil // live state, not the log's
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stats\n got %+v\nwant %+v", when, got, want)
		}
		if !strings.Contains(text, "executions since the log began: 10 (5 ok, 5 failed)") || !strings.Contains(text, "fake.echo: 4 (0 failed)") {
			t.Errorf("%s: text:\n%s", when, text)
		}
	}
	check("first run", cs)

	cs.Close() // stops the server: CommandTransport closes its stdin and waits
	cs = connect()
	check("after a restart", cs)
	cs.Close()

	// The log itself, read with the server stopped: every execution, and
	// nothing the model did not see.
	db, err := store.Open(filepath.Join(dataDir, "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log, err := db.ListExecutions(context.Background(), server.DefaultNamespace, 0, 0)
	if err != nil || len(log) != len(runs) {
		t.Fatalf("%d log entries, %v", len(log), err)
	}
	tokenized := regexp.MustCompile(`\[EMAIL_[0-9a-f]{6,}\]`)
	for i, e := range log {
		r := runs[len(runs)-1-i]
		code := tokenized.ReplaceAllString(e.Code, "ada@example.org") // the log keeps code tokenized too
		if code != r.code || e.ErrorType != r.errType || e.Isolation != "production" {
			t.Errorf("entry %d: %+v, want %q", i, e, r.code)
		}
	}
	if pii := log[0]; !regexp.MustCompile(`^write to \[EMAIL_[0-9a-f]{6,}\]\n$`).MatchString(pii.StdoutExcerpt) || strings.Contains(pii.Code, "ada@") {
		t.Errorf("the log holds %q (code %q); it must hold what the model saw", pii.StdoutExcerpt, pii.Code)
	}
}
