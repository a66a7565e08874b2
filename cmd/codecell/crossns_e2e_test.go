package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/httpapi/httpapitest"
)

// TestNamespacesCrossAccess (issue #14): namespace a builds up something of
// everything a namespace owns (workspace and code files, a skill, a
// session, an execution log, a managed environment, a PII vault); then
// namespace b, over the same server, tries every tool that takes a path, a
// name or an id with a's, every REST route and /metrics, the dashboard, and
// a's MCP session id. b reaches nothing of a's, and a's state is intact
// afterwards.
func TestNamespacesCrossAccess(t *testing.T) {
	requireProduction(t)
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"fake": map[string]any{"command": fakeUpstream(t)}},
		"sandbox":    map[string]any{"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "20s"},
		"http":       map[string]any{"tokens": map[string]string{tokenA: "team-a", tokenB: "team-b"}},
		"pii":        map[string]any{"allowRestore": true},
	})
	base := startHTTP(t, string(cfg), nil)
	ctx := context.Background()
	// a speaks 2025, whose MCP session b then tries to use; b speaks
	// 2026-07-28, which has none.
	a, b := connectWithToken(t, base, tokenA, legacyProtocol), connectWithToken(t, base, tokenB)
	waitUpstream(ctx, a)

	// secret is in everything a makes; email is in a's vault only.
	// Letters, not digits: a random number of 18 or 19 digits can pass the
	// card check (a card's prefix and Luhn), and the gate then showed a's
	// own secret to a as a token (seen in a CI run).
	secret := "A-SECRET-" + strings.Map(func(rune) rune { return 'a' + rune(rand.IntN(26)) }, "xxxxxxxxxxxx")
	email := fmt.Sprintf("alice.%d@example.com", rand.IntN(1e9))
	sessionA := fmt.Sprintf("sess-a-%d", rand.Int64())
	mustOK := func(cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
		t.Helper()
		res, out := callTool(t, cs, tool, args)
		if res.IsError {
			t.Fatalf("%s: %s", tool, textOf(res))
		}
		return out
	}

	// a's state.
	mustOK(a, "write_workspace_file", map[string]any{"path": "secret.txt", "content": secret})
	mustOK(a, "write_workspace_file", map[string]any{"path": "data.csv", "content": "name\n" + secret + "\n"})
	codeFile := mustOK(a, "initialize_code_file", map[string]any{"content": "print('" + secret + "')"})["path"].(string)
	mustOK(a, "save_skill", map[string]any{"name": "askill", "code": "def askill():\n    return '" + secret + "'\n", "description": "a's skill"})
	if _, out := call(t, a, map[string]any{"code": "x = '" + secret + "'", "session_id": sessionA}); !out.OK {
		t.Fatalf("a's session: %+v", out.Error)
	}
	if _, out := call(t, a, map[string]any{"code": "print('" + secret + "')"}); !out.OK {
		t.Fatalf("a's execution: %+v", out.Error)
	}
	san := mustOK(a, "sanitize_pii", map[string]any{"text": "contact " + email})
	token := strings.TrimPrefix(san["text"].(string), "contact ")
	if !strings.HasPrefix(token, "[EMAIL_") {
		t.Fatalf("sanitize_pii: %v", san)
	}
	var envPath string
	if exec.Command("/usr/bin/python3", "-I", "-c", "import ensurepip, venv").Run() == nil {
		env := mustOK(a, "configure_environment", map[string]any{"type": "venv"})
		envPath = filepath.Dir(filepath.Dir(env["python"].(string)))
	}
	var pageA struct {
		Executions []struct {
			ID int64 `json:"id"`
		} `json:"executions"`
	}
	if code := httpapitest.GetJSON(t, base+"/api/v1/executions", tokenA, &pageA); code != 200 || len(pageA.Executions) == 0 {
		t.Fatalf("a's log: %d %+v", code, pageA)
	}
	newestA := pageA.Executions[0].ID

	// leaked reports what of a's a text holds, but what b's own request
	// (asked, which an error may quote) holds too.
	leakedFor := func(s string, asked any) []string {
		var found []string
		for _, w := range []string{secret, email, "team-a"} {
			if strings.Contains(s, w) && !strings.Contains(toJSON(asked), w) {
				found = append(found, w)
			}
		}
		if envPath != "" && strings.Contains(s, envPath) {
			found = append(found, envPath)
		}
		return found
	}
	leaked := func(s string) []string { return leakedFor(s, nil) }
	answer := func(res *mcp.CallToolResult) string {
		return textOf(res) + toJSON(res.StructuredContent)
	}

	// b's tries, each with a's paths, names and ids. want is "error" (the
	// tool must fail) or "any" (b may succeed on its own state); either
	// way nothing of a's may show.
	tries := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_workspace_file", map[string]any{"path": "secret.txt"}, "error"},
		{"read_workspace_file", map[string]any{"path": "../team-a/secret.txt"}, "error"},
		{"read_workspace_file", map[string]any{"path": "/workspace/../team-a/secret.txt"}, "error"},
		{"read_workspace_file", map[string]any{"path": "..%2Fteam-a%2Fsecret.txt"}, "error"},
		{"list_workspace_files", map[string]any{"path": ".."}, "error"},
		{"list_workspace_files", map[string]any{"path": "../team-a"}, "error"},
		{"list_workspace_files", map[string]any{"pattern": "*secret*"}, "any"},
		{"write_workspace_file", map[string]any{"path": "../team-a/secret.txt", "content": "from b"}, "error"},
		{"delete_workspace_file", map[string]any{"path": "../team-a/secret.txt"}, "error"},
		{"delete_workspace_file", map[string]any{"path": "secret.txt"}, "error"},
		{"read_code_file", map[string]any{"path": codeFile}, "error"},
		{"read_code_file", map[string]any{"path": "../team-a/" + codeFile}, "error"},
		{"append_to_code_file", map[string]any{"path": codeFile, "content": "print('b')"}, "error"},
		{"append_to_code_file", map[string]any{"path": "../team-a/" + codeFile, "content": "print('b')"}, "error"},
		{"execute_code_file", map[string]any{"path": codeFile}, "error"},
		{"execute_code_file", map[string]any{"path": "../team-a/" + codeFile}, "error"},
		{"execute_analysis", map[string]any{"analysis_type": "filter", "source": "data.csv", "parameters": map[string]any{"conditions": []any{}}}, "error"},
		{"execute_analysis", map[string]any{"analysis_type": "filter", "source": "../team-a/data.csv", "parameters": map[string]any{"conditions": []any{}}}, "error"},
		{"load_skill", map[string]any{"name": "askill"}, "error"},
		{"load_skill", map[string]any{"name": "../team-a/askill"}, "error"},
		{"delete_skill", map[string]any{"name": "askill"}, "error"},
		{"list_skills", map[string]any{"query": "askill"}, "any"},
		{"list_sessions", map[string]any{}, "any"},
		{"close_session", map[string]any{"session_id": sessionA}, "error"},
		{"get_execution_stats", map[string]any{}, "any"},
		{"get_environment_config", map[string]any{}, "any"},
		{"check_installed_packages", map[string]any{"packages": []string{"pip"}}, "any"},
		{"restore_pii", map[string]any{"text": "contact " + token}, "any"},
		{"search_tools", map[string]any{"query": "askill " + secret}, "any"},
	}
	if envPath != "" {
		tries = append(tries,
			struct {
				tool string
				args map[string]any
				want string
			}{"configure_environment", map[string]any{"type": "venv", "path": envPath}, "error"},
			struct {
				tool string
				args map[string]any
				want string
			}{"configure_environment", map[string]any{"type": "venv", "path": filepath.Join(envPath, "..", "..", "team-a", filepath.Base(envPath))}, "error"})
	}
	for _, try := range tries {
		t.Run(try.tool, func(t *testing.T) {
			res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: try.tool, Arguments: try.args})
			if err != nil {
				// A protocol error (a bad argument) reveals nothing either.
				if l := leakedFor(err.Error(), try.args); len(l) > 0 {
					t.Errorf("%s %v: the error shows %v: %v", try.tool, try.args, l, err)
				}
				return
			}
			text := answer(res)
			if l := leakedFor(text, try.args); len(l) > 0 {
				t.Errorf("%s %v shows %v of a's: %s", try.tool, try.args, l, text)
			}
			if try.want == "error" && !res.IsError {
				t.Errorf("%s %v succeeded for b: %s", try.tool, try.args, text)
			}
		})
	}

	// Code in b: a's session id starts b's own session; a's token sent to
	// a tool is not restored from a's vault (the answer comes back base64,
	// past the output's PII gate, so a restored value would show).
	t.Run("execute_code", func(t *testing.T) {
		_, out := call(t, b, map[string]any{"code": "globals().get('x')", "session_id": sessionA})
		if !out.OK || out.Result != nil {
			t.Errorf("b's session %s: %+v %v", sessionA, out.Error, out.Result)
		}
		_, out = call(t, b, map[string]any{"code": "import base64, json\nfrom servers.fake import echo\n" +
			"base64.b64encode(json.dumps(echo(text=" + fmt.Sprintf("%q", token) + ")).encode()).decode()"})
		s, _ := out.Result.(string)
		raw, _ := base64.StdEncoding.DecodeString(s)
		if !out.OK || len(raw) == 0 || strings.Contains(string(raw), email) {
			t.Errorf("a's token through b's tool call: %+v %q", out.Error, raw)
		}
		_, out = call(t, b, map[string]any{"code": "from skills.askill import askill\naskill()"})
		if out.OK || strings.Contains(toJSON(out), secret) {
			t.Errorf("b imported a's skill: %+v", out)
		}
	})

	t.Run("resources", func(t *testing.T) {
		for _, uri := range []string{"file:///workspace/secret.txt", "file:///workspace/" + codeFile,
			"file:///workspace/../team-a/secret.txt", "file:///workspace/%2e%2e/team-a/secret.txt", "file:///team-a/secret.txt"} {
			r, err := b.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err == nil || len(leakedFor(toJSON(r), uri)) > 0 {
				t.Errorf("b read %s: %s %v", uri, toJSON(r), err)
			}
		}
		list, err := b.ListResources(ctx, nil)
		if err != nil || len(leaked(toJSON(list))) > 0 || strings.Contains(toJSON(list), "secret.txt") {
			t.Errorf("b's resources: %s %v", toJSON(list), err)
		}
	})

	t.Run("REST and metrics", func(t *testing.T) {
		for _, path := range []string{"/api/v1/executions", fmt.Sprintf("/api/v1/executions?before=%d&limit=100", newestA+1),
			"/api/v1/executions?before=9223372036854775807", "/api/v1/skills", "/api/v1/stats", "/api/v1/stats?since=100h",
			"/api/v1/tools/search?query=askill", "/api/v1/upstreams", "/readyz", "/metrics", "/"} {
			ans := httpapitest.Do(t, "GET", base+path, map[string]string{"Authorization": "Bearer " + tokenB})
			if l := leaked(ans.Body); len(l) > 0 {
				t.Errorf("GET %s as b shows %v of a's: %.300s", path, l, ans.Body)
			}
			if path != "/" && ans.Status != 200 {
				t.Errorf("GET %s as b: %d %.200s", path, ans.Status, ans.Body)
			}
		}
		var bs struct {
			Executions []json.RawMessage `json:"executions"`
		}
		httpapitest.GetJSON(t, fmt.Sprintf("%s/api/v1/executions?before=%d", base, newestA+1), tokenB, &bs)
		for _, e := range bs.Executions {
			if strings.Contains(string(e), "team-a") || strings.Contains(string(e), secret) {
				t.Errorf("b's log page holds a's execution: %s", e)
			}
		}
	})

	// b presents a's MCP session id with its own token.
	t.Run("a's MCP session with b's token", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_workspace_file","arguments":{"path":"secret.txt"}}}`
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokenB)
		req.Header.Set("Mcp-Session-Id", a.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 64<<10)
		n, _ := resp.Body.Read(buf)
		if resp.StatusCode < 400 || len(leaked(string(buf[:n]))) > 0 {
			t.Errorf("b used a's MCP session: %s %s", resp.Status, buf[:n])
		}
	})

	// a's state is intact.
	if out := mustOK(a, "read_workspace_file", map[string]any{"path": "secret.txt"}); out["content"] != secret {
		t.Errorf("a's file after b's tries: %v", out)
	}
	if out := mustOK(a, "read_code_file", map[string]any{"path": codeFile}); !strings.Contains(toJSON(out), secret) || strings.Contains(toJSON(out), "print('b')") {
		t.Errorf("a's code file after b's tries: %v", out)
	}
	if out := mustOK(a, "load_skill", map[string]any{"name": "askill"}); !strings.Contains(out["code"].(string), secret) {
		t.Errorf("a's skill after b's tries: %v", out)
	}
	if _, out := call(t, a, map[string]any{"code": "x", "session_id": sessionA}); !out.OK || out.Result != secret {
		t.Errorf("a's session after b's tries: %+v %v", out.Error, out.Result)
	}
	if out := mustOK(a, "restore_pii", map[string]any{"text": token}); out["text"] != email {
		t.Errorf("a's vault after b's tries: %v", out)
	}
	if envPath != "" {
		if out := mustOK(a, "get_environment_config", map[string]any{}); !strings.Contains(toJSON(out), envPath) {
			t.Errorf("a's environment after b's tries: %v", out)
		}
		if out := mustOK(b, "get_environment_config", map[string]any{}); strings.Contains(toJSON(out), envPath) {
			t.Errorf("b's environment is a's: %v", out)
		}
	}
}
