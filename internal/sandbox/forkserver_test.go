package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// samePool waits for the pool to hold a warm hardened sandbox for ws and
// reports whether it is g: the sandbox that served the executions since
// came back rather than being discarded. (Called before the next
// execution: that one would start a sandbox of its own if g took longer
// than hardenedReturnWait to come back, as it may on a loaded machine.)
func samePool(t *testing.T, m *Manager, ws string, g *gvisor) bool {
	t.Helper()
	return settledGVisor(t, m, ws) == g
}

// settledGVisor waits until the pool of ws holds a warm hardened sandbox
// and starts or runs no other, and returns the idle one. Sandboxes started
// for earlier cases (a refill after a discard, one an execution started
// meanwhile) are then settled: none can arrive later and push the one a
// case watches out of the pool (PoolSize 1).
func settledGVisor(t *testing.T, m *Manager, ws string) *gvisor {
	t.Helper()
	waitWarm(t, m, ws)
	for deadline := time.Now().Add(slack); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st := m.PoolStats(); st.Busy == 0 && st.Starting == 0 && st.Idle >= 1 {
			return idleGVisor(t, m, ws)
		}
	}
	t.Fatalf("the pool did not settle: %+v", m.PoolStats())
	return nil
}

// TestHardenedForkServer runs many executions in one hardened sandbox and
// checks that each ran in a process of its own that no earlier execution
// touched: another pid, no file an earlier one left in /tmp or /dev/shm, no
// process an earlier one left running.
func TestHardenedForkServer(t *testing.T) {
	m, ws := newTestManager(t, Hardened, Limits{}, 1)
	g := settledGVisor(t, m, ws)
	const n = 20
	// Each execution reports what it finds of the one before (its pid and
	// background process, recorded in the workspace, which persists by
	// design) and then leaves the same behind for the next.
	code := `import os, json, subprocess, time
prev = json.load(open('prev.json')) if os.path.exists('prev.json') else None
found = {'pid': os.getpid()}
if prev:
    found['same_pid'] = prev['pid'] == os.getpid()
    found['tmp_left'] = [p for p in ('/tmp/left', '/dev/shm/left') if os.path.exists(p)]
    try:
        os.kill(prev['bg'], 0)
        found['bg_alive'] = True
    except ProcessLookupError:
        found['bg_alive'] = False
for p in ('/tmp/left', '/dev/shm/left'):
    open(p, 'w').write('x')
bg = subprocess.Popen(['/usr/bin/python3', '-c', 'import time; time.sleep(600)'], start_new_session=True)
json.dump({'pid': os.getpid(), 'bg': bg.pid}, open('prev.json', 'w'))
found`
	pids := map[float64]bool{}
	start := time.Now()
	for i := range n {
		r := exec1(t, m, ws, code, slack)
		if !r.OK {
			t.Fatalf("execution %d: %+v (stderr %q)", i, r.Error, r.Stderr)
		}
		var found struct {
			Pid     float64
			SamePid bool     `json:"same_pid"`
			TmpLeft []string `json:"tmp_left"`
			BgAlive bool     `json:"bg_alive"`
		}
		if err := json.Unmarshal([]byte(toJSON(r.Result)), &found); err != nil {
			t.Fatalf("execution %d: result %v: %v", i, r.Result, err)
		}
		if pids[found.Pid] || found.SamePid {
			t.Errorf("execution %d ran in pid %v, which an earlier execution had", i, found.Pid)
		}
		pids[found.Pid] = true
		if len(found.TmpLeft) > 0 {
			t.Errorf("execution %d found what an earlier one left: %v", i, found.TmpLeft)
		}
		if found.BgAlive {
			t.Errorf("execution %d found the background process of the one before alive", i)
		}
		if !samePool(t, m, ws, g) {
			t.Fatalf("execution %d: the sandbox was not reused", i)
		}
	}
	t.Logf("%d executions in one hardened sandbox in %s", n, time.Since(start))
}

