package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codecell/codecell/internal/proc"
)

// latencyBlock is how many executions, then how many spawns, run in turn.
const latencyBlock = 25

// throughputRounds is how many times the throughput figure's executions and
// spawns take turns.
const throughputRounds = 5

// latencyRun is what measureLatency saw: the latency of each trivial
// execution and of each bare spawn, and the CPU time each side used.
type latencyRun struct {
	exec, spawn []time.Duration
	// CPU time used while the executions ran: by the server process, by
	// its descendants (the sandboxes), and by this process (the MCP client;
	// the scenario upstreams it serves are idle then).
	serverCPU, sandboxCPU, clientCPU time.Duration
	spawnCPU                         time.Duration // used by the bare spawns, from wait4
	// machineCPU is the busy time of the whole machine while the
	// executions ran, other load included: an upper bound that also
	// holds what leaves the server's tree (a gVisor sentry that outlives
	// its runsc run is reparented away before anyone reaps it).
	machineCPU time.Duration
	// Page faults (minor and major) in the sandboxes while the executions
	// ran, and in the bare spawns.
	sandboxFaults, spawnFaults int64
}

// measureLatency runs n trivial executions and n bare spawns, alternating
// blocks of each.
func measureLatency(n, serverPid int, run func() error) (*latencyRun, error) {
	lr := &latencyRun{exec: make([]time.Duration, 0, n), spawn: make([]time.Duration, 0, n)}
	for len(lr.exec) < n {
		k := min(latencyBlock, n-len(lr.exec))
		server0, tree0, faults0 := treeCPU(serverPid)
		self0, busy0 := selfCPU(syscall.RUSAGE_SELF), machineBusy()
		for range k {
			start := time.Now()
			if err := run(); err != nil {
				return nil, err
			}
			lr.exec = append(lr.exec, time.Since(start))
		}
		self1, busy1 := selfCPU(syscall.RUSAGE_SELF), machineBusy()
		lr.machineCPU += busy1 - busy0
		server1, tree1, faults1 := treeCPU(serverPid)
		lr.serverCPU += server1 - server0
		lr.sandboxCPU += (tree1 - server1) - (tree0 - server0)
		lr.sandboxFaults += faults1 - faults0
		lr.clientCPU += self1 - self0
		children0, chFaults0 := selfCPU(syscall.RUSAGE_CHILDREN), childFaults()
		for range k {
			start := time.Now()
			if err := bareSpawn(); err != nil {
				return nil, fmt.Errorf("bare python spawn: %w", err)
			}
			lr.spawn = append(lr.spawn, time.Since(start))
		}
		lr.spawnCPU += selfCPU(syscall.RUSAGE_CHILDREN) - children0
		lr.spawnFaults += childFaults() - chFaults0
	}
	return lr, nil
}

// figures are the latency and CPU figures of BENCHMARKS.md ("codecell
// bench"), each a ratio to the
// bare spawn's measured in the same run.
func (lr *latencyRun) figures() []benchFigure {
	p50, p99 := percentile(lr.exec, 0.50), percentile(lr.exec, 0.99)
	s50, s99 := percentile(lr.spawn, 0.50), percentile(lr.spawn, 0.99)
	n := float64(len(lr.exec))
	ms := func(d time.Duration) float64 { return msEach(d, len(lr.exec)) }
	cpu, spawnCPU := ms(lr.serverCPU+lr.sandboxCPU+lr.clientCPU), ms(lr.spawnCPU)
	figs := []benchFigure{
		{Name: "execute_code latency p50 (print(1), stdio, production)", Value: p50, Unit: "ms"},
		{Name: "execute_code latency p99", Value: p99, Unit: "ms"},
		{Name: "bare python3 -I -S -c pass p50 (same run)", Value: s50, Unit: "ms"},
		{Name: "bare python3 -I -S -c pass p99 (same run)", Value: s99, Unit: "ms"},
	}
	figs = append(figs, spawnRatios("", p50, p99, s50, 0.25, 1.25)...)
	figs = append(figs,
		benchFigure{Name: "CPU per trivial execution (client, server and sandboxes)", Value: cpu, Unit: "ms",
			Note: fmt.Sprintf("server %.2f ms, sandboxes %.2f ms, client %.2f ms", ms(lr.serverCPU), ms(lr.sandboxCPU), ms(lr.clientCPU))},
		benchFigure{Name: "CPU per bare spawn (same run)", Value: spawnCPU, Unit: "ms"})
	f := benchFigure{Name: "CPU per trivial execution / per bare spawn", Value: cpu / spawnCPU, Unit: "x", Target: "<= 0.5x"}
	f.check(cpu <= 0.5*spawnCPU)
	return append(figs, f,
		benchFigure{Name: "page faults per trivial execution (sandboxes)", Value: float64(lr.sandboxFaults) / n, Unit: "faults"},
		benchFigure{Name: "page faults per bare spawn (same run)", Value: float64(lr.spawnFaults) / n, Unit: "faults"})
}

// childFaults is the page faults, minor and major, of this process's
// waited-for children.
func childFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return ru.Minflt + ru.Majflt
}

