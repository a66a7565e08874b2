package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPIIDataPath: personal data read from a real upstream reaches the model
// only as tokens, and a token the model writes into code reaches the
// upstream as the original value, checked in the upstream's own storage.
func TestPIIDataPath(t *testing.T) {
	requireProduction(t)
	memEntry := npmServer(t, "server-memory")
	memFile := filepath.Join(t.TempDir(), "memory.jsonl")
	seed := `{"type":"entity","name":"Ada","entityType":"person","observations":["email ada.lovelace@example.org","phone +1 415 555 2671"]}
{"type":"entity","name":"Bob","entityType":"person","observations":["prefers mail"]}
`
	if err := os.WriteFile(memFile, []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"mcpServers": {"memory": {"command": "node", "args": [%q], "env": {"MEMORY_FILE_PATH": %q}}},
		"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1},
		"pii": {"allowRestore": true}}`, memEntry, memFile)
	cfgPath, dataDir := testDirs(t, cfg)
	connect := func() *mcp.ClientSession {
		cs := serveStdio(t, cfgPath, dataDir, nil)
		waitUpstream(context.Background(), cs)
		return cs
	}
	cs := connect()
	defer func() { cs.Close() }()

	read := "from servers.memory import read_graph\nfor e in read_graph()['entities']:\n    print(e['name'], e['observations'])\nresult = read_graph()['entities'][0]['observations']"
	res, out := call(t, cs, map[string]any{"code": read})
	if !out.OK {
		t.Fatalf("read: %+v", out.Error)
	}
	model := out.Stdout + fmt.Sprint(out.Result) + textOf(res)
	for _, raw := range []string{"ada.lovelace@example.org", "415 555 2671"} {
		if strings.Contains(model, raw) {
			t.Fatalf("the model saw %q:\n%s", raw, model)
		}
	}
	email := regexp.MustCompile(`\[EMAIL_[0-9a-f]{6,}\]`).FindString(out.Stdout)
	phone := regexp.MustCompile(`\[PHONE_[0-9a-f]{6,}\]`).FindString(out.Stdout)
	if email == "" || phone == "" {
		t.Fatalf("no tokens in the output:\n%s", out.Stdout)
	}

	// The model writes the token into code; the upstream gets the value.
	write := fmt.Sprintf("from servers.memory import add_observations\nadd_observations(observations=[{'entityName': 'Bob', 'contents': ['reach Ada at %s']}])\nprint('done')", email)
	if _, out := call(t, cs, map[string]any{"code": write}); !out.OK || out.Stdout != "done\n" {
		t.Fatalf("write: %+v %q", out.Error, out.Stdout)
	}
	stored, err := os.ReadFile(memFile)
	if err != nil || !strings.Contains(string(stored), "reach Ada at ada.lovelace@example.org") {
		t.Fatalf("the upstream did not receive the original value:\n%s", stored)
	}

	// Same value, same token: in a later execution, and after a restart.
	if _, again := call(t, cs, map[string]any{"code": read}); !strings.Contains(again.Stdout, email) || !strings.Contains(again.Stdout, phone) {
		t.Fatalf("tokens changed between executions:\n%s", again.Stdout)
	}
	cs.Close()
	cs = connect()
	if _, again := call(t, cs, map[string]any{"code": read}); !strings.Contains(again.Stdout, email) || !strings.Contains(again.Stdout, phone) {
		t.Fatalf("tokens changed across a restart (%s, %s):\n%s", email, phone, again.Stdout)
	}

	// sanitize_pii and restore_pii use the same vault.
	res, san := callTool(t, cs, "sanitize_pii", map[string]any{"text": "write to ada.lovelace@example.org, card 4111 1111 1111 1111"})
	text, _ := san["text"].(string)
	if res.IsError || !strings.Contains(text, email) || strings.Contains(text, "4111") || strings.Contains(text, "ada.lovelace") {
		t.Fatalf("sanitize_pii: %v", san)
	}
	res, back := callTool(t, cs, "restore_pii", map[string]any{"text": text + " [EMAIL_abcdef]"})
	if res.IsError || back["text"] != "write to ada.lovelace@example.org, card 4111 1111 1111 1111 [EMAIL_abcdef]" {
		t.Fatalf("restore_pii: %v", back)
	}
}

// waitUpstream waits until no upstream is still starting.
func waitUpstream(ctx context.Context, cs *mcp.ClientSession) {
	for i := 0; i < 300; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_tool_categories", Arguments: map[string]any{}})
		if err == nil && !strings.Contains(textOf(res), "starting") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
