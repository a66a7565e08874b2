package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/seccomp"
	"github.com/codecell/codecell/internal/textcut"
)

// These tests breach every limit for real and check that the breach ends only
// that execution: the next one on the same Manager must still answer.

// levelManager is newTestManager plus one trivial execution, so that a level
// whose sandbox is not implemented yet skips instead of failing every case.
// It returns once a warm sandbox waits in the pool, so that the next
// execution's timeout covers the code alone, not a sandbox's start.
func levelManager(t *testing.T, level Level, lim Limits) (*Manager, string) {
	t.Helper()
	m, ws := newTestManager(t, level, lim, 1)
	r := exec1(t, m, ws, "print(1)", slack)
	if r.Error != nil && r.Error.Type == ErrSandbox && strings.Contains(r.Error.Message, "not yet implemented") {
		t.Skipf("level %s: %s", level, r.Error.Message)
	}
	if !r.OK || r.Stdout != "1\n" {
		t.Fatalf("print(1) on a fresh %s manager: ok=%v stdout=%q error=%+v", level, r.OK, r.Stdout, r.Error)
	}
	waitWarm(t, m, ws)
	return m, ws
}

// waitWarm waits until the pool holds a sandbox ready for ws.
func waitWarm(t *testing.T, m *Manager, ws string) {
	t.Helper()
	m.WarmFor(Request{Workspace: ws})
	for deadline := time.Now().Add(slack); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tg := m.defaultTarget(ws)
		m.mu.Lock()
		n := len(m.idle[tg])
		m.mu.Unlock()
		if n > 0 {
			return
		}
	}
	t.Fatalf("no warm sandbox after %s%s", slack, m.lastStderr())
}

// assertHealthy checks that the manager still runs code after a breach.
func assertHealthy(t *testing.T, m *Manager, ws string) {
	t.Helper()
	r := exec1(t, m, ws, "print(1)", slack)
	if !r.OK || r.Stdout != "1\n" {
		t.Fatalf("the next execution: ok=%v stdout=%q error=%+v", r.OK, r.Stdout, r.Error)
	}
}

// marker returns a string unique to this run, usable as a sleep(1) argument
// so that the process can be found by its command line.
func marker() string {
	return fmt.Sprintf("1000.%09d", rand.IntN(1e9))
}