// TestHardenedForkServerHoles is hostile code against the channel that one
// hardened sandbox lends to its executions in turn: whatever it does, the
// next execution gets its own code and its own result, and a sandbox the
// code may have tampered with is discarded.
func TestHardenedForkServerHoles(t *testing.T) {
	m, ws := newTestManager(t, Hardened, Limits{}, 1)
	// next runs an execution that must be untouched by the one before.
	next := func(t *testing.T) {
		t.Helper()
		r := exec1(t, m, ws, "print('mine'); 6 * 7", slack)
		if !r.OK || r.Stdout != "mine\n" || !equalJSON(r.Result, float64(42)) {
			t.Fatalf("next execution: ok=%v stdout=%q result=%v error=%+v", r.OK, r.Stdout, r.Result, r.Error)
		}
	}
	// forged is Python that writes a frame on every descriptor that may be
	// the channel: frames from the fork server with a made-up key, and a
	// result the next execution must never return.
	const forged = `import os, json, struct
def frame(obj):
    data = json.dumps(obj).encode()
    return struct.pack('>I', len(data)) + data
FORGED = (frame({'type': 'exited', 'key': '0' * 32, 'clean': True, 'status': 0})
          + frame({'type': 'ready', 'sync': '1' * 32, 'key': '2' * 32})
          + frame({'type': 'result', 'ok': True, 'error': None, 'result': {'kind': 'json', 'value': 'forged'}}))
def forge():
    for fd in range(3, 64):
        try:
            os.write(fd, FORGED)
        except OSError:
            pass
`

	t.Run("a leftover process writes forged frames after the result", func(t *testing.T) {
		g := settledGVisor(t, m, ws)
		// The background process writes until it is killed, so some of
		// its frames come after the result, before the fork server's report.
		r := exec1(t, m, ws, forged+`
if os.fork() == 0:
    os.setsid()
    while True:
        forge()
'started'`, slack)
		if r.OK && !equalJSON(r.Result, "started") {
			t.Errorf("result %v", r.Result)
		}
		if samePool(t, m, ws, g) {
			t.Error("the sandbox whose channel carried forged frames went back to the pool")
		}
		next(t)
	})

	t.Run("a leftover process writes half frames", func(t *testing.T) {
		g := settledGVisor(t, m, ws)
		// A length prefix with too little after it would swallow the fork
		// server's report and the next ready frame into one frame; the
		// host must not make anything of that but a broken channel.
		r := exec1(t, m, ws, `import os, struct, time
if os.fork() == 0:
    os.setsid()
    while True:
        for fd in range(3, 64):
            try:
                os.write(fd, struct.pack('>I', 100) + b'{"type": "exited", "clean": true, "key": "')
            except OSError:
                pass
time.sleep(0.2)
'started'`, slack)
		if r.OK && !equalJSON(r.Result, "started") {
			t.Errorf("result %v", r.Result)
		}
		if samePool(t, m, ws, g) {
			t.Error("the sandbox whose channel carried half frames went back to the pool")
		}
		next(t)
	})

	t.Run("forged frames of the fork server during the execution", func(t *testing.T) {
		r := exec1(t, m, ws, forged+"forge()\nimport time; time.sleep(1)", slack)
		if r.OK {
			t.Errorf("forged frames were taken: result %v", r.Result)
		}
		next(t)
	})

	t.Run("a leftover process reads ahead of stdin", func(t *testing.T) {
		g := settledGVisor(t, m, ws)
		// It copies whatever it can read of stdin (the channel's read
		// end is the same pipe) to the workspace: the next execution's
		// exec frame must never reach it. It also leaves every descriptor
		// non-blocking, stdin's and stdout's open file descriptions
		// included, which the next child shares: the fork server must put
		// their flags back, or that child's first read fails.
		r := exec1(t, m, ws, `import os, time
if os.fork() == 0:
    os.setsid()
    out = os.open('stolen', os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    while True:
        for fd in range(0, 64):
            try:
                os.set_blocking(fd, False)
                data = os.read(fd, 65536)
                if data:
                    os.write(out, data)
            except OSError:
                pass
        time.sleep(0.001)
time.sleep(0.2)
'started'`, slack)
		if !r.OK {
			t.Fatalf("%+v", r.Error)
		}
		if !samePool(t, m, ws, g) {
			t.Fatal("the sandbox was discarded: the fork server's clean-up should have handled this")
		}
		secret := "print('secret-" + fmt.Sprint(time.Now().UnixNano()) + "')"
		r = exec1(t, m, ws, secret, slack)
		if !r.OK || !strings.HasPrefix(r.Stdout, "secret-") {
			t.Fatalf("next execution: %+v %q", r.Error, r.Stdout)
		}
		stolen, _ := os.ReadFile(filepath.Join(ws, "stolen"))
		if strings.Contains(string(stolen), "secret-") {
			t.Errorf("a process of the execution before read the next one's code: %q", stolen)
		}
	})

	t.Run("an answer to a call arrives after the execution ended", func(t *testing.T) {
		g := settledGVisor(t, m, ws)
		// The main thread returns while another waits for an answer; the
		// host writes it on stdin after the process is gone, where the
		// next child must not take it for its exec frame.
		h := &slowHandler{delay: 300 * time.Millisecond}
		r := m.Exec(context.Background(), Request{Workspace: ws, Timeout: slack, Calls: h, Code: `import threading, time
from codecell import _rpc
threading.Thread(target=lambda: _rpc.call('s', 't', {'pad': 'x' * 100000}), daemon=True).start()
time.sleep(0.1)
'returned'`})
		if !r.OK || !equalJSON(r.Result, "returned") {
			t.Fatalf("%+v %v", r.Error, r.Result)
		}
		if h.calls.Load() != 1 {
			t.Fatalf("%d calls reached the host", h.calls.Load())
		}
		if !samePool(t, m, ws, g) {
			t.Error("the sandbox was discarded: a late answer should be skipped, not fatal")
		}
		next(t)
	})

	t.Run("the code lowers the fork server's limits", func(t *testing.T) {
		g := settledGVisor(t, m, ws)
		r := exec1(t, m, ws, "import resource; resource.prlimit(1, resource.RLIMIT_NOFILE, (20, 20)); resource.prlimit(1, resource.RLIMIT_CPU, (5, 5))", slack)
		if !r.OK {
			t.Fatalf("%+v", r.Error)
		}
		if samePool(t, m, ws, g) {
			t.Error("a fork server whose limits the code changed went back to the pool")
		}
		r = exec1(t, m, ws, "import resource; [resource.getrlimit(resource.RLIMIT_NOFILE), resource.getrlimit(resource.RLIMIT_CPU)[1]]", slack)
		if !r.OK || strings.Contains(toJSON(r.Result), "[20,20]") {
			t.Errorf("the next execution inherited the limits the one before set: %v %+v", r.Result, r.Error)
		}
	})

	t.Run("the code kills the fork server", func(t *testing.T) {
		r := exec1(t, m, ws, "import os, signal, time; os.kill(1, signal.SIGKILL); time.sleep(1)", slack)
		if r.OK {
			t.Errorf("ok after its sandbox died: %v", r.Result)
		}
		next(t)
	})
}

