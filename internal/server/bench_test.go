package server

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
)

// fakeExecutor answers instantly: the benchmark then measures the MCP layer.
type fakeExecutor struct{}

func (fakeExecutor) Exec(ctx context.Context, req sandbox.Request) *sandbox.Result {
	return &sandbox.Result{OK: true, Stdout: "1\n", Duration: time.Millisecond, Isolation: sandbox.Production}
}
func (fakeExecutor) Level() sandbox.Level { return sandbox.Production }

// BenchmarkExecuteCodeMCP is execute_code's cost in the MCP layer alone
// (schemas, JSON, the SDK), over in-memory transports with an instant
// executor.
func BenchmarkExecuteCodeMCP(b *testing.B) {
	s, err := New(Options{Config: allTools(config.Default()), Executor: fakeExecutor{}, DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	ctx := context.Background()
	cs := connectClient(b, s)
	args := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print(1)"}}
	for b.Loop() {
		if res, err := cs.CallTool(ctx, args); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
