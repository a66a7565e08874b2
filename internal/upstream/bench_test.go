package upstream

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"
)

// BenchmarkInProcessCall is one tool call through the Manager to an
// in-process upstream, one after another: the MCP client's and the
// upstream server's share of a tool call from the code (B/op and
// allocs/op are the steadier figures on a shared machine).
func BenchmarkInProcessCall(b *testing.B) {
	m := startMem(b)
	ctx := context.Background()
	if err := m.Wait(ctx, "mem"); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"text":"x"}`)
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if res, err := m.Call(ctx, "mem", "echo", args); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time this process has used (user and system, GC
// included): on a shared machine a steadier figure than the time per call.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