// hostProcessesWith returns the host pids whose command line contains s.
func hostProcessesWith(s string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGone waits for every host process whose command line contains s to
// end, and fails the test if any is left. Killed processes of a sandbox end
// at once, but on a loaded machine "at once" can be seconds: the deadline
// only ends a test that would hang.
func waitGone(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(slack)
	for {
		pids := hostProcessesWith(s)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes with %q still running on the host after the execution ended: %v", s, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var truncNote = regexp.MustCompile(`\n\[codecell: output truncated, (\d+) more bytes dropped here; the stream's end follows\]\n`)

// droppedBytes returns how many bytes the truncation note in s
// says were dropped, or -1 when there is no note.
func droppedBytes(s string) int {
	m := truncNote.FindStringSubmatch(s)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func wantError(t *testing.T, r *Result, typ, msgPart string) {
	t.Helper()
	if r.OK || r.Error == nil || r.Error.Type != typ || !strings.Contains(r.Error.Message, msgPart) {
		t.Fatalf("got ok=%v error=%+v, want a %s error mentioning %q (stdout %.200q)", r.OK, r.Error, typ, msgPart, r.Stdout)
	}
}

const kib, mib = 1 << 10, 1 << 20

// limitRun is what a limit case's check may look at besides the result.
type limitRun struct {
	m      *Manager
	ws     string
	marker string // what MARKER in the code was replaced with
}

func TestLimits(t *testing.T) {
	all := []Level{Development, Production, Hardened}
	isolated := []Level{Production, Hardened}

	// Limits are tight and wall-clock timeouts loose: a breached limit must
	// end the execution with its own error, long before the timeout even on
	// a loaded machine. Only the case about the timeout sets a short one.
	tests := []struct {
		name    string
		levels  []Level
		limits  Limits
		timeout time.Duration
		code    string // MARKER is replaced by a string unique to the run
		check   func(t *testing.T, r *Result, run limitRun)
	}{
		{
			// The timeout must fire after the code has started its
			// processes, which on a loaded machine (gVisor's forks are slow)
			// can take seconds. The code then sleeps rather than spins, so as
			// not to load the machine other tests share while it waits.
			name:    "wall-clock timeout kills the process tree",
			levels:  all,
			timeout: 15 * time.Second,
			code: "import subprocess, time\n" +
				"subprocess.Popen(['/usr/bin/sleep', 'MARKER'])\n" +
				"subprocess.Popen(['/usr/bin/sleep', 'MARKER'], start_new_session=True)\n" +
				"print('started', flush=True)\n" +
				"while True: time.sleep(1)\n",
			check: func(t *testing.T, r *Result, run limitRun) {
				wantError(t, r, ErrTimeout, "timeout")
				if !strings.Contains(r.Stdout, "started") {
					t.Fatalf("the background process never started: stdout %q stderr %q", r.Stdout, r.Stderr)
				}
				waitGone(t, run.marker)
			},
		},
		{
			name:    "CPU time",
			levels:  all,
			limits:  Limits{CPUTime: time.Second},
			timeout: slack,
			code:    "while True: pass",
			check: func(t *testing.T, r *Result, run limitRun) {
				wantError(t, r, ErrTimeout, "CPU")
			},
		},
		{
			name:    "memory: one huge allocation",
			levels:  all,
			limits:  Limits{Memory: 256 * mib},
			timeout: slack,
			code:    "b = bytearray(2 * 1024**3)",
			check: func(t *testing.T, r *Result, run limitRun) {
				wantError(t, r, ErrMemoryLimit, "")
			},
		},
		{
			name:    "memory: a growing list",
			levels:  all,
			limits:  Limits{Memory: 256 * mib},
			timeout: slack,
			code:    "l = []\nwhile True:\n    l.append('x' * 10**7)",
			check: func(t *testing.T, r *Result, run limitRun) {
				wantError(t, r, ErrMemoryLimit, "")
			},
		},
		{
			name:    "output flood",
			levels:  all,
			limits:  Limits{Output: 64 * kib},
			timeout: slack,
			code:    "while True: print('x' * 10000)",
			check: func(t *testing.T, r *Result, run limitRun) {
				if r.OK || r.Error == nil {
					t.Fatalf("an endless flood ended ok")
				}
				if r.Error.Type != ErrOutputLimit && !r.Truncated.Stdout {
					t.Fatalf("error %+v, want OutputLimit or truncated stdout", r.Error)
				}
				if len(r.Stdout) > 64*kib+100 {
					t.Fatalf("stdout is %d bytes, limit 64KiB", len(r.Stdout))
				}
				if !r.Truncated.Stdout || droppedBytes(r.Stdout) <= 0 {
					t.Fatalf("truncated=%+v, stdout has no note of the dropped bytes: %q", r.Truncated, tail(r.Stdout))
				}
			},
		},
		{
			name:    "output over the limit, not a flood",
			levels:  all,
			limits:  Limits{Output: 64 * kib},
			timeout: slack,
			code:    "print('x' * 100 * 1024); print('the end')",
			check: func(t *testing.T, r *Result, run limitRun) {
				if !r.OK || !r.Truncated.Stdout || r.Truncated.Stderr {
					t.Fatalf("ok=%v truncated=%+v error=%+v, want ok with stdout truncated", r.OK, r.Truncated, r.Error)
				}
				// The stream keeps its head and its tail, 32 KiB each. One
				// run of value characters crosses each cut: the cut drops
				// textcut.Bound of it, as it would a value there.
				parts := truncNote.Split(r.Stdout, -1)
				if len(parts) != 2 || parts[0] != strings.Repeat("x", 32*kib-textcut.Bound) {
					t.Fatalf("kept a head of %d bytes, want the first 32KiB less textcut.Bound", len(parts[0]))
				}
				if !strings.HasSuffix(parts[1], "x\nthe end\n") || len(parts[1]) > 32*kib {
					t.Fatalf("the tail is %d bytes and ends %q, want the stream's last line", len(parts[1]), tail(parts[1]))
				}
				if want := 100*kib + 1 + len("the end\n") - len(parts[0]) - len(parts[1]); droppedBytes(r.Stdout) != want {
					t.Fatalf("the note says %d bytes dropped, want %d", droppedBytes(r.Stdout), want)
				}
			},
		},
		{
			// Flood, not 8 x Output, is where output ends the execution:
			// below it output is cut and the code runs to its end.
			name:    "output past 8 x the limit, under the flood bound",
			levels:  all,
			limits:  Limits{Output: 64 * kib, Flood: 4 * mib},
			timeout: slack,
			code:    "print('x' * 2_000_000); print('the end')",
			check: func(t *testing.T, r *Result, run limitRun) {
				if !r.OK || !r.Truncated.Stdout || !strings.HasSuffix(r.Stdout, "x\nthe end\n") {
					t.Fatalf("ok=%v truncated=%+v error=%+v, stdout ends %q: want ok, cut, with its last line", r.OK, r.Truncated, r.Error, tail(r.Stdout))
				}
			},
		},
		{
			name:    "output past the flood bound",
			levels:  all,
			limits:  Limits{Output: 64 * kib, Flood: 4 * mib},
			timeout: slack,
			code:    "while True: print('x' * 10000)",
			check: func(t *testing.T, r *Result, run limitRun) {
				wantError(t, r, ErrOutputLimit, "more than 4194304 bytes")
			},
		},
		{
			name:    "huge result",
			levels:  all,
			limits:  Limits{Output: 64 * kib},
			timeout: slack,
			code:    "result = 'x' * 10_000_000",
			check: func(t *testing.T, r *Result, run limitRun) {
				if !r.OK {
					t.Fatalf("error %+v", r.Error)
				}
				s, ok := r.Result.(string)
				if !ok || len(s) > 64*kib+100 || !strings.Contains(s, "dropped") {
					t.Fatalf("result is %T of %d bytes ending %q, want a string capped near 64KiB that says what was dropped", r.Result, len(s), tail(s))
				}
			},
		},
		{
			name:    "file size in the workspace",
			levels:  all,
			limits:  Limits{FileSize: 4 * mib},
			timeout: slack,
			code: "with open('big', 'wb') as f:\n" +
				"    for _ in range(64):\n" +
				"        f.write(b'x' * 2**20)\n",
			check: func(t *testing.T, r *Result, run limitRun) {
				wantError(t, r, "OSError", "File too large")
				info, err := os.Stat(filepath.Join(run.ws, "big"))
				if err != nil {
					t.Fatal(err)
				}
				if info.Size() > 4*mib {
					t.Fatalf("the file on the host is %d bytes, limit 4MiB", info.Size())
				}
			},
		},
		{
			name:    "open files",
			levels:  all,
			limits:  Limits{OpenFiles: 32},
			timeout: slack,
			code:    "fs = [open('/dev/null') for _ in range(100)]",
			check: func(t *testing.T, r *Result, run limitRun) {
				wantError(t, r, "OSError", "Too many open files")
			},
		},
		{
			// In development the code runs as the host user, who may be root
			// and so able to raise hard limits: nothing to test there.
			name:    "no core dumps",
			levels:  isolated,
			timeout: slack,
			code: "import json, resource\n" +
				"v = {'core': resource.getrlimit(resource.RLIMIT_CORE)}\n" +
				"for new in [(0, resource.RLIM_INFINITY), (1 << 20, 1 << 20)]:\n" +
				"    try:\n" +
				"        resource.setrlimit(resource.RLIMIT_CORE, new)\n" +
				"        v['raised'] = new\n" +
				"    except (ValueError, OSError) as e:\n" +
				"        pass\n" +
				"v['after'] = resource.getrlimit(resource.RLIMIT_CORE)\n" +
				"print(json.dumps(v))\n",
			check: func(t *testing.T, r *Result, run limitRun) {
				if !r.OK {
					t.Fatalf("error %+v", r.Error)
				}
				if got, want := strings.TrimSpace(r.Stdout), `{"core": [0, 0], "after": [0, 0]}`; got != want {
					t.Fatalf("core limits %s, want %s", got, want)
				}
			},
		},
		{
			name:    "filling /tmp",
			levels:  isolated,
			limits:  Limits{TmpSize: 8 * mib},
			timeout: slack,
			code: "with open('/tmp/f', 'wb') as f:\n" +
				"    for _ in range(64):\n" +
				"        f.write(b'x' * 2**20)\n" +
				"        f.flush()\n",
			check: func(t *testing.T, r *Result, run limitRun) {
				wantError(t, r, "OSError", "No space left")
				r = exec1(t, run.m, run.ws, "import os; print(sorted(os.listdir('/tmp')))", slack)
				if !r.OK || r.Stdout != "[]\n" {
					t.Fatalf("/tmp in the next execution: ok=%v stdout=%q error=%+v", r.OK, r.Stdout, r.Error)
				}
			},
		},
		{
			name:    "scratch does not leak between executions",
			levels:  isolated,
			timeout: slack,
			code: "import os\n" +
				"for p in ['/tmp/leak', '/dev/shm/leak', '/tmp/d/e/f']:\n" +
				"    os.makedirs(os.path.dirname(p), exist_ok=True)\n" +
				"    open(p, 'w').write('left behind')\n" +
				"os.chmod('/tmp/d/e', 0)\n",
			check: func(t *testing.T, r *Result, run limitRun) {
				if !r.OK {
					t.Fatalf("error %+v", r.Error)
				}
				r = exec1(t, run.m, run.ws, "import os; print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))", slack)
				if !r.OK || r.Stdout != "[] []\n" {
					t.Fatalf("/tmp and /dev/shm in the next execution: ok=%v stdout=%q error=%+v", r.OK, r.Stdout, r.Error)
				}
			},
		},
	}

	for _, level := range all {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				if !slices.Contains(tt.levels, level) {
					continue
				}
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel() // each case has a manager of its own
					m, ws := levelManager(t, level, tt.limits)
					mk := marker()
					r := exec1(t, m, ws, strings.ReplaceAll(tt.code, "MARKER", mk), tt.timeout)
					tt.check(t, r, limitRun{m: m, ws: ws, marker: mk})
					assertHealthy(t, m, ws)
				})
			}
		})
	}
}

