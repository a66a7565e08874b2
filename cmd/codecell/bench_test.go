package main

import (
	"context"
	"flag"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var serverProfile = flag.String("server-cpuprofile", "", "BenchmarkExecuteCode: write the server's CPU profile here")

// reportPercentiles adds p50 and p99 in milliseconds to a benchmark.
func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	pct := func(p float64) float64 {
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkExecuteCode is a trivial execute_code through the MCP client over
// stdio against the built binary, with production isolation.
func BenchmarkExecuteCode(b *testing.B) {
	requireProduction(b)
	var extra []string
	if *serverProfile != "" {
		extra = []string{"--cpuprofile", *serverProfile}
	}
	cs := connectStdio(b, testConfig, extra...)
	ctx := context.Background()
	args := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print(1)"}}
	// Let the pool warm up and the first sandbox start.
	for range 3 {
		if res, err := cs.CallTool(ctx, args); err != nil || res.IsError {
			b.Fatalf("warm-up: %v %+v", err, res)
		}
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := cs.CallTool(ctx, args)
		times = append(times, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("execute_code: %v %+v", err, res)
		}
	}
	b.StopTimer()
	reportPercentiles(b, times)
}

// BenchmarkPythonSpawn is the baseline: a bare interpreter start and exit.
func BenchmarkPythonSpawn(b *testing.B) {
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := exec.Command("/usr/bin/python3", "-I", "-S", "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	reportPercentiles(b, times)
}
