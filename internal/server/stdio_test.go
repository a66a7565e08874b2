package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioBadMessages: over stdio, a message that is too deep, too long or
// not JSON fails alone, with its id when it has one; the session goes on.
func TestStdioBadMessages(t *testing.T) {
	s, _, _ := statsServer(t, nil, statsScripts, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.MCP().Run(ctx, NewStdioTransport(inR, outW)) }()
	out := bufio.NewReader(outR)
	exchange := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		reply, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(reply), &m); err != nil {
			t.Fatalf("reply %q: %v", reply, err)
		}
		return m
	}
	init := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if init["result"] == nil {
		t.Fatalf("initialize: %v", init)
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	for _, tc := range []struct {
		name, line string
		id         any
		code       float64
		msg        string
	}{
		{"too deep", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_code","arguments":{"code":"1","context":{"x":` + deep + `}}},"id":"deep-1"}`, "deep-1", -32600, "nests deeper than 512"},
		{"not JSON", `{"jsonrpc":"2.0","id":7,`, float64(7), -32700, "not valid JSON"},
		{"not JSON at all", `hello`, nil, -32700, "not valid JSON"},
		// The TypeScript SDK puts the id after the params (issue #30: the
		// error said "id": null, and the client waited for its timeout).
		{"too long, id last", `{"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"` + strings.Repeat("a", maxLine) + `"}},"jsonrpc":"2.0","id":12}`, float64(12), -32600, "longer than"},
		{"too long, string id last", `{"method":"ping","params":{"x":"` + strings.Repeat("a", maxLine) + `","y":{"id":3}},"id":"r-7"}`, "r-7", -32600, "longer than"},
		{"too long", `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"` + strings.Repeat("a", maxLine) + `"}}`, float64(8), -32600, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := exchange(tc.line)
			e, _ := m["error"].(map[string]any)
			if m["id"] != tc.id || e == nil || e["code"] != tc.code || !strings.Contains(e["message"].(string), tc.msg) {
				t.Errorf("reply %v", m)
			}
		})
	}
	if m := exchange(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); m["result"] == nil {
		t.Errorf("the session did not go on: %v", m)
	}
	inW.Close()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the server did not end with its input")
	}
}

// TestDepth counts nesting outside strings only.
func TestDepth(t *testing.T) {
	for in, want := range map[string]int{`{}`: 1, `[[1],[2,[3]]]`: 3, `{"a":"[[[[\"]]]]"}`: 1, `"x"`: 0} {
		if got := depth([]byte(in)); got != want {
			t.Errorf("depth(%s) = %d, want %d", in, got, want)
		}
	}
}

var _ mcp.Transport = NewStdioTransport(strings.NewReader(""), io.Discard)