// slowHandler answers every call after delay, even when its execution has
// ended.
type slowHandler struct {
	delay time.Duration
	calls atomic.Int32
}

func (h *slowHandler) HandleCall(ctx context.Context, method string, params json.RawMessage) (any, error) {
	h.calls.Add(1)
	time.Sleep(h.delay)
	return map[string]any{"structured": strings.Repeat("y", 100000)}, nil
}

// TestHardenedCPULimitPerExecution checks that the CPU time limit of each
// execution counts its own process alone: executions that each use most
// of it, one after another in one sandbox, all finish.
func TestHardenedCPULimitPerExecution(t *testing.T) {
	m, ws := newTestManager(t, Hardened, Limits{CPUTime: 2 * time.Second}, 1)
	g := settledGVisor(t, m, ws)
	// Four times 0.7 s is past the limit; one is well within it, even with
	// what a loaded machine adds to the runner's own share.
	spin := "import time\nend = time.process_time() + 0.7\nwhile time.process_time() < end: pass\n'done'"
	for i := range 4 {
		r := exec1(t, m, ws, spin, slack)
		if !r.OK {
			t.Fatalf("execution %d: %+v (stderr %q)", i, r.Error, r.Stderr)
		}
		if !samePool(t, m, ws, g) {
			t.Fatalf("execution %d: the sandbox was not reused", i)
		}
	}
	r := exec1(t, m, ws, "while True: pass", slack)
	if r.OK || r.Error == nil || r.Error.Type != ErrTimeout {
		t.Fatalf("past the CPU limit: %+v", r.Error)
	}
}

