package httpapi_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/httpapi"
	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/store"
)

// BenchmarkCallOverHTTP: what /mcp costs a tool call in each protocol
// generation, with an executor that does nothing (so the figure is the
// transport's and the server's, not a sandbox's): a 2025 client in its MCP
// session; a 2026-07-28 client on one connection (the stateless handler
// makes a session per request); and a 2026-07-28 client that opens a new
// connection per call (discover, list, call), as a client without a
// connection pool does.
func BenchmarkCallOverHTTP(b *testing.B) {
	st, err := store.Open(filepath.Join(b.TempDir(), "codecell.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	srv, err := server.New(server.Options{Config: config.Default(), Executor: lineExecutor{}, Upstreams: oneUpstream{},
		Store: st, DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	h, err := httpapi.Handler(httpapi.Options{Server: srv.MCP()})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	ctx := context.Background()
	connect := func(b *testing.B, version string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print x"}}
	callOn := func(b *testing.B, cs *mcp.ClientSession) {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(version, func(b *testing.B) {
			cs := connect(b, version)
			defer cs.Close()
			for b.Loop() {
				callOn(b, cs)
			}
		})
	}
	b.Run("2026-07-28-new-connection-per-call", func(b *testing.B) {
		for b.Loop() {
			cs := connect(b, "2026-07-28")
			if _, err := cs.ListTools(ctx, nil); err != nil {
				b.Fatal(err)
			}
			callOn(b, cs)
			cs.Close()
		}
	})
}