// concurrently calls f from workers goroutines, over and over, for d.
func concurrently(workers int, d time.Duration, f func()) {
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				f()
			}
		}()
	}
	wg.Wait()
}

// bareSpawn starts a bare interpreter that does nothing, and waits for it.
func bareSpawn() error {
	return proc.Command(context.Background(), "/usr/bin/python3", "-I", "-S", "-c", "pass").Run()
}

// selfCPU is the user and system time of this process (RUSAGE_SELF) or of
// its waited-for children (RUSAGE_CHILDREN).
func selfCPU(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
}

// machineBusy is the time every CPU of the machine has spent not idle,
// from the first line of /proc/stat; zero where it cannot be read.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	// user nice system idle iowait irq softirq steal: all but idle and iowait.
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / userHZ
}

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on
// every architecture Linux runs Go on.
const userHZ = 100

// treeCPU is the CPU time that pid has used itself (own), and with every
// live descendant (tree), each process with the children it has waited for:
// a sandbox's executions, reaped by its fork server, count, and so do
// sandboxes the server discarded. faults are the page faults of the
// descendants, counted alike. Zeros when pid is 0.
func treeCPU(pid int) (own, tree time.Duration, faults int64) {
	if pid <= 0 {
		return 0, 0, 0
	}
	var ownTicks int64
	flt := map[int]int64{}
	parent := map[int]int{}
	ticks := map[int]int64{}
	for _, st := range procStats() {
		// After the command: state, ppid, ..., minflt (10th field of the
		// line), cminflt, majflt, cmajflt, utime, stime, cutime, cstime.
		p, f := st.pid, st.fields
		if len(f) < 15 {
			continue
		}
		parent[p] = st.ppid
		for _, k := range f[7:11] {
			v, _ := strconv.ParseInt(k, 10, 64)
			flt[p] += v
		}
		for j, k := range f[11:15] {
			v, _ := strconv.ParseInt(k, 10, 64)
			ticks[p] += v
			if p == pid && j < 2 {
				ownTicks += v
			}
		}
	}
	var sum int64
	for p := range ticks {
		for q := p; q > 0; q = parent[q] {
			if q == pid {
				sum += ticks[p]
				if p != pid {
					faults += flt[p]
				}
				break
			}
		}
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }
	return tick(ownTicks), tick(sum), faults
}

// tsLatency runs script (testdata/npm/latency.mjs) with node: the official
// TypeScript SDK client times n trivial executions against a `codecell
// serve` of its own (the same config, another data dir). As many bare spawns
// follow at once, for the ratios.
func tsLatency(ctx context.Context, script, self, cfgPath, dataDir string, n int, stderr io.Writer) ([]benchFigure, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, err
	}
	cmd := proc.Command(ctx, node, script, "--n", strconv.Itoa(n), "--",
		self, "serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "error")
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", script, err)
	}
	var res struct {
		MS []float64 `json:"ms"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.MS) == 0 {
		return nil, fmt.Errorf("%s printed %q", script, out)
	}
	lat := make([]time.Duration, len(res.MS))
	for i, ms := range res.MS {
		lat[i] = time.Duration(ms * float64(time.Millisecond))
	}
	spawn := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := bareSpawn(); err != nil {
			return nil, fmt.Errorf("bare python spawn: %w", err)
		}
		spawn = append(spawn, time.Since(start))
	}
	p50, p99, s50 := percentile(lat, 0.50), percentile(lat, 0.99), percentile(spawn, 0.50)
	figs := []benchFigure{
		{Name: "execute_code latency p50, TypeScript SDK client", Value: p50, Unit: "ms"},
		{Name: "execute_code latency p99, TypeScript SDK client", Value: p99, Unit: "ms"},
		{Name: "bare python3 -I -S -c pass p50 (right after)", Value: s50, Unit: "ms"},
	}
	return append(figs, spawnRatios("TypeScript client: ", p50, p99, s50, 0.25, 1.25)...), nil
}

// spawnRatios are an execution's p50 and p99 over a bare spawn's p50, beside
// issue 16's targets (0.25x and 1.25x); prefix names the client.
func spawnRatios(prefix string, p50, p99, s50, max50, max99 float64) []benchFigure {
	f50 := benchFigure{Name: prefix + "execute_code p50 / bare spawn p50", Value: p50 / s50, Unit: "x", Target: fmt.Sprintf("<= %gx", max50)}
	f50.check(p50 <= max50*s50)
	f99 := benchFigure{Name: prefix + "execute_code p99 / bare spawn p50", Value: p99 / s50, Unit: "x", Target: fmt.Sprintf("<= %gx", max99)}
	f99.check(p99 <= max99*s50)
	return []benchFigure{f50, f99}
}

// msEach is d, a total over n runs, in milliseconds per run.
func msEach(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(n)
}

// procStat is one process's /proc/<pid>/stat: its parent, and the fields
// after the command (state, ppid, ...).
type procStat struct {
	pid, ppid int
	fields    []string
}

// procStats reads the stat of every process; those that end meanwhile are
// left out.
func procStats() []procStat {
	var out []procStat
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		out = append(out, procStat{pid: p, ppid: pp, fields: f})
	}
	return out
}
