package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/codecell/codecell/internal/proc"
)

// The data-work cells of issue 29: the imports most data work starts with
// and a small groupby, and a figure. Each prints a number the bench checks,
// so that a cell that failed is never timed as a fast one.
const (
	dataImports = "import pandas as pd, numpy as np, matplotlib.pyplot as plt\n"
	dataCell    = dataImports + "df = pd.DataFrame({'k': np.arange(10000) % 10, 'v': np.arange(10000.0)})\n" +
		"print(float(df.groupby('k')['v'].sum().iloc[3]))\n"
	dataWant   = "4998000.0"
	figureCell = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\nprint(len(plt.get_fignums()))\n"
	// A bare spawn shows its figure the way codecell does: as PNG bytes.
	figureSpawn = figureCell + "import io\nb = io.BytesIO()\nplt.savefig(b, format='png')\nassert b.getvalue()[:4] == b'\\x89PNG'\n"
)

// kernelDriver runs a warm Jupyter kernel (ipykernel, started by
// jupyter_client as a notebook would), imports dataImports in it once, then
// for each number n on stdin runs the cell n times and prints the seconds
// each took, as JSON. Its timings are what a notebook user waits: the
// request to the kernel, the execution, the reply.
const kernelDriver = `
import json, sys, time
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="python3")
def run(code):
    out = []
    t = time.perf_counter()
    reply = kc.execute_interactive(code, timeout=120, output_hook=lambda m: out.append(m))
    took = time.perf_counter() - t
    if reply["content"]["status"] != "ok":
        sys.exit("the kernel failed: %s" % reply["content"])
    text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
    return took, text
try:
    run(sys.argv[1])
    print("ready", flush=True)
    for line in sys.stdin:
        res = [run(sys.argv[2]) for _ in range(int(line))]
        print(json.dumps({"seconds": [t for t, _ in res], "stdout": res[-1][1]}), flush=True)
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
`

// jupyterKernel is a running kernelDriver.
type jupyterKernel struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startKernel(ctx context.Context, python string) (*jupyterKernel, error) {
	cmd := proc.Command(ctx, python, "-c", kernelDriver, dataImports, dataCell)
	// ipykernel's debugger warns about frozen modules on every start.
	cmd.Env = append(os.Environ(), "MPLBACKEND=Agg", "PYDEVD_DISABLE_FILE_VALIDATION=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	k := &jupyterKernel{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	if !k.out.Scan() || k.out.Text() != "ready" {
		k.close()
		return nil, fmt.Errorf("the Jupyter kernel did not start (is python3-ipykernel installed?): %s", lastLine(stderr.String()))
	}
	return k, nil
}

// run runs the cell n times in the kernel and returns each time.
func (k *jupyterKernel) run(n int) ([]time.Duration, error) {
	fmt.Fprintln(k.in, n)
	if !k.out.Scan() {
		return nil, errors.New("the Jupyter kernel ended")
	}
	var r struct {
		Seconds []float64 `json:"seconds"`
		Stdout  string    `json:"stdout"`
	}
	if err := json.Unmarshal(k.out.Bytes(), &r); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Stdout) != dataWant {
		return nil, fmt.Errorf("the kernel printed %q, not %s", r.Stdout, dataWant)
	}
	d := make([]time.Duration, len(r.Seconds))
	for i, s := range r.Seconds {
		d[i] = time.Duration(s * float64(time.Second))
	}
	return d, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

func (k *jupyterKernel) close() {
	k.in.Close()
	k.cmd.Wait()
}

// spawnCell runs code in a bare interpreter, as a script would, and checks
// what it printed.
func spawnCell(python, code, want string) (time.Duration, error) {
	start := time.Now()
	cmd := proc.Command(context.Background(), python, "-I", "-c", code)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MPLBACKEND=Agg", "HOME=" + os.Getenv("HOME")}
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil || strings.TrimSpace(string(out)) != want {
		return 0, fmt.Errorf("bare spawn: %v: %s", err, out)
	}
	return took, nil
}

