package main

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
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

// populateCode fills a workspace with n one-byte files, 1,000 per
// directory.
const populateCode = `
import os
n = N
for d in range((n + 999) // 1000):
    os.makedirs('d%03d' % d, exist_ok=True)
    for i in range(min(1000, n - d * 1000)):
        with open('d%03d/f%04d' % (d, i), 'w') as f:
            f.write('x')
print(sum(len(fs) for _, _, fs in os.walk('.')))
`

// BenchmarkWorkspaceSize is a trivial execute_code in workspaces of 0,
// 10,000 and 100,000 files, each its own codecell serve over stdio
// (production isolation), with the calls to the three interleaved so that
// they share the machine's load; p50 and p99 of each, and each p50 as a
// ratio to the empty workspace's. Its sub-benchmarks are the two ways a
// workspace can be kept: an image per workspace (where codecell runs as
// root with loop devices) and a plain directory.
func BenchmarkWorkspaceSize(b *testing.B) {
	requireProduction(b)
	for _, images := range []string{"auto", "off"} {
		b.Run("images="+images, func(b *testing.B) {
			cfg := fmt.Sprintf(`{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 2,
				"timeout": "20s", "maxTimeout": "600s", "workspaceImages": %q}}`, images)
			sizes := []int{0, 10_000, 100_000}
			clients := make([]*mcp.ClientSession, len(sizes))
			ctx := context.Background()
			for i, n := range sizes {
				clients[i] = connectStdio(b, cfg)
				if n == 0 {
					continue
				}
				start := time.Now()
				res, err := clients[i].CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
					"code": strings.Replace(populateCode, "N", strconv.Itoa(n), 1), "timeout_seconds": 600}})
				if err != nil || res.IsError || !strings.Contains(textOf(res), strconv.Itoa(n)) {
					b.Fatalf("populate %d files: %v %s", n, err, textOf(res))
				}
				b.Logf("%d files written in %s", n, time.Since(start).Round(time.Millisecond))
			}
			args := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print(1)"}}
			for range 20 {
				for _, cs := range clients {
					if res, err := cs.CallTool(ctx, args); err != nil || res.IsError {
						b.Fatalf("warm-up: %v %+v", err, res)
					}
				}
			}
			times := make([][]time.Duration, len(sizes))
			for b.Loop() {
				for i, cs := range clients {
					start := time.Now()
					res, err := cs.CallTool(ctx, args)
					times[i] = append(times[i], time.Since(start))
					if err != nil || res.IsError {
						b.Fatalf("execute_code: %v %+v", err, res)
					}
				}
			}
			b.StopTimer()
			p50 := make([]float64, len(sizes))
			for i, n := range sizes {
				slices.Sort(times[i])
				pct := func(p float64) float64 {
					return float64(times[i][min(len(times[i])-1, int(p*float64(len(times[i]))))].Microseconds()) / 1000
				}
				p50[i] = pct(0.5)
				b.ReportMetric(p50[i], fmt.Sprintf("p50-ms-%dfiles", n))
				b.ReportMetric(pct(0.99), fmt.Sprintf("p99-ms-%dfiles", n))
			}
			for i, n := range sizes[1:] {
				b.ReportMetric(p50[i+1]/p50[0], fmt.Sprintf("ratio-%dfiles", n))
			}
		})
	}
}