// TestForkBomb is not parallel: it counts the test process's descendants,
// which other sandboxes running at the same time would add to.
func TestForkBomb(t *testing.T) {
	// A small limit, and the default (Limits{}), which leaves room for a
	// hundred threads and so for as many processes.
	for _, pids := range []int{16, DefaultLimits.Pids} {
		t.Run(fmt.Sprint("pids ", pids), func(t *testing.T) { forkBomb(t, pids) })
	}
}

func forkBomb(t *testing.T, pids int) {
	// The parent forks until the kernel refuses, then keeps trying, 100
	// times, to show the limit holds; each child becomes a sleep holding its
	// process slot, named by a marker so that the host can look for it
	// afterwards. The parent gives up at 2*pids+50 children so that a
	// missing limit cannot hurt the host. It ends by itself rather than by a
	// timeout: no fixed time is sure to be enough to reach the limit on a
	// loaded machine (under gVisor a fork can take a good part of a second).
	bound := 2*pids + 50
	code := "import os\n" +
		"n = refused = 0\n" +
		fmt.Sprintf("while n < %d and refused < 100:\n", bound) +
		"    try:\n" +
		"        pid = os.fork()\n" +
		"    except OSError:\n" +
		"        refused += 1\n" +
		"        continue\n" +
		"    if pid == 0:\n" +
		"        os.execv('/usr/bin/sleep', ['sleep', 'MARKER'])\n" +
		"    n += 1\n" +
		"    print('forked', n, flush=True)\n" +
		fmt.Sprintf("print('UNBOUNDED' if n >= %d else 'refused', flush=True)\n", bound)
	for _, level := range []Level{Production, Hardened} {
		t.Run(string(level), func(t *testing.T) {
			limits := Limits{Pids: pids}
			if pids == DefaultLimits.Pids {
				limits = Limits{}
			}
			m, ws := levelManager(t, level, limits)
			before := len(descendantsOf(os.Getpid()))
			peak := 0
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					peak = max(peak, len(descendantsOf(os.Getpid())))
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			mk := marker()
			r := exec1(t, m, ws, strings.ReplaceAll(code, "MARKER", mk), slack)
			close(stop)
			<-sampled

			forks := strings.Count(r.Stdout, "forked")
			if !r.OK || forks == 0 || forks > pids || !strings.HasSuffix(r.Stdout, "refused\n") {
				t.Fatalf("the code forked %d children (limit %d); ok=%v error %+v; stdout ends %q", forks, pids, r.OK, r.Error, tail(r.Stdout))
			}
			// The sandbox's own processes (bubblewrap twice, the zygote and
			// its spare child, a warm spare sandbox) come on top of the code's.
			// Under gVisor the code's processes live inside the sentry and
			// the host sees only runsc's own, so the count says nothing there.
			if level == Production && peak > before+pids+10 {
				t.Fatalf("descendants of the test peaked at %d, %d before", peak, before)
			}
			waitGone(t, mk)
			t.Logf("%d forks; descendants %d before, %d at the peak", forks, before, peak)
			assertHealthy(t, m, ws)
		})
	}
}

