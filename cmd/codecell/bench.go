package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/bench"
	"github.com/codecell/codecell/internal/proc"
)

// benchFigure is one measured figure beside its target (BENCHMARKS.md, "codecell bench").
type benchFigure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
	Note   string  `json:"note,omitempty"`
}

func (f *benchFigure) check(ok bool) {
	f.Met = &ok
}

func runBench(ctx context.Context, g *globals, args []string) error {
	fs := g.flags()
	n := fs.Int("n", 500, "trivial executions for the latency figures")
	conc := fs.Int("concurrency", 8, "concurrent executions for the throughput figure")
	dur := fs.Duration("duration", 5*time.Second, "how long the throughput figure runs")
	calls := fs.Int("tool-calls", 5000, "tool calls in one execution for the tool-call figure")
	mdFile := fs.String("markdown", "", "also write the table as Markdown to FILE")
	jsonFile := fs.String("json", "", "also write the figures as JSON to FILE")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the in-process figures) to FILE")
	onlyCalls := fs.Bool("only-tool-calls", false, "measure only the tool-call figure (no codecell serve, no other figures)")
	npmModules := fs.String("npm", filepath.Join("testdata", "npm", "node_modules"), "node_modules with the npm MCP servers of the fourth context-efficiency scenario; missing skips it")
	tsClient := fs.String("ts-client", "", "also measure trivial latency through the TypeScript SDK client: the path of testdata/npm/latency.mjs (needs node and the npm packages beside it)")
	pyodide := fs.String("pyodide", "", "also measure warm Pyodide behind MCP against the live session: the path of testdata/npm/pyodide-mcp.mjs (needs node and the npm packages beside it)")
	latencyOnly := fs.Bool("latency-only", false, "measure only the latency figures (with --ts-client and --pyodide when given): no throughput, tool-call, memory, context or hardened figures")
	dataN := fs.Int("data", 40, "data cells (pandas, numpy, pyplot) for the data-work figures, beside bare spawns and a warm Jupyter kernel; 0 skips them")
	hardenedOnly := fs.Bool("hardened-only", false, "measure only the hardened figures (gVisor; skipped without runsc)")
	tenants := fs.Int("tenants", 0, "measure only one HTTP server shared by this many bearer tokens (namespaces): memory, processes, cold and warm calls, a busy namespace among others")
	nsIdle := fs.Duration("namespace-idle", time.Minute, "with --tenants: the server's sandbox.namespaceIdle")
	spare := fs.Int("spare-pool", 3, "with --tenants: the server's sandbox.sparePool")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if *onlyCalls {
		return benchToolCalls(ctx, g, *calls, *mdFile, *jsonFile)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// Everything runs against a real `codecell serve` over stdio, with a
	// data dir of its own, production isolation and a pool as large as the
	// concurrency, plus an upstream served by this process.
	root, err := os.MkdirTemp("", "codecell-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	os.Chmod(root, 0o711)
	if *tenants > 0 {
		return benchTenants(ctx, g, self, root, *tenants, *nsIdle, *spare, *mdFile, *jsonFile)
	}
	if *hardenedOnly {
		figs, err := hardenedBench(ctx, g, self, root, *n)
		if err != nil {
			return fmt.Errorf("hardened figures: %w", err)
		}
		return writeBench(g, figs, *mdFile, *jsonFile)
	}
	scenarios := bench.NewServers()
	urls, stopScenarios, err := scenarios.ServeHTTP(ctx)
	if err != nil {
		return err
	}
	defer stopScenarios()
	upstreams := bench.MCPServers(urls)
	var npm *bench.NPMServers
	if !*latencyOnly {
		npm, err = bench.NewNPMServers(*npmModules, filepath.Join(root, "npm"))
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "codecell bench: the npm scenario will not run: %v\n", err)
		npm = nil
	} else if npm != nil {
		for name, entry := range npm.MCPServers() {
			upstreams[name] = entry
		}
	}
	cfg := map[string]any{
		"mcpServers": upstreams,
		"sandbox":    map[string]any{"isolation": "production", "pool": max(*conc, 4), "timeout": "120s"},
	}
	cfgPath := filepath.Join(root, "config.json")
	raw, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		return err
	}
	cmd := proc.Command(context.Background(), self, "serve", "--config", cfgPath, "--data-dir", filepath.Join(root, "data"), "--log-level", "error")
	cmd.Stderr = g.stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codecell-bench", Version: version}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("start codecell serve: %w", err)
	}
	defer cs.Close()
	execIn := func(session, code string) (map[string]any, error) {
		args := map[string]any{"code": code}
		if session != "" {
			args["session_id"] = session
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: args})
		if err != nil {
			return nil, err
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		if res.IsError {
			return out, fmt.Errorf("execute_code failed: %s", textOf(res))
		}
		return out, nil
	}
	exec1 := func(code string) (map[string]any, error) { return execIn("", code) }
	fmt.Fprintln(g.stderr, "codecell bench: warming up")
	for i := 0; i < 50; i++ {
		if _, err := exec1("print(1)"); err != nil {
			return err
		}
	}
	// The pool fills in the background (a sandbox start costs tens of ms of
	// CPU); let it settle, with the upstreams, before measuring.
	time.Sleep(3 * time.Second)
	var figs []benchFigure

	// Latency and CPU, beside a bare interpreter spawn measured in the same
	// run: blocks of executions and blocks of spawns alternate, so that a
	// change in the machine's load weighs on both alike.
	serverPid := serveProcess(cmd)
	lm, err := measureLatency(*n, serverPid, func() error { _, err := exec1("print(1)"); return err })
	if err != nil {
		return err
	}
	figs = append(figs, lm.figures()...)

	// The same code in a live session: no new process, the price of a
	// fresh one per execution shown beside it.
	if _, err := execIn("bench", "print(1)"); err != nil {
		return err
	}
	sess := make([]time.Duration, 0, *n)
	for range *n {
		start := time.Now()
		if _, err := execIn("bench", "print(1)"); err != nil {
			return err
		}
		sess = append(sess, time.Since(start))
	}
	s50 := percentile(sess, 0.50)
	figs = append(figs,
		benchFigure{Name: "execute_code in a live session p50 (print(1), no new process)", Value: s50, Unit: "ms"},
		benchFigure{Name: "fresh process p50 / live session p50", Value: percentile(lm.exec, 0.50) / s50, Unit: "x"})

	if *dataN > 0 {
		dataFigs, err := dataBench(ctx, g, execIn, *dataN)
		if err != nil {
			return fmt.Errorf("data-work figures: %w", err)
		}
		figs = append(figs, dataFigs...)
	}

	if *pyodide != "" {
		pyFigs, err := pyodideFigures(ctx, *pyodide, g.stderr, *n, serverPid,
			func() error { _, err := execIn("bench", "print(1)"); return err },
			func() error { _, err := exec1("print(1)"); return err })
		if err != nil {
			return fmt.Errorf("warm Pyodide figure: %w", err)
		}
		figs = append(figs, pyFigs...)
	}

	if *tsClient != "" {
		tsFigs, err := tsLatency(ctx, *tsClient, self, cfgPath, filepath.Join(root, "ts-data"), *n, g.stderr)
		if err != nil {
			return fmt.Errorf("TypeScript client figure: %w", err)
		}
		figs = append(figs, tsFigs...)
	}

	if *latencyOnly {
		return writeBench(g, figs, *mdFile, *jsonFile)
	}

	// Throughput at the given concurrency, beside as many bare spawns at
	// once: five rounds of each in turn, each a fifth of the duration, so
	// that the machine's load weighs on both alike.
	var done, failed, spawned atomic.Int64
	var execTime, spawnTime time.Duration
	for range throughputRounds {
		start := time.Now()
		concurrently(*conc, *dur/throughputRounds, func() {
			if _, err := exec1("print(1)"); err != nil {
				failed.Add(1)
				return
			}
			done.Add(1)
		})
		execTime += time.Since(start)
		start = time.Now()
		concurrently(*conc, *dur/throughputRounds, func() {
			if bareSpawn() == nil {
				spawned.Add(1)
			}
		})
		spawnTime += time.Since(start)
	}
	rate := float64(done.Load()) / execTime.Seconds()
	spawnRate := float64(spawned.Load()) / spawnTime.Seconds()
	f := benchFigure{Name: fmt.Sprintf("throughput at concurrency %d", *conc), Value: rate, Unit: "executions/s"}
	if failed.Load() > 0 {
		f.Note = fmt.Sprintf("%d failed", failed.Load())
	}
	figs = append(figs, f, benchFigure{Name: fmt.Sprintf("bare spawns at concurrency %d (same run)", *conc), Value: spawnRate, Unit: "spawns/s"})
	f = benchFigure{Name: fmt.Sprintf("throughput at concurrency %d / bare spawns at concurrency %d", *conc, *conc), Value: rate / spawnRate, Unit: "x", Target: ">= 3x"}
	f.check(rate >= 3*spawnRate && failed.Load() == 0)
	figs = append(figs, f)

	// Tool calls from code to an upstream that lives in codecell's own
	// process, in one execution: one after another, and from eight threads.
	callFigs, err := toolCallRate(ctx, g, root, *calls)
	if err != nil {
		return fmt.Errorf("tool-call figure: %w", err)
	}
	figs = append(figs, callFigs...)

	// Memory: the server's own RSS once idle, and the proportional set size
	// of the warm sandboxes' processes divided by their number.
	// Idle: two seconds after the last request (the server hands its
	// heap back to the system one second into a quiet spell).
	time.Sleep(2 * time.Second)
	if serverPid > 0 {
		rss := float64(procKB(serverPid, "status", "VmRSS:")) / 1024
		f = benchFigure{Name: "idle server RSS", Value: rss, Unit: "MB", Target: "<= 40 MB"}
		f.check(rss <= 40)
		figs = append(figs, f)
		pss, count := sandboxPSS(serverPid)
		per := float64(pss) / 1024 / float64(max(*conc, 4))
		f = benchFigure{Name: "memory per warm sandbox (PSS)", Value: per, Unit: "MB", Target: "<= 20 MB", Note: fmt.Sprintf("%d processes for %d sandboxes", count, max(*conc, 4))}
		f.check(per <= 20)
		figs = append(figs, f)
	}

	ctxFigs, err := contextEfficiency(ctx, cs, scenarios, npm)
	if err != nil {
		fmt.Fprintf(g.stderr, "codecell bench: context efficiency: %v\n", err)
	}
	figs = append(figs, ctxFigs...)
	// Last, with the production server idle: gVisor's figures, beside
	// bare spawns of their own.
	hardFigs, err := hardenedBench(ctx, g, self, root, *n)
	if err != nil {
		return fmt.Errorf("hardened figures: %w", err)
	}
	figs = append(figs, hardFigs...)
	return writeBench(g, figs, *mdFile, *jsonFile)
}

