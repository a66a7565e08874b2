package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/httpapi/httpapitest"
)

// connectWithToken connects with a bearer token, in the protocol
// generation the options pin (nil: the newest both sides speak).
func connectWithToken(t *testing.T, base, token string, opts ...*mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	var o *mcp.ClientSessionOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp",
		HTTPClient: httpapitest.BearerClient(token),
	}, o)
	if err != nil {
		t.Fatal(err)
	}
	listTools(t, cs)
	t.Cleanup(func() { cs.Close() })
	return cs
}

const (
	tokenA = "token-a-0123456789abcdef"
	tokenB = "token-b-0123456789abcdef"
)

// TestNamespacesOverHTTP: two bearer tokens are two namespaces. Neither sees
// the other's files, skills, sessions or log, even by guessing names, ids
// or paths; a missing or wrong token gets 401 everywhere but /healthz.
func TestNamespacesOverHTTP(t *testing.T) {
	requireProduction(t)
	base := startHTTP(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "20s"},
		"http": {"tokens": {"`+tokenA+`": "team-a", "`+tokenB+`": "team-b"}}}`, nil)

	// Authentication.
	for _, tc := range []struct{ name, auth string }{
		{"missing", ""}, {"wrong", "Bearer token-c-0123456789abcdef"}, {"not bearer", "Basic " + tokenA},
		{"prefix of a real one", "Bearer " + tokenA[:10]},
	} {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s token: %s, want 401", tc.name, resp.Status)
		}
	}
	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz without a token: %v %v", resp, err)
	}

	a := connectWithToken(t, base, tokenA)
	b := connectWithToken(t, base, tokenB)
	ok := func(cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
		t.Helper()
		res, out := callTool(t, cs, tool, args)
		if res.IsError {
			t.Fatalf("%s: %s", tool, textOf(res))
		}
		return out
	}
	exec := func(cs *mcp.ClientSession, code string, session string) (bool, any, string) {
		t.Helper()
		args := map[string]any{"code": code}
		if session != "" {
			args["session_id"] = session
		}
		_, out := call(t, cs, args)
		msg := ""
		if out.Error != nil {
			msg = out.Error.Type + ": " + out.Error.Message
		}
		return out.OK, out.Result, msg
	}

	// Files.
	ok(a, "write_workspace_file", map[string]any{"path": "secret.txt", "content": "a's secret"})
	if okA, r, msg := exec(a, "open('secret.txt').read()", ""); !okA || r != "a's secret" {
		t.Fatalf("a reads its file: %v %v", r, msg)
	}
	if res, _ := callTool(t, b, "read_workspace_file", map[string]any{"path": "secret.txt"}); !res.IsError {
		t.Errorf("b read a's file: %s", textOf(res))
	}
	for _, p := range []string{"../team-a/secret.txt", "/workspace/../team-a/secret.txt"} {
		if res, _ := callTool(t, b, "read_workspace_file", map[string]any{"path": p}); !res.IsError || strings.Contains(textOf(res), "a's secret") {
			t.Errorf("b read %s: %s", p, textOf(res))
		}
	}
	code := `import os, glob
found = []
for p in ['secret.txt', '../team-a/secret.txt', '/workspace/../team-a/secret.txt'] + glob.glob('/*/secret.txt') + glob.glob('/*/*/secret.txt') + glob.glob('/codecell/**/secret.txt', recursive=True):
    try:
        found.append(open(p).read())
    except OSError:
        pass
found`
	if okB, r, msg := exec(b, code, ""); !okB || len(r.([]any)) != 0 {
		t.Errorf("b's code found a's file: %v %v", r, msg)
	}
	if out := ok(b, "list_workspace_files", map[string]any{}); strings.Contains(toJSON(out), "secret") {
		t.Errorf("b lists a's file: %v", out)
	}
	// Resources are per namespace too.
	ctx := context.Background()
	if r, err := a.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///workspace/secret.txt"}); err != nil || r.Contents[0].Text != "a's secret" {
		t.Errorf("a reads its resource: %+v %v", r, err)
	}
	if res, err := b.ListResources(ctx, nil); err != nil || strings.Contains(toJSON(res), "secret") {
		t.Errorf("b lists a's resources: %s %v", toJSON(res), err)
	}
	for _, uri := range []string{"file:///workspace/secret.txt", "file:///workspace/../team-a/secret.txt", "file:///workspace/%2E%2E/team-a/secret.txt"} {
		if r, err := b.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil || strings.Contains(toJSON(r), "a's secret") {
			t.Errorf("b read %s: %s", uri, toJSON(r))
		}
	}

	// Skills.
	ok(a, "save_skill", map[string]any{"name": "greet", "code": "def greet():\n    return 'hello from a'\n", "description": "a's skill"})
	if okA, r, msg := exec(a, "from skills.greet import greet\ngreet()", ""); !okA || r != "hello from a" {
		t.Fatalf("a imports its skill: %v %v", r, msg)
	}
	if out := ok(b, "list_skills", map[string]any{}); strings.Contains(toJSON(out), "greet") {
		t.Errorf("b lists a's skill: %v", out)
	}
	if res, _ := callTool(t, b, "load_skill", map[string]any{"name": "greet"}); !res.IsError {
		t.Errorf("b loaded a's skill: %s", textOf(res))
	}
	if okB, _, msg := exec(b, "from skills.greet import greet", ""); okB || !strings.Contains(msg, "ModuleNotFoundError") {
		t.Errorf("b imported a's skill: %v", msg)
	}
	if res, _ := callTool(t, b, "delete_skill", map[string]any{"name": "greet"}); !res.IsError {
		t.Errorf("b deleted a's skill: %s", textOf(res))
	}

	// Sessions: the same id is two sessions; b cannot see or close a's.
	if okA, _, msg := exec(a, "x = 'a state'", "s1"); !okA {
		t.Fatal(msg)
	}
	if okB, r, msg := exec(b, "globals().get('x')", "s1"); !okB || r != nil {
		t.Errorf("b's s1 sees a's globals: %v %v", r, msg)
	}
	if out := ok(b, "list_sessions", map[string]any{}); len(out["sessions"].([]any)) != 1 {
		t.Errorf("b's sessions: %v", out)
	}
	ok(a, "execute_code", map[string]any{"code": "y = 1", "session_id": "only-a"})
	if res, _ := callTool(t, b, "close_session", map[string]any{"session_id": "only-a"}); !res.IsError {
		t.Errorf("b closed a's session: %s", textOf(res))
	}
	if okA, r, msg := exec(a, "x", "s1"); !okA || r != "a state" {
		t.Errorf("a's session after b's calls: %v %v", r, msg)
	}

	// The log and stats are per namespace.
	statsA := ok(a, "get_execution_stats", map[string]any{})
	statsB := ok(b, "get_execution_stats", map[string]any{})
	if statsA["total"] != 5.0 || statsB["total"] != 3.0 {
		t.Errorf("stats not per namespace: a made 5 executions and b 3, stats say %v and %v", statsA["total"], statsB["total"])
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