// dataBench measures data work (issue 29): the data cell in a fresh
// execution, in a live session, in a bare spawn and in a warm Jupyter
// kernel, and a figure in a fresh execution and in a bare spawn, in blocks
// that take turns so that the machine's load weighs on each alike.
// Without ipykernel the kernel's figures are left out.
func dataBench(ctx context.Context, g *globals, execIn func(session, code string) (map[string]any, error), n int) ([]benchFigure, error) {
	const python = "/usr/bin/python3"
	check := func(out map[string]any, want string) error {
		if s, _ := out["stdout"].(string); strings.TrimSpace(s) != want {
			return fmt.Errorf("the cell printed %q, not %s", s, want)
		}
		return nil
	}
	kernel, err := startKernel(ctx, python)
	if err != nil {
		fmt.Fprintf(g.stderr, "codecell bench: no Jupyter kernel figures: %v\n", err)
	} else {
		defer kernel.close()
	}
	if out, err := execIn("data", dataImports); err != nil || out == nil {
		return nil, fmt.Errorf("data session: %v", err)
	}
	// As for the trivial figures: warm-up calls, then time for the pool of
	// preloaded sandboxes, which grows as the calls follow each other, to
	// settle (each start imports the preload, half a second of CPU).
	for range 10 {
		if _, err := execIn("", dataCell); err != nil {
			return nil, fmt.Errorf("data warm-up: %w", err)
		}
	}
	time.Sleep(3 * time.Second)
	var fresh, session, spawn, inKernel, figFresh, figSpawn []time.Duration
	const block = 10
	// timed runs code once in session ("" for a fresh execution) and
	// checks what it printed and, for a figure, that an image came back.
	timed := func(session, code, want string, image bool) (time.Duration, error) {
		start := time.Now()
		out, err := execIn(session, code)
		took := time.Since(start)
		if err == nil {
			err = check(out, want)
		}
		if err == nil && image && out["images"] == nil {
			err = errors.New("no image came back")
		}
		return took, err
	}
	for len(fresh) < n {
		for range block {
			d, err := timed("", dataCell, dataWant, false)
			if err != nil {
				return nil, fmt.Errorf("data cell: %w", err)
			}
			fresh = append(fresh, d)
		}
		for range block {
			d, err := timed("data", dataCell, dataWant, false)
			if err != nil {
				return nil, fmt.Errorf("data cell in a session: %w", err)
			}
			session = append(session, d)
		}
		if kernel != nil {
			d, err := kernel.run(block)
			if err != nil {
				return nil, err
			}
			inKernel = append(inKernel, d...)
		}
		for range block {
			d, err := timed("", figureCell, "1", true)
			if err != nil {
				return nil, fmt.Errorf("figure cell: %w", err)
			}
			figFresh = append(figFresh, d)
		}
		// A bare spawn takes most of a second: two of each per block.
		for range 2 {
			d, err := spawnCell(python, dataCell, dataWant)
			if err != nil {
				return nil, err
			}
			spawn = append(spawn, d)
			if d, err = spawnCell(python, figureSpawn, "1"); err != nil {
				return nil, err
			}
			figSpawn = append(figSpawn, d)
		}
	}
	f50, s50, sp50, fig50, figSp50 := percentile(fresh, .5), percentile(session, .5), percentile(spawn, .5), percentile(figFresh, .5), percentile(figSpawn, .5)
	figs := []benchFigure{
		{Name: "data cell (import pandas, numpy, pyplot; groupby) fresh execution p50", Value: f50, Unit: "ms"},
		{Name: "data cell in a live session p50", Value: s50, Unit: "ms"},
		{Name: "data cell in a bare python3 spawn p50 (same run)", Value: sp50, Unit: "ms"},
	}
	ratio := benchFigure{Name: "data cell: fresh execution p50 / bare spawn p50", Value: f50 / sp50, Unit: "x", Target: "<= 0.1x"}
	ratio.check(f50/sp50 <= 0.1)
	figs = append(figs, ratio)
	if kernel != nil {
		k50 := percentile(inKernel, .5)
		figs = append(figs, benchFigure{Name: "data cell in a warm Jupyter kernel p50 (imports done, same run)", Value: k50, Unit: "ms"})
		r := benchFigure{Name: "data cell: fresh execution p50 / warm kernel p50", Value: f50 / k50, Unit: "x", Target: "<= 1.5x"}
		r.check(f50/k50 <= 1.5)
		figs = append(figs, r)
		r = benchFigure{Name: "data cell: live session p50 / warm kernel p50", Value: s50 / k50, Unit: "x", Target: "<= 1.0x"}
		r.check(s50/k50 <= 1.0)
		figs = append(figs, r)
	}
	figs = append(figs,
		benchFigure{Name: "figure (plt.plot, image back) fresh execution p50", Value: fig50, Unit: "ms"},
		benchFigure{Name: "figure in a bare python3 spawn p50 (savefig to PNG, same run)", Value: figSp50, Unit: "ms"})
	r := benchFigure{Name: "figure: fresh execution p50 / bare spawn p50", Value: fig50 / figSp50, Unit: "x", Target: "<= 0.2x"}
	r.check(fig50/figSp50 <= 0.2)
	return append(figs, r), nil
}