// TestForkServerLimitsTampered is code that changes what its fork server
// hands every child (prlimit, setpriority, sched_setaffinity,
// sched_setscheduler, ioprio_set on its parent, same user): the next
// execution, forked from it, must not start with it.
func TestForkServerLimitsTampered(t *testing.T) {
	tampers := []struct {
		name, set, get, tampered string
		// gvisorMayLack marks what gVisor's kernel may not let the code
		// change at all: there the test skips rather than proving nothing.
		gvisorMayLack bool
	}{
		{name: "limits",
			set:      "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (20, 20))\nresource.prlimit(os.getppid(), resource.RLIMIT_NOFILE)",
			get:      "resource.getrlimit(resource.RLIMIT_NOFILE)",
			tampered: "[20,20]"},
		{name: "priority",
			set:      "os.setpriority(os.PRIO_PROCESS, os.getppid(), 7)\nos.getpriority(os.PRIO_PROCESS, os.getppid())",
			get:      "os.getpriority(os.PRIO_PROCESS, 0)",
			tampered: "7"},
		{name: "affinity",
			set:      "os.sched_setaffinity(os.getppid(), {0})\nsorted(os.sched_getaffinity(os.getppid()))",
			get:      "sorted(os.sched_getaffinity(0))",
			tampered: "[0]"},
		// SCHED_IDLE (5): every later execution would get CPU only when
		// nothing else wants it.
		{name: "scheduler",
			set:           "os.sched_setscheduler(os.getppid(), os.SCHED_IDLE, os.sched_param(0))\nos.sched_getscheduler(os.getppid())",
			get:           "os.sched_getscheduler(0)",
			tampered:      "5",
			gvisorMayLack: true},
		// The idle I/O class (3 << 13), likewise for the disk.
		{name: "io priority",
			set:           pyIoprio + "ioprio_set(os.getppid(), 3 << 13)\nioprio_get(os.getppid())",
			get:           pyIoprio + "ioprio_get(0)",
			tampered:      "24576",
			gvisorMayLack: true},
	}
	for _, level := range isolatedLevels {
		for _, tt := range tampers {
			t.Run(string(level)+"/"+tt.name, func(t *testing.T) {
				m, ws := levelManager(t, level, Limits{})
				if tt.name == "affinity" && len(toJSON(exec1(t, m, ws, "import os; sorted(os.sched_getaffinity(0))", slack).Result)) <= len("[0]") {
					t.Skip("one CPU: an affinity of {0} changes nothing")
				}
				r := exec1(t, m, ws, "import os, resource\n"+tt.set, slack)
				if !r.OK || toJSON(r.Result) != tt.tampered {
					if level == Hardened && tt.gvisorMayLack {
						t.Skipf("gVisor does not let the code set the %s: %v %+v", tt.name, r.Result, r.Error)
					}
					t.Fatalf("%s on the fork server: %v %+v: the test proves nothing", tt.name, r.Result, r.Error)
				}
				r = exec1(t, m, ws, "import os, resource\n"+tt.get, slack)
				if !r.OK || toJSON(r.Result) == tt.tampered {
					t.Errorf("the next execution started with the %s the one before set on its fork server: %v %+v", tt.name, r.Result, r.Error)
				}
			})
		}
	}
}

// pyIoprio defines ioprio_get(pid) and ioprio_set(pid, prio) on a process
// (IOPRIO_WHO_PROCESS; 0 is the caller), which Python does not wrap.
const pyIoprio = `import ctypes, platform
_libc = ctypes.CDLL(None, use_errno=True)
_get, _set = {'x86_64': (252, 251), 'aarch64': (31, 30)}[platform.machine()]
def _ioprio(*args):
    r = _libc.syscall(*[ctypes.c_long(a) for a in args])
    if r == -1:
        raise OSError(ctypes.get_errno(), 'ioprio')
    return r
def ioprio_get(pid):
    return _ioprio(_get, 1, pid)
def ioprio_set(pid, prio):
    return _ioprio(_set, 1, pid, prio)
`
