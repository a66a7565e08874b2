package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/httpapi"
	"github.com/codecell/codecell/internal/server"
)

// counterCode counts its executions in an interpreter session.
const counterCode = "try:\n    n += 1\nexcept NameError:\n    n = 1\nprint(n)"

// headerRecorder notes, for each tools/call, the session handle the client
// mirrored into Mcp-Param-Session-Id, and for every answer the MCP session
// id and the replica it carried.
type headerRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	// handles are the Mcp-Param-Session-Id headers of the tools/calls.
	handles []string
	// sessionIDs are the Mcp-Session-Id headers of the answers.
	sessionIDs []string
	// callReplicas are the replicas that answered the tools/calls.
	callReplicas []string
}

func (r *headerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		r.sessionIDs = append(r.sessionIDs, id)
	}
	if req.Header.Get("Mcp-Method") == "tools/call" {
		r.handles = append(r.handles, req.Header.Get("Mcp-Param-"+server.SessionHeader))
		r.callReplicas = append(r.callReplicas, resp.Header.Get(httpapi.ReplicaHeader))
	}
	return resp, nil
}

// modernCall is one call of a 2026-07-28 client that opens a new connection
// for it, as a host may: connect (server/discover), list the tools (a host
// shows them to its model; the list is what tells the client to mirror
// session_id into a header), call execute_code, close. It returns the
// output, and what the recorder saw.
func modernCall(ctx context.Context, endpoint, code, session string) (server.ExecuteCodeOutput, *headerRecorder, error) {
	var out server.ExecuteCodeOutput
	rec := &headerRecorder{base: http.DefaultTransport.(*http.Transport).Clone()}
	client := mcp.NewClient(&mcp.Implementation{Name: "generations-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1,
	}, nil)
	if err != nil {
		return out, rec, err
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		return out, rec, fmt.Errorf("the client speaks %s, not 2026-07-28", v)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return out, rec, err
	}
	args := map[string]any{"code": code}
	if session != "" {
		args["session_id"] = session
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: args})
	if err != nil {
		return out, rec, err
	}
	if err := decodeStructured(res, &out); err != nil {
		return out, rec, err
	}
	if res.IsError || !out.OK {
		return out, rec, fmt.Errorf("execute_code failed: %s", textOf(res))
	}
	return out, rec, nil
}

// TestGenerationsShareSessions: a 2025 client and 2026-07-28 clients use one
// running HTTP server side by side, and an interpreter session is a handle
// of its namespace, not of a connection: a 2025 client's session goes on in
// calls of 2026 clients that each open a new connection, and back.
func TestGenerationsShareSessions(t *testing.T) {
	requireProduction(t)
	base := startHTTP(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "60s"}}`, nil)
	ctx := context.Background()

	rec := &headerRecorder{base: http.DefaultTransport.(*http.Transport).Clone()}
	old, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-2025", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: rec}}, legacyProtocol)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if old.ID() == "" || len(rec.sessionIDs) == 0 {
		t.Fatalf("the 2025 client has no MCP session (Mcp-Session-Id): %q", old.ID())
	}
	_, out := call(t, old, map[string]any{"code": counterCode, "session_id": "shared"})
	if out.Stdout != "1\n" || !out.SessionStarted {
		t.Fatalf("2025 client, first call: %+v", out)
	}
	for k := 2; k <= 4; k++ {
		out, rec, err := modernCall(ctx, base+"/mcp", counterCode, "shared")
		if err != nil {
			t.Fatalf("2026 client, call %d: %v", k, err)
		}
		if out.Stdout != fmt.Sprintf("%d\n", k) || out.SessionStarted {
			t.Errorf("2026 client, call %d on a new connection: stdout %q, started %v: the session did not carry over", k, out.Stdout, out.SessionStarted)
		}
		if len(rec.sessionIDs) != 0 {
			t.Errorf("a 2026 client was handed MCP sessions %q", rec.sessionIDs)
		}
		if len(rec.handles) != 1 || rec.handles[0] != "shared" {
			t.Errorf("the client mirrored session_id as Mcp-Param-%s: %q, want [shared]", server.SessionHeader, rec.handles)
		}
	}
	if _, out := call(t, old, map[string]any{"code": counterCode, "session_id": "shared"}); out.Stdout != "5\n" {
		t.Errorf("2025 client after the 2026 ones: %q, want 5", out.Stdout)
	}
}
