package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGateDataPaths follows personal data through the real sandbox to the
// client (issue 13): output cut at the output limit, a numeric result, an
// exception class named after an address, a value printed in two parts
// while progress is reported. The server-side tests (internal/server,
// datapath_test.go) follow the other paths.
func TestGateDataPaths(t *testing.T) {
	requireProduction(t)
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "output": "1KiB", "timeout": "60s"},
		"toolsets": ["exec", "stats"]}`)
	var mu sync.Mutex
	var notes []string
	cs := serveStdio(t, cfgPath, dataDir, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			notes = append(notes, req.Params.Message)
			mu.Unlock()
		},
	})
	defer cs.Close()
	seen := func(res *mcp.CallToolResult) string {
		b, _ := json.Marshal(res)
		return string(b)
	}
	noneOf := func(where, text string, raw ...string) {
		t.Helper()
		for _, r := range raw {
			if strings.Contains(text, r) {
				t.Errorf("%s holds %q:\n%.2000s", where, r, text)
			}
		}
	}

	// The value at the cut is cut out whole, not shown in part.
	res, out := call(t, cs, map[string]any{"code": "print('x' * 1010 + ' dave.trunc@example.org ' + 'y' * 100)"})
	if !out.Truncated.Stdout {
		t.Fatalf("not truncated: %+v", out)
	}
	noneOf("output cut at the limit", seen(res), "dave.trunc", "example.o")

	res, _ = call(t, cs, map[string]any{"code": "result = 4111111111111111"})
	noneOf("a numeric result", seen(res), "4111111111111111")

	res, out = call(t, cs, map[string]any{"code": `raise type("ada@example.org", (Exception,), {})("raised")`})
	if out.OK || out.Error == nil {
		t.Fatalf("no error: %+v", out)
	}
	noneOf("an exception named after an address", seen(res), "ada@example.org")
	stats, _ := callToolInto(t, cs, "get_execution_stats", nil, nil)
	noneOf("get_execution_stats", seen(stats), "ada@example.org")

	params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
		"code": "import sys, time\nsys.stdout.write('card 4111 1111'); sys.stdout.flush(); time.sleep(1.6)\nprint(' 1111 1111', flush=True); time.sleep(1.6)"}}
	params.SetProgressToken("p")
	if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	mu.Lock()
	all := strings.Join(notes, "\n")
	mu.Unlock()
	if len(notes) == 0 {
		t.Fatal("no progress notifications")
	}
	noneOf("progress notifications", all, "4111", "1111 1111")
}