func tail(s string) string {
	if len(s) > 200 {
		return "..." + s[len(s)-200:]
	}
	return s
}

// TestRefusesUnreachableDirs: as root, production never falls back to a
// sandbox user that is host root; directories nobody cannot reach are
// refused with a message that says what to do.
func TestRefusesUnreachableDirs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs bubblewrap as nobody")
	}
	if err := Check(context.Background(), Production, python); err != nil {
		t.Skipf("production unavailable: %v", err)
	}
	prog, err := seccomp.Program()
	if err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil { // nobody cannot search it
		t.Fatal(err)
	}
	_, err = New(Options{Level: Production, Python: python, StateDir: filepath.Join(private, "state"), Seccomp: prog})
	if err == nil || !strings.Contains(err.Error(), "uid 65534") || !strings.Contains(err.Error(), "/var/lib/codecell") {
		t.Fatalf("New with an unreachable state dir: %v", err)
	}
	m, _ := newTestManager(t, Production, Limits{}, 0)
	r := exec1(t, m, filepath.Join(private, "ws"), "print(1)", slack)
	if r.OK || r.Error.Type != ErrSandbox || !strings.Contains(r.Error.Message, "cannot reach") {
		t.Fatalf("an unreachable workspace: %+v", r.Error)
	}
}

