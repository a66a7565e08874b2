package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/proc"
)

// pyodidePeer is a warm Pyodide behind an MCP server over stdio
// (testdata/npm/pyodide-mcp.mjs run by node): one interpreter, loaded once,
// that every run_python_code call reuses. It is the peer of issue 16's
// live-session figure. Close ends it.
type pyodidePeer struct {
	cs  *mcp.ClientSession
	pid int
}

// startPyodide starts script with node and connects to it with the same
// Go SDK client as the bench's codecell. Connecting waits for Pyodide to
// load (seconds): the server answers initialize only then.
func startPyodide(ctx context.Context, script string, stderr io.Writer) (*pyodidePeer, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, err
	}
	cmd := proc.Command(context.Background(), node, script)
	cmd.Stderr = stderr
	// proc.Command's Pdeathsig: a bench that dies leaves no interpreter
	// behind. The transport's Close ends it otherwise (stdin closed, then
	// SIGTERM, then SIGKILL).
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codecell-bench", Version: version}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", script, err)
	}
	return &pyodidePeer{cs: cs, pid: serveProcess(cmd)}, nil
}

// run runs code with run_python_code and returns its output lines: the
// result's <output> block.
func (p *pyodidePeer) run(ctx context.Context, code string) (string, error) {
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python_code", Arguments: map[string]any{"code": code}})
	if err != nil {
		return "", err
	}
	text := textOf(res)
	if res.IsError || !strings.HasPrefix(text, "<status>success</status>") {
		return "", fmt.Errorf("run_python_code failed: %s", text)
	}
	_, out, _ := strings.Cut(text, "<output>\n")
	out, _, _ = strings.Cut(out, "</output>")
	return out, nil
}

// Close ends the server.
func (p *pyodidePeer) Close() error { return p.cs.Close() }

// peerRun is what measurePeer saw: the latency of each trivial execution in
// warm Pyodide, in codecell's live session and in a fresh process, and the
// CPU time the warm Pyodide's node process and codecell (server and
// sandboxes) used for the first two.
type peerRun struct {
	pyodide, session, fresh []time.Duration
	pyodideCPU, sessionCPU  time.Duration
}

// pyodideFigures starts the warm Pyodide of script and, after 50 calls to
// warm it, measures it against session (print(1) in codecell's live
// session) and fresh (print(1) in a fresh process) with measurePeer.
func pyodideFigures(ctx context.Context, script string, stderr io.Writer, n, serverPid int, session, fresh func() error) ([]benchFigure, error) {
	peer, err := startPyodide(ctx, script, stderr)
	if err != nil {
		return nil, err
	}
	defer peer.Close()
	run := func() error {
		out, err := peer.run(ctx, "print(1)")
		if err == nil && out != "1\n" {
			err = fmt.Errorf("print(1) printed %q", out)
		}
		return err
	}
	for range 50 {
		if err := run(); err != nil {
			return nil, err
		}
	}
	pr, err := measurePeer(n, peer.pid, serverPid, run, session, fresh)
	if err != nil {
		return nil, err
	}
	return pr.figures(), nil
}

// measurePeer runs n trivial executions each in warm Pyodide, in a live
// session and in a fresh process, in alternating blocks so that a change in
// the machine's load weighs on all three alike. The order turns each round,
// so that no side always runs right after the same other one (a fresh
// process leaves its sandbox's fork server work to do after it answers).
func measurePeer(n, pyodidePid, serverPid int, pyodide, session, fresh func() error) (*peerRun, error) {
	pr := &peerRun{}
	sides := []struct {
		name string
		run  func() error
		lat  *[]time.Duration
		pid  int            // whose CPU time is counted, 0 for none
		cpu  *time.Duration // where
	}{
		{"warm pyodide", pyodide, &pr.pyodide, pyodidePid, &pr.pyodideCPU},
		{"live session", session, &pr.session, serverPid, &pr.sessionCPU},
		{"fresh process", fresh, &pr.fresh, 0, nil},
	}
	for round := 0; len(pr.pyodide) < n; round++ {
		k := min(latencyBlock, n-len(pr.pyodide))
		for i := range sides {
			sd := sides[(round+i)%len(sides)]
			_, cpu0, _ := treeCPU(sd.pid)
			for range k {
				start := time.Now()
				if err := sd.run(); err != nil {
					return nil, fmt.Errorf("%s: %w", sd.name, err)
				}
				*sd.lat = append(*sd.lat, time.Since(start))
			}
			if sd.cpu != nil {
				_, cpu1, _ := treeCPU(sd.pid)
				*sd.cpu += cpu1 - cpu0
			}
		}
	}
	return pr, nil
}

// figures are issue 16's: the live session's p50 against warm Pyodide's
// (at most 1.5x), and what a fresh process per execution costs against it.
func (pr *peerRun) figures() []benchFigure {
	y50, y99 := percentile(pr.pyodide, 0.50), percentile(pr.pyodide, 0.99)
	s50, s99 := percentile(pr.session, 0.50), percentile(pr.session, 0.99)
	f50 := percentile(pr.fresh, 0.50)
	ms := func(d time.Duration) float64 { return msEach(d, len(pr.pyodide)) }
	ratio := benchFigure{Name: "live session p50 / warm Pyodide p50", Value: s50 / y50, Unit: "x", Target: "<= 1.5x"}
	ratio.check(s50 <= 1.5*y50)
	return []benchFigure{
		{Name: "warm Pyodide p50 (print(1), run_python_code over stdio, alternating blocks)", Value: y50, Unit: "ms"},
		{Name: "warm Pyodide p99", Value: y99, Unit: "ms"},
		{Name: "live session p50 (same blocks)", Value: s50, Unit: "ms"},
		{Name: "live session p99 (same blocks)", Value: s99, Unit: "ms"},
		{Name: "fresh process p50 (same blocks)", Value: f50, Unit: "ms"},
		ratio,
		{Name: "live session p99 / warm Pyodide p99", Value: s99 / y99, Unit: "x"},
		{Name: "fresh process p50 / warm Pyodide p50", Value: f50 / y50, Unit: "x", Note: "what a fresh process per execution costs"},
		{Name: "CPU per call, warm Pyodide (node process)", Value: ms(pr.pyodideCPU), Unit: "ms"},
		{Name: "CPU per live-session execution (server and sandboxes)", Value: ms(pr.sessionCPU), Unit: "ms"},
	}
}