// writeBench prints the figures, and writes them as Markdown to mdFile and
// as JSON to jsonFile when those are not empty.
func writeBench(g *globals, figs []benchFigure, mdFile, jsonFile string) error {
	printBench(g.stdout, figs)
	if mdFile != "" {
		var b strings.Builder
		writeMarkdown(&b, figs)
		if err := os.WriteFile(mdFile, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	if jsonFile != "" {
		b, _ := json.MarshalIndent(figs, "", "  ")
		if err := os.WriteFile(jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func percentile(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
}

func printBench(w io.Writer, figs []benchFigure) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\ttarget\tmet")
	for _, f := range figs {
		met := ""
		if f.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*f.Met]
		}
		note := ""
		if f.Note != "" {
			note = " (" + f.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s %s%s\t%s\t%s\n", f.Name, strconv.FormatFloat(f.Value, 'f', 2, 64), f.Unit, note, f.Target, met)
	}
	tw.Flush()
}

func writeMarkdown(w io.Writer, figs []benchFigure) {
	fmt.Fprintln(w, "| figure | value | target | met |\n|---|---|---|---|")
	for _, f := range figs {
		met := ""
		if f.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*f.Met]
		}
		v := strconv.FormatFloat(f.Value, 'f', 2, 64) + " " + f.Unit
		if f.Note != "" {
			v += " (" + f.Note + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", f.Name, v, f.Target, met)
	}
}

// benchToolCalls measures and prints the tool-call figure alone: it needs no
// `codecell serve`, scenarios nor warm-up, so a profile of it shows the cost
// per call and little else.
func benchToolCalls(ctx context.Context, g *globals, calls int, mdFile, jsonFile string) error {
	root, err := os.MkdirTemp("", "codecell-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	os.Chmod(root, 0o711)
	figs, err := toolCallRate(ctx, g, root, calls)
	if err != nil {
		return fmt.Errorf("tool-call figure: %w", err)
	}
	return writeBench(g, figs, mdFile, jsonFile)
}

// echoServer is the upstream of the tool-call figure: one echo tool.
func echoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text."}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	return s
}

// toolCallRate runs codecell in this process with an in-process upstream,
// so the figure is codecell's own cost per call: the code's request over the
// channel, policy, the call and the answer back.
func toolCallRate(ctx context.Context, g *globals, root string, calls int) ([]benchFigure, error) {
	cfgPath := filepath.Join(root, "inproc.json")
	cfg := fmt.Sprintf(`{"mcpServers": {"bench": {"command": "in-process"}}, "sandbox": {"isolation": "production", "pool": 1, "timeout": "120s", "maxToolCalls": %d}}`, calls+100)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	ig := &globals{stdout: io.Discard, stderr: g.stderr, name: "bench", configFlag: cfgPath, dataDirFlag: filepath.Join(root, "inproc-data"),
		logLevel: "error", logFormat: "text", inProcess: map[string]*mcp.Server{"bench": echoServer()}}
	a, err := ig.newApp(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer a.close()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	a.upstreams.WaitStarted(wait)
	cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := a.server.MCP().Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codecell-bench"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var figs []benchFigure
	for _, threads := range []int{1, 8} {
		code := fmt.Sprintf(`
import time
from concurrent.futures import ThreadPoolExecutor
from servers.bench import echo
N, T = %d, %d
echo(text="warm")
t0, c0 = time.perf_counter(), time.process_time()
if T == 1:
    for i in range(N):
        echo(text="x")
else:
    with ThreadPoolExecutor(T) as pool:
        list(pool.map(lambda i: echo(text="x"), range(N)))
t1, c1 = time.perf_counter(), time.process_time()
{"rate": N / (t1 - t0), "cpu_us": (c1 - c0) / N * 1e6}
`, calls, threads)
		// CPU per call, beside the rate: on a shared machine the rate
		// follows the load of others, CPU time much less. The host's is
		// this process's (codecell and the upstream), over the whole
		// execution; the sandbox's, the code's process over the loop.
		cpu0 := selfCPU(syscall.RUSAGE_SELF)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code}})
		if err != nil {
			return nil, err
		}
		hostCPU := selfCPU(syscall.RUSAGE_SELF) - cpu0
		if res.IsError {
			return nil, fmt.Errorf("execute_code: %s", textOf(res))
		}
		var out struct {
			Result struct {
				Rate  float64 `json:"rate"`
				CPUUs float64 `json:"cpu_us"`
			} `json:"result"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		f := benchFigure{Name: fmt.Sprintf("tool calls per second in one execution, in-process upstream (%d thread(s))", threads), Value: out.Result.Rate, Unit: "calls/s", Target: ">= 5000/s"}
		f.check(out.Result.Rate >= 5000)
		figs = append(figs, f,
			benchFigure{Name: fmt.Sprintf("host CPU per tool call (%d thread(s); codecell and the in-process upstream)", threads), Value: float64(hostCPU.Microseconds()) / float64(calls), Unit: "µs"},
			benchFigure{Name: fmt.Sprintf("sandbox CPU per tool call (%d thread(s); the code's process)", threads), Value: out.Result.CPUUs, Unit: "µs"})
	}
	return figs, nil
}

func serveProcess(cmd *exec.Cmd) int {
	if cmd.Process == nil {
		return 0
	}
	return cmd.Process.Pid
}

// procKB reads a "Key: N kB" line of /proc/<pid>/<file>.
func procKB(pid int, file, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

// sandboxPSS sums the proportional set size of every descendant of pid
// (the sandboxes: bubblewrap, the fork servers and their waiting children)
// other than upstream servers, which are not sandboxes.
func sandboxPSS(pid int) (kb int64, count int) {
	children := map[int][]int{}
	for _, st := range procStats() {
		children[st.ppid] = append(children[st.ppid], st.pid)
	}
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
			if strings.Contains(string(cmdline), "bwrap") || strings.Contains(string(cmdline), "codecell_runner") {
				kb += procKB(c, "smaps_rollup", "Pss:")
				count++
			}
			walk(c)
		}
	}
	walk(pid)
	return kb, count
}
