package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkExec is a trivial execution straight on the Manager, without MCP,
// per level: the sandbox's share of execute_code latency.
func BenchmarkExec(b *testing.B) {
	for _, level := range []Level{Development, Production, Hardened} {
		b.Run(string(level), func(b *testing.B) {
			m, ws := newTestManager(b, level, Limits{}, 2)
			exec1(b, m, ws, "pass", 20*time.Second)
			for b.Loop() {
				r := m.Exec(context.Background(), Request{Workspace: ws, Code: "print(1)", Timeout: 20 * time.Second})
				if !r.OK {
					b.Fatalf("%+v", r.Error)
				}
			}
		})
	}
}

// BenchmarkSessionExec is a trivial execution in a live session, beside
// BenchmarkExec's fresh process per execution.
func BenchmarkSessionExec(b *testing.B) {
	m, ws := newTestManager(b, Production, Limits{}, 1)
	s, err := m.OpenSession(context.Background(), Request{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		r := s.Exec(context.Background(), Request{Workspace: ws, Code: "n = globals().get('n', 0) + 1\nprint(n)", Timeout: 20 * time.Second})
		if !r.OK {
			b.Fatalf("%+v", r.Error)
		}
	}
}

// BenchmarkExecPaced is a trivial execution on a full pool of 8, the next
// one started only once the pool is full again: the latency of one
// execution with nothing of the previous one's clean-up (the process's
// exit, the next fork and its preparation) running beside it. Beside it, a
// live session's execution, paced alike. p50-ms and p99-ms are reported.
func BenchmarkExecPaced(b *testing.B) {
	for _, kind := range []string{"fresh", "session"} {
		b.Run(kind, func(b *testing.B) {
			m, ws := newTestManager(b, Production, Limits{}, 8)
			exec1(b, m, ws, "pass", 20*time.Second)
			run := func(req Request) *Result { return m.Exec(context.Background(), req) }
			if kind == "session" {
				s, err := m.OpenSession(context.Background(), Request{Workspace: ws})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				run = func(req Request) *Result { return s.Exec(context.Background(), req) }
			}
			var times []time.Duration
			for b.Loop() {
				b.StopTimer()
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
					if st := m.PoolStats(); st.Idle >= st.Size && (kind == "session" || st.Busy == 0) || time.Now().After(deadline) {
						break
					}
				}
				b.StartTimer()
				start := time.Now()
				r := run(Request{Workspace: ws, Code: "print(1)", Timeout: 20 * time.Second})
				times = append(times, time.Since(start))
				if !r.OK {
					b.Fatalf("%+v", r.Error)
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkStart is a production sandbox's cold start, until its fork
// server is ready, and its kill: with the runner as source, and as the
// bytecode runnerFor gives the Manager's interpreter; then with 1,000
// mounts made on the host after the Manager (other namespaces'
// workspaces), started from the launcher's mount namespace and, as before
// it, from codecell's own. cpu-ms/op is the CPU that the sandbox's
// processes (bubblewrap's, the interpreter's) ran for until it was ready.
func BenchmarkStart(b *testing.B) {
	for _, kind := range []string{"source", "bytecode", "mounted", "mounted-no-launcher"} {
		b.Run(kind, func(b *testing.B) {
			m, ws := newTestManager(b, Production, Limits{}, 1)
			if err := m.PrepareDir(ws); err != nil {
				b.Fatal(err)
			}
			if kind == "source" {
				// As if compiling had failed for this interpreter.
				m.bytecode.python = interpreterOf(python)
			}
			if strings.HasPrefix(kind, "mounted") {
				mountMany(b, 1000)
			}
			if kind == "mounted-no-launcher" {
				m.launch.close()
				m.launch = nil
			}
			tg := m.defaultTarget(ws)
			var cpu time.Duration
			for b.Loop() {
				sb, err := m.start(context.Background(), tg)
				if err != nil {
					b.Fatal(err)
				}
				cpu += treeCPU(sb.(*zygote).cmd.Process.Pid)
				sb.kill()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// mountMany mounts n small tmpfs on the host until the benchmark ends, as
// a server with n namespaces' workspaces mounted has them.
func mountMany(b *testing.B, n int) {
	if os.Geteuid() != 0 {
		b.Skip("mounting needs root")
	}
	dir := b.TempDir()
	for i := range n {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(p, 0o700); err != nil {
			b.Fatal(err)
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", 0, "size=64k"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
	}
}

// treeCPU is the CPU time that pid and its descendants alive ran for, from
// the scheduler's account of each of their threads (schedstat).
func treeCPU(pid int) time.Duration {
	var total time.Duration
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, task := range tasks {
		if stat, err := os.ReadFile(filepath.Join(task, "schedstat")); err == nil {
			if ns, err := strconv.ParseInt(strings.Fields(string(stat))[0], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
		children, _ := os.ReadFile(filepath.Join(task, "children"))
		for _, child := range strings.Fields(string(children)) {
			if c, err := strconv.Atoi(child); err == nil {
				total += treeCPU(c)
			}
		}
	}
	return total
}