// TestThreadLimitNamed: a thread that cannot start says which limit stopped
// it, with its config key and value: Python's own message names neither.
func TestThreadLimitNamed(t *testing.T) {
	// Sleeping workers are never idle, so each task starts a thread.
	code := "import time\nfrom concurrent.futures import ThreadPoolExecutor\n" +
		"with ThreadPoolExecutor(400) as p:\n    list(p.map(lambda i: time.sleep(0.5), range(400)))"
	for _, tc := range []struct {
		name   string
		level  Level
		limits Limits
		want   string
	}{
		{"pids", Production, Limits{Pids: 16}, "can't start new thread: the sandbox's process and thread limit, sandbox.pids = 16, is reached"},
		{"memory", Production, Limits{Pids: 1000, Memory: 128 << 20}, "can't start new thread: the sandbox's memory limit, sandbox.memory = 128 MiB of address space, has no room"},
		{"memory in development", Development, Limits{Memory: 128 << 20}, "sandbox.memory = 128 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ws := levelManager(t, tc.level, tc.limits)
			r := exec1(t, m, ws, code, 30*time.Second)
			wantError(t, r, "RuntimeError", tc.want)
			if !strings.Contains(r.Error.Traceback, tc.want) {
				t.Errorf("traceback:\n%s", r.Error.Traceback)
			}
		})
	}
}

// memoryHogs is code whose processes hold n times each MiB, every one well
// under the memory limit alone: each child answers a ping once its memory is
// written (so resident), and one the kernel killed answers with the end of
// its pipe. It prints "all held" only if all of them held theirs at once.
func memoryHogs(n, each int) string {
	return fmt.Sprintf(`
import os
kids = []
for i in range(%d):
    ping_r, ping_w = os.pipe()
    pong_r, pong_w = os.pipe()
    if os.fork() == 0:
        os.close(ping_w); os.close(pong_r)
        block = b"x" * (%d << 20)
        while os.read(ping_r, 1):
            os.write(pong_w, b"1")
        os._exit(0)
    os.close(ping_r); os.close(pong_w)
    kids.append((ping_w, pong_r))
held = 0
for ping_w, pong_r in kids:
    try:
        os.write(ping_w, b"?")
        held += os.read(pong_r, 1) == b"1"
    except OSError:
        pass
print("held", held, "of", len(kids))
if held == len(kids):
    print("all held")
`, n, each)
}

// TestMemoryPerSandbox: five processes of 64 MiB, each under a 128 MiB limit
// alone, together pass it; with a cgroup per sandbox the kernel kills one
// (under gVisor, the sentry) and the execution fails with MemoryLimit, and
// the next execution runs. (Per process, RLIMIT_AS alone, all five held
// 320 MiB.)
func TestMemoryPerSandbox(t *testing.T) {
	for _, level := range isolatedLevels {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			testMemoryPerSandbox(t, level)
		})
	}
}

func testMemoryPerSandbox(t *testing.T, level Level) {
	m, ws := levelManager(t, level, Limits{Memory: 128 * mib})
	if perSandbox, how := m.MemoryScope(); !perSandbox {
		t.Skipf("no cgroup per sandbox on this host: memory is %s", how)
	}
	r := exec1(t, m, ws, memoryHogs(5, 64), slack)
	if strings.Contains(r.Stdout, "all held") {
		t.Fatalf("five processes held 5 x 64 MiB under a 128 MiB sandbox limit: %q", r.Stdout)
	}
	wantError(t, r, ErrMemoryLimit, "together")
	assertHealthy(t, m, ws)
	// Under the limit, the same code runs to its end.
	r = exec1(t, m, ws, memoryHogs(2, 32), slack)
	if !r.OK || !strings.Contains(r.Stdout, "all held") {
		t.Fatalf("two processes of 32 MiB under a 128 MiB limit: ok=%v stdout=%q error=%+v", r.OK, r.Stdout, r.Error)
	}
}
