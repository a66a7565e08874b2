package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
)

// BenchmarkExecuteCodeMCP is execute_code's cost in the MCP layer alone
// (schemas, JSON, the SDK), over in-memory transports with an instant
// executor.
func BenchmarkExecuteCodeMCP(b *testing.B) {
	// The sandbox answers instantly: the benchmark measures the MCP layer.
	_, cs := newTestServer(b, func(o *Options) {
		o.Executor = execFunc(func(context.Context, sandbox.Request) *sandbox.Result {
			return &sandbox.Result{OK: true, Stdout: "1\n", Duration: time.Millisecond}
		})
	})
	ctx := context.Background()
	args := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print(1)"}}
	for b.Loop() {
		if res, err := cs.CallTool(ctx, args); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkGate is what the gate costs an execute_code answer: the same
// call with pii.mode "off" and "tokenize", for a trivial output and for
// 64 KiB and 1 MiB of log lines with some personal data in them.
//
//	go test ./internal/server -run XXX -bench Gate -benchtime 20x
func BenchmarkGate(b *testing.B) {
	line := "2024-03-12 09:05:00 INFO worker: order 4419-2201-77 for anna.k@icloud.com from 203.0.113.7 took 12ms\n" +
		"2024-03-12 09:05:01 INFO search: query \"isbn 978-0-306-40615-7\" status=200 bytes=2326 ua=\"Mozilla/5.0\"\n"
	for _, size := range []struct {
		name string
		out  string
	}{
		{"trivial", "1\n"},
		{"64KiB", strings.Repeat(line, (64<<10)/len(line))},
		{"1MiB", strings.Repeat(line, (1<<20)/len(line))},
	} {
		for _, mode := range []string{"off", "tokenize"} {
			b.Run(size.name+"/"+mode, func(b *testing.B) {
				cfg := config.Default()
				cfg.PII.Mode = mode
				cfg.Sandbox.Output = 2 << 20
				out := size.out
				_, cs := newTestServer(b, func(o *Options) {
					o.Config = cfg
					o.Executor = execFunc(func(context.Context, sandbox.Request) *sandbox.Result {
						return &sandbox.Result{OK: true, Stdout: out}
					})
				})
				ctx := context.Background()
				args := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print(1)"}}
				b.SetBytes(int64(len(out)))
				for b.Loop() {
					if res, err := cs.CallTool(ctx, args); err != nil || res.IsError {
						b.Fatal(err, res)
					}
				}
			})
		}
	}
}
