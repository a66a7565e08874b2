package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/proc"
	"github.com/codecell/codecell/internal/sandbox"
)

// hardenedBench measures trivial executions at the hardened level (gVisor)
// through a `codecell serve` of its own (the default pool, another data
// dir), beside bare spawns in the same run, as measureLatency does for
// production. It returns no figures, and says why on stderr, where runsc
// is missing.
func hardenedBench(ctx context.Context, g *globals, self, root string, n int) ([]benchFigure, error) {
	if err := sandbox.Check(ctx, sandbox.Hardened, "/usr/bin/python3"); err != nil {
		fmt.Fprintf(g.stderr, "codecell bench: hardened figures skipped: %v\n", err)
		return nil, nil
	}
	cfgPath := filepath.Join(root, "hardened.json")
	raw, _ := json.Marshal(map[string]any{"sandbox": map[string]any{"isolation": "hardened", "timeout": "120s"}})
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		return nil, err
	}
	cmd := proc.Command(context.Background(), self, "serve", "--config", cfgPath, "--data-dir", filepath.Join(root, "hardened-data"), "--log-level", "error")
	cmd.Stderr = g.stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codecell-bench", Version: version}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("start codecell serve (hardened): %w", err)
	}
	defer cs.Close()
	run := func() error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print(1)"}})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("execute_code (hardened) failed: %s", textOf(res))
		}
		return nil
	}
	fmt.Fprintln(g.stderr, "codecell bench: warming up the hardened pool")
	for range 20 {
		if err := run(); err != nil {
			return nil, err
		}
	}
	// gVisor sandboxes take a second or more of CPU each to start: let the
	// pool fill before measuring.
	time.Sleep(5 * time.Second)
	lr, err := measureLatency(n, serveProcess(cmd), run)
	if err != nil {
		return nil, err
	}
	return lr.hardenedFigures(), nil
}

// hardenedFigures are issue 16's hardened figures: latency against a bare
// spawn's p50 measured in the same run (p50 at most 2x, p99 at most 5x),
// and the CPU time per execution of the server and everything below it
// (runsc, gVisor's sentry and gofer, the code's processes).
func (lr *latencyRun) hardenedFigures() []benchFigure {
	p50, p99 := percentile(lr.exec, 0.50), percentile(lr.exec, 0.99)
	s50, s99 := percentile(lr.spawn, 0.50), percentile(lr.spawn, 0.99)
	ms := func(d time.Duration) float64 { return msEach(d, len(lr.exec)) }
	figs := []benchFigure{
		{Name: "hardened: execute_code latency p50 (print(1), stdio, gVisor)", Value: p50, Unit: "ms"},
		{Name: "hardened: execute_code latency p99", Value: p99, Unit: "ms"},
		{Name: "hardened: bare python3 -I -S -c pass p50 (same run)", Value: s50, Unit: "ms"},
		{Name: "hardened: bare python3 -I -S -c pass p99 (same run)", Value: s99, Unit: "ms"},
	}
	figs = append(figs, spawnRatios("hardened: ", p50, p99, s50, 2, 5)...)
	return append(figs, []benchFigure{
		{Name: "hardened: CPU per trivial execution (server, runsc, sentry, gofer, code)", Value: ms(lr.serverCPU + lr.sandboxCPU), Unit: "ms",
			Note: fmt.Sprintf("server %.2f ms, sandboxes %.2f ms, client %.2f ms", ms(lr.serverCPU), ms(lr.sandboxCPU), ms(lr.clientCPU))},
		{Name: "hardened: CPU per bare spawn (same run)", Value: ms(lr.spawnCPU), Unit: "ms"},
		{Name: "hardened: machine CPU per trivial execution (whole host, other load included)", Value: ms(lr.machineCPU), Unit: "ms"},
	}...)
}
