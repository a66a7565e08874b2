package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchCommand runs a small `codecell bench` and checks that every
// figure of BENCHMARKS.md ("codecell bench") was measured and written as JSON and Markdown.
func TestBenchCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real sandboxes and upstreams for half a minute")
	}
	requireProduction(t)
	dir := t.TempDir()
	mdFile := filepath.Join(dir, "bench.md")
	figs := benchFigures(t, "--n", "30", "--duration", "1s", "--tool-calls", "300", "--markdown", mdFile,
		"--npm", filepath.Join("..", "..", "testdata", "npm", "node_modules"))
	want := []string{"latency p50", "latency p99", "bare python3", "p50 / bare spawn p50", "p99 / bare spawn p50",
		"CPU per trivial execution", "CPU per bare spawn", "page faults per trivial execution", "live session p50",
		"throughput at concurrency 8", "bare spawns at concurrency 8", "tool calls per second",
		"host CPU per tool call", "sandbox CPU per tool call",
		"idle server RSS", "per warm sandbox", "document-move", "table-filter", "cross-server-join", "npm-file-to-memory"}
	for _, w := range want {
		if !measured(figs, w) {
			t.Errorf("no measured figure for %q in %+v", w, figs)
		}
	}
	md, _ := os.ReadFile(mdFile)
	if !strings.HasPrefix(string(md), "| figure | value | target | met |") {
		t.Errorf("markdown: %s", md)
	}
}

// TestBenchToolCallsOnly runs the tool-call figure alone (bench
// --only-tool-calls) and checks its figures, and that nothing else ran.
func TestBenchToolCallsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real sandbox")
	}
	requireProduction(t)
	figs := benchFigures(t, "--only-tool-calls", "--tool-calls", "300")
	var names []string
	for _, f := range figs {
		if f.Value <= 0 {
			t.Errorf("%s: not measured (%v)", f.Name, f.Value)
		}
		names = append(names, f.Name)
	}
	for _, w := range []string{"tool calls per second", "host CPU per tool call", "sandbox CPU per tool call"} {
		for _, threads := range []string{"(1 thread(s)", "(8 thread(s)"} {
			n := 0
			for _, name := range names {
				if strings.Contains(name, w) && strings.Contains(name, threads) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d figures for %q %s, want 1: %q", n, w, threads, names)
			}
		}
	}
	if len(figs) != 6 {
		t.Errorf("%d figures, want the 6 of the tool-call figure: %q", len(figs), names)
	}
}

// TestBenchTypeScriptClient runs the TypeScript SDK client's latency
// figure (bench --ts-client) for a few executions against the built binary.
func TestBenchTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real sandboxes")
	}
	requireProduction(t)
	_, npmDir := conformanceEnv(t)
	dir := reachableDir(t)
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(testConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	figs, err := tsLatency(context.Background(), filepath.Join(npmDir, "latency.mjs"), binary, cfg, filepath.Join(dir, "data"), 5, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, w := range []string{"p50, TypeScript SDK client", "p99, TypeScript SDK client", "bare python3", "TypeScript client: execute_code p50 / bare spawn p50"} {
		found := false
		for _, f := range figs {
			if strings.Contains(f.Name, w) && f.Value > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("no measured figure for %q in %+v", w, figs)
		}
	}
}

// benchFigures runs `codecell bench` with args, and returns the figures it
// wrote as JSON.
func benchFigures(t *testing.T, args ...string) []benchFigure {
	t.Helper()
	jsonFile := filepath.Join(t.TempDir(), "bench.json")
	out, code := runCLI(t, append([]string{"bench", "--json", jsonFile}, args...)...)
	if code != 0 {
		t.Fatalf("bench exit %d:\n%s", code, out)
	}
	var figs []benchFigure
	b, err := os.ReadFile(jsonFile)
	if err != nil || json.Unmarshal(b, &figs) != nil {
		t.Fatalf("bench JSON: %v\n%s", err, b)
	}
	return figs
}

// measured says whether a figure whose name contains name has a value.
func measured(figs []benchFigure, name string) bool {
	for _, f := range figs {
		if strings.Contains(f.Name, name) && f.Value > 0 {
			return true
		}
	}
	return false
}
