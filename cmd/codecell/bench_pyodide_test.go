package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pyodideDeps are the packages of testdata/npm that pyodide-mcp.mjs needs.
var pyodideDeps = map[string]string{
	"@modelcontextprotocol/sdk": "package.json",
	"pyodide":                   "pyodide.mjs",
	"zod":                       "package.json",
}

// TestPyodideServer starts the warm Pyodide peer of bench --pyodide
// (testdata/npm/pyodide-mcp.mjs) and checks what run_python_code answers,
// with the Go SDK client the bench drives it with.
func TestPyodideServer(t *testing.T) {
	_, npmDir := npmEnv(t, pyodideDeps)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr strings.Builder
	peer, err := startPyodide(ctx, filepath.Join(npmDir, "pyodide-mcp.mjs"), &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	defer peer.Close()
	out, err := peer.run(ctx, "print(1)")
	if err != nil || out != "1\n" {
		t.Fatalf("print(1): %q, %v", out, err)
	}
	tests := []struct {
		name, code, want string
	}{
		{"stdout", "print(1)", "<status>success</status>\n<output>\n1\n</output>"},
		{"stderr and value", "import sys\nprint('e', file=sys.stderr)\n{'a': 1}",
			"<status>success</status>\n<output>\ne\n</output>\n<return_value>\n{\n  \"a\": 1\n}\n</return_value>"},
		{"string value as it is", "'s'", "<status>success</status>\n<return_value>\ns\n</return_value>"},
		// Each call has fresh globals, as in mcp-run-python.
		{"fresh globals", "x = 1", "<status>success</status>"},
		{"error", "x", "<status>run-error</status>\n<error>\nTraceback (most recent call last):\n  File \"main.py\", line 1, in <module>\n    x\nNameError: name 'x' is not defined\n\n</error>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := peer.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python_code", Arguments: map[string]any{"code": tt.code}})
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(res); res.IsError || got != tt.want {
				t.Errorf("run_python_code(%q) = %q (error %v), want %q", tt.code, got, res.IsError, tt.want)
			}
		})
	}
}

// TestMeasurePeer checks that measurePeer runs each side n times in
// alternating blocks, in an order that turns, and that the 1.5x target is judged on the p50s.
func TestMeasurePeer(t *testing.T) {
	var order strings.Builder
	sleep := func(c byte, d time.Duration) func() error {
		return func() error { order.WriteByte(c); time.Sleep(d); return nil }
	}
	// Four times apart, so that a loaded machine's oversleeping (a few
	// milliseconds on each side, seen in a full run) keeps the ratio past
	// 1.5 (1 ms against 2 ms came out 1.38).
	pr, err := measurePeer(2*latencyBlock+1, 0, 0, sleep('p', 5*time.Millisecond), sleep('s', 20*time.Millisecond), sleep('f', 40*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b := latencyBlock
	block := func(sides string) (s string) {
		for _, c := range sides {
			s += strings.Repeat(string(c), b)
		}
		return s
	}
	want := block("psf") + block("sfp") + "fps" // the order turns each round
	if order.String() != want {
		t.Errorf("order %s, want %s", order.String(), want)
	}
	figs := pr.figures()
	var ratio *benchFigure
	for i := range figs {
		if figs[i].Name == "live session p50 / warm Pyodide p50" {
			ratio = &figs[i]
		}
	}
	if ratio == nil || ratio.Met == nil || *ratio.Met || ratio.Value < 1.5 {
		t.Errorf("live session at twice Pyodide's latency: ratio figure %+v, want not met", ratio)
	}
	_, err = measurePeer(3, 0, 0, sleep('p', 0), func() error { return errors.New("boom") }, sleep('f', 0))
	if err == nil || !strings.Contains(err.Error(), "live session: boom") {
		t.Errorf("a failing side: %v", err)
	}
}

// TestBenchPyodide runs `codecell bench --latency-only --pyodide` for a few
// executions and checks that issue 16's figures were measured.
func TestBenchPyodide(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real sandboxes")
	}
	requireProduction(t)
	_, npmDir := npmEnv(t, pyodideDeps)
	figs := benchFigures(t, "--latency-only", "--n", "30", "--pyodide", filepath.Join(npmDir, "pyodide-mcp.mjs"))
	for _, w := range []string{"warm Pyodide p50", "warm Pyodide p99", "live session p50 (same blocks)", "fresh process p50 (same blocks)",
		"live session p50 / warm Pyodide p50", "fresh process p50 / warm Pyodide p50"} {
		if !measured(figs, w) {
			t.Errorf("no measured figure for %q in %+v", w, figs)
		}
	}
	for _, f := range figs {
		if strings.Contains(f.Name, "throughput") {
			t.Errorf("--latency-only measured %q", f.Name)
		}
	}
}

// TestHardenedFigures: the hardened ratios are judged against their own
// targets (p50 at most 2x a spawn's, p99 at most 5x), not production's.
func TestHardenedFigures(t *testing.T) {
	ms := func(v ...int) (d []time.Duration) {
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	// Spawn p50 10 ms; executions p50 19 ms (1.9x), p99 60 ms (6x).
	lr := &latencyRun{exec: ms(19, 19, 19, 60), spawn: ms(10, 10, 10, 10)}
	met := map[string]bool{}
	for _, f := range lr.hardenedFigures() {
		if f.Met != nil {
			met[f.Name] = *f.Met
		}
	}
	want := map[string]bool{
		"hardened: execute_code p50 / bare spawn p50": true,
		"hardened: execute_code p99 / bare spawn p50": false,
	}
	if len(met) != len(want) {
		t.Fatalf("judged figures %v, want %v", met, want)
	}
	for name, ok := range want {
		if got, found := met[name]; !found || got != ok {
			t.Errorf("%s: met %v (found %v), want %v", name, got, found, ok)
		}
	}
}
