package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/channel"
	"github.com/codecell/codecell/internal/sandbox"
)

// callsEcho is an execFunc that calls fake.echo n times, as code would,
// and reports in its stdout how each call went ("ok" or the error's kind).
func callsEcho(n int) execFunc {
	return func(ctx context.Context, req sandbox.Request) *sandbox.Result {
		var out strings.Builder
		for range n {
			params, _ := json.Marshal(map[string]any{"server": "fake", "tool": "echo", "arguments": map[string]any{"to": "x"}})
			_, err := req.Calls.HandleCall(ctx, channel.MethodTool, params)
			var ce *sandbox.CallError
			switch {
			case err == nil:
				out.WriteString("ok\n")
			case errors.As(err, &ce):
				out.WriteString(ce.Kind + ": " + ce.Message + "\n")
			default:
				out.WriteString("error: " + err.Error() + "\n")
			}
		}
		return &sandbox.Result{OK: true, Stdout: out.String()}
	}
}

func approvalServer(t *testing.T, exec execFunc) *Server {
	st := openStore(t, filepath.Join(t.TempDir(), "c.db"), "")
	s, _ := newTestServer(t, func(o *Options) {
		o.Store, o.Executor, o.Upstreams = st, exec, fakeUpstreams{}
		o.Config.Policy.Approve = []string{"fake.echo"}
		o.Config.Sandbox.TaskAfter = time.Hour // tasks only when a question comes
	})
	return s
}

func stdoutOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var out ExecuteCodeOutput
	json.Unmarshal(b, &out)
	return out.Stdout
}

// TestApprovalsGoClient: the Go SDK's client (which speaks 2026-07-28 and
// answers input_required results through its elicitation handler; the
// TypeScript tests in cmd/codecell drive the 2025 clients) is asked once for
// 50 calls when it answers with allow_all; a decline makes each call fail
// with ApprovalDenied and nothing runs; a client without elicitation is
// refused, never called silently.
func TestApprovalsGoClient(t *testing.T) {
	s := approvalServer(t, callsEcho(50))
	var asked atomic.Int32
	action, allowAll := "accept", true
	cs := connectClient(t, s, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if !strings.Contains(req.Params.Message, "fake.echo") || !strings.Contains(req.Params.Message, `"to"`) {
			t.Errorf("the question does not name the call: %q", req.Params.Message)
		}
		return &mcp.ElicitResult{Action: action, Content: map[string]any{allowAllField: allowAll}}, nil
	}})
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "loop()"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := stdoutOf(t, res); strings.Count(out, "ok\n") != 50 || asked.Load() != 1 {
		t.Errorf("asked %d times; stdout %q", asked.Load(), out)
	}
	action = "decline"
	s.exec = callsEcho(2)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "loop()"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := stdoutOf(t, res); strings.Count(out, "ApprovalDenied: not approved: the person declined the call") != 2 || asked.Load() != 3 {
		t.Errorf("decline: asked %d times; stdout %q", asked.Load(), out)
	}

	// No elicitation: refused, without asking.
	plain := connectClient(t, s, nil)
	res, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "loop()"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := stdoutOf(t, res); !strings.Contains(out, "ApprovalDenied: not approved: this client cannot be asked") {
		t.Errorf("no elicitation: stdout %q", out)
	}
}

// TestApprovals2026: a 2026 client is asked by an input_required result
// and answers in its retry; in a task, by the task's input_required
// status, answered with tasks/update.
func TestApprovals2026(t *testing.T) {
	s := approvalServer(t, callsEcho(3))
	c := newRawClient(t, s)
	first := result(t, c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "loop()"}, "_meta": modernMeta(false, true)}))
	reqs, _ := first["inputRequests"].(map[string]any)
	if first["resultType"] != "input_required" || len(reqs) != 1 {
		t.Fatalf("not input_required: %v", first)
	}
	var key string
	for k := range reqs {
		key = k
	}
	retry := result(t, c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "loop()"}, "_meta": modernMeta(false, true),
		"requestState": first["requestState"], "inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{allowAllField: true}}}}))
	sc, _ := retry["structuredContent"].(map[string]any)
	if sc == nil || strings.Count(sc["stdout"].(string), "ok\n") != 3 {
		t.Errorf("retry: %v", retry)
	}
	stale := c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "loop()"}, "_meta": modernMeta(false, true),
		"requestState": first["requestState"], "inputResponses": map[string]any{}})
	if stale["error"] == nil {
		t.Errorf("a retry of an answered question was taken: %v", stale)
	}

	// In a task.
	created := result(t, c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "loop()"}, "_meta": modernMeta(true, true)}))
	if created["resultType"] != "task" || created["status"] != "input_required" {
		t.Fatalf("not a task waiting for input: %v", created)
	}
	id := created["taskId"].(string)
	answered := 0
	var done map[string]any
	waitFor(t, time.Minute, "the task ends", func() bool {
		g := result(t, c.call("tasks/get", map[string]any{"taskId": id, "_meta": modernMeta(true, true)}))
		if g["status"] == "input_required" {
			for k := range g["inputRequests"].(map[string]any) {
				answered++
				result(t, c.call("tasks/update", map[string]any{"taskId": id, "_meta": modernMeta(true, true),
					"inputResponses": map[string]any{k: map[string]any{"action": "decline"}}}))
			}
		}
		done = g
		return g["status"] == "completed"
	})
	out := done["result"].(map[string]any)["structuredContent"].(map[string]any)["stdout"].(string)
	if strings.Count(out, "ApprovalDenied") != 3 || answered < 3 {
		t.Errorf("task: answered %d; stdout %q", answered, out)
	}
}

// TestApprovalTimeout: a question nobody answers within
// policy.approvalTimeout refuses the call, saying so (a 2025 client over
// stdio, which gets elicitation/create and never answers it).
func TestApprovalTimeout(t *testing.T) {
	s := approvalServer(t, callsEcho(1))
	s.cfg.Policy.ApprovalTimeout = 100 * time.Millisecond
	c := newRawClient(t, s)
	result(t, c.call("initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "t", "version": "1"}}))
	c.notify("notifications/initialized")
	res := result(t, c.call("tools/call", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": "loop()"}}))
	select {
	case q := <-c.reqs:
		if q["method"] != "elicitation/create" {
			t.Errorf("the server asked %v", q["method"])
		}
	default:
		t.Error("the client was not asked")
	}
	out, _ := res["structuredContent"].(map[string]any)["stdout"].(string)
	if !strings.Contains(out, "ApprovalDenied: not approved: no answer to the approval request within 100ms") {
		t.Errorf("stdout %q", out)
	}
}

// TestApprovalArgumentsBounded: the question shows at most maxApprovalArgs
// bytes of the arguments, cut on a character, and says how many there were.
func TestApprovalArgumentsBounded(t *testing.T) {
	args := json.RawMessage(`{"text":"` + strings.Repeat("é", 3000) + `"}`)
	msg := approvalParams("memory.create_entities", args).Message
	if !strings.Contains(msg, "(6011 bytes in all)") || len(msg) > maxApprovalArgs+400 || !utf8.ValidString(msg) {
		t.Errorf("message of %d bytes: %.120q…", len(msg), msg)
	}
	if small := approvalParams("a.b", json.RawMessage(`{"x":1}`)).Message; !strings.Contains(small, `{"x":1}`) {
		t.Errorf("small arguments: %q", small)
	}
}
