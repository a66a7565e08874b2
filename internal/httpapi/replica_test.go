package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUnknownSession: a request for an MCP session this replica does not
// hold gets 404 (so clients start a new session, as the MCP spec says) with
// a message saying why; every answer names the replica.
func TestUnknownSession(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	h, err := Handler(Options{Server: srv, Replica: "r9"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("no-such-session", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), `replica "r9" does not hold this MCP session`) ||
		!strings.Contains(string(body), "Reconnect") || strings.Count(string(body), "session not found") != 1 {
		t.Errorf("unknown session: %d %q", resp.StatusCode, body)
	}
	if got := resp.Header.Get(ReplicaHeader); got != "r9" {
		t.Errorf("%s = %q", ReplicaHeader, got)
	}
	// A new session is made as before, and named by this replica.
	resp = post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" || resp.Header.Get(ReplicaHeader) != "r9" {
		t.Errorf("initialize: %d, session %q, replica %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), resp.Header.Get(ReplicaHeader))
	}
}
