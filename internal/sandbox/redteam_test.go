package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// The red team's attacks (issue #14): kinds the rest of the security suite
// (security_test.go, persistence_test.go, limits_test.go, calls_test.go,
// and the seccomp package's tests) does not try. Each runs hostile code
// through Manager.Exec, checks that it was contained with a clear error, and
// then that the manager still runs print(1). One table serves both isolated
// levels; an attack lists the levels it applies to (the fork server and the
// warm sandbox that serves one execution after another exist only in
// production, the channel and the limits in both). An attack that finds one
// of the gaps this package documents skips with "known gap" and its evidence.

// arena is where an attack runs: one manager per level, keeping one warm
// sandbox, so that in production consecutive executions share it.
type arena struct {
	level Level
	m     *Manager
	ws    string
	// claimed says the sandboxes are started ahead and claimed
	// (unbound.go), beside another run of the attacks at the same level.
	claimed bool
}

type redTeamAttack struct {
	name   string // category/what
	levels []Level
	run    func(t *testing.T, a *arena)
}

var prodOnly = []Level{Production}

func TestRedTeam(t *testing.T) {
	for _, level := range isolatedLevels {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			m, ws := levelManager(t, level, Limits{})
			runAttacks(t, &arena{level: level, m: m, ws: ws})
		})
	}
	// Production again, in sandboxes started before the namespace and
	// claimed by it (unbound.go): each one an attack killed is replaced
	// by another claimed.
	t.Run("production_started_ahead", func(t *testing.T) {
		t.Parallel()
		m, ws := claimedManager(t)
		runAttacks(t, &arena{level: Production, m: m, ws: ws, claimed: true})
	})
}

func runAttacks(t *testing.T, a *arena) {
	for _, at := range redTeamAttacks {
		if !slices.Contains(at.levels, a.level) {
			continue
		}
		t.Run(at.name, func(t *testing.T) {
			// A cleanup, so that it runs after a skip too.
			t.Cleanup(func() { checkHealthy(t, a.m, a.ws) })
			if a.claimed && strings.HasPrefix(at.name, "exhaustion/inotify") {
				// Every production sandbox's inotify instances are one
				// count, the host user's (the known gap of
				// attackInotifyShared): run beside "production", each
				// run's holder would starve the other's attacks.
				// Claiming changes nothing of that count.
				t.Skip("run once, at production: the host user's inotify instances are shared by both runs")
			}
			at.run(t, a)
		})
	}
}

var redTeamAttacks = []redTeamAttack{
	// Persistence: what one execution leaves in a warm sandbox. Under
	// gVisor every execution has a sandbox of its own.
	{"persistence/abstract_unix_socket", prodOnly, attackAbstractSocket},
	{"persistence/interpreter_state", prodOnly, attackInterpreterState},
	{"persistence/descriptors", prodOnly, attackLeftDescriptors},
	{"persistence/hiding_processes", prodOnly, attackHidingProcesses},
	{"persistence/posix_shm_and_semaphores", prodOnly, attackPosixShm},
	{"persistence/session_and_non_session", prodOnly, attackSessionLeftovers},
	{"persistence/python_startup_files_in_the_workspace", isolatedLevels, attackPythonStartupFiles},

	// The fork server.
	{"zygote/memory_of_other_processes", prodOnly, attackOtherProcessMemory},
	{"zygote/take_over_init", prodOnly, attackTakeOverInit},
	{"zygote/signals", prodOnly, attackSignalZygote},
	{"zygote/pidfd_and_cross_process_calls", prodOnly, attackPidfd},
	{"zygote/prctl", isolatedLevels, attackPrctl},

	// The channel.
	{"channel/length_past_the_limit", isolatedLevels, channelAttack(`raw(struct.pack('>I', 0xfffffff0) + b'{}')`, ErrSandbox, "frame too large")},
	{"channel/not_json", isolatedLevels, channelAttack(`raw(struct.pack('>I', 9) + b'not json!')`, ErrSandbox, "bad frame")},
	{"channel/no_type", isolatedLevels, channelAttack(`raw(frame({'ok': True}))`, ErrSandbox, "no type")},
	{"channel/forged_reply", isolatedLevels, channelAttack(`raw(frame({'type': 'reply', 'id': 1, 'ok': True, 'result': 1}))`, ErrSandbox, `unknown frame type "reply"`)},
	{"channel/unknown_stream", isolatedLevels, channelAttack(`raw(frame({'type': 'output', 'stream': 'stdin', 'data': 'x'}))`, ErrSandbox, "unknown stream")},
	{"channel/frame_cut_short", prodOnly, channelAttack("raw(struct.pack('>I', 100) + b'{\"type\": \"res')\nos._exit(0)", ErrSandbox, "unexpected EOF")},
	// Under gVisor the channel outlives the code's process: the fork
	// server's report completes the frame, which is then not JSON.
	{"channel/frame_cut_short", []Level{Hardened}, channelAttack("raw(struct.pack('>I', 100) + b'{\"type\": \"res')\nos._exit(0)", ErrSandbox, "bad frame")},
	{"channel/interleaved_frames", isolatedLevels, channelAttack("a = frame({'type': 'output', 'stream': 'stdout', 'data': 'A' * 100})\nraw(a[:10]); raw(frame({'type': 'output', 'stream': 'stdout', 'data': 'B'})); raw(a[10:])", ErrSandbox, "bad frame")},
	{"channel/call_id_not_an_integer", isolatedLevels, channelAttack(`raw(frame({'type': 'call', 'id': 'x', 'method': 'tool', 'params': {}}))`, ErrSandbox, "bad call frame")},
	{"channel/output_frame_flood", isolatedLevels, channelAttack("f = frame({'type': 'output', 'stream': 'stdout', 'data': 'x' * 60000})\nwhile True: raw(f * 16)", ErrOutputLimit, "output")},
	{"channel/calls_after_the_result", isolatedLevels, attackCallsAfterResult},
	{"channel/call_storm", isolatedLevels, attackCallStorm},
	{"channel/calls_never_read", isolatedLevels, attackCallsNeverRead},
	{"channel/descriptors_to_the_host", prodOnly, attackDescriptorsToHost},
	{"channel/invalid_utf8", isolatedLevels, attackInvalidUTF8},
	{"channel/nesting_past_the_decoder", isolatedLevels, channelAttack("d = b'{\"type\": \"result\", \"ok\": true, \"error\": null, \"result\": {\"kind\": \"json\", \"value\": ' + b'[' * 20000 + b']' * 20000 + b'}}'\nraw(struct.pack('>I', len(d)) + d)", ErrSandbox, "bad frame")},
	{"channel/closed_before_the_result", isolatedLevels, attackChannelClosed},
	{"channel/result_nested_past_client_decoders", isolatedLevels, attackDeepResult},

	// Resource exhaustion.
	{"exhaustion/threads", isolatedLevels, attackThreads},
	{"exhaustion/inotify", isolatedLevels, attackInotify},
	{"exhaustion/inotify_shared_between_sandboxes", isolatedLevels, attackInotifyShared},
	{"exhaustion/event_descriptors", isolatedLevels, attackEventDescriptors},
	{"exhaustion/raise_hard_limits", isolatedLevels, attackRaiseLimits},
	{"exhaustion/fill_dev_shm", isolatedLevels, attackFillShm},
	{"exhaustion/huge_argv_and_env", isolatedLevels, attackHugeArgv},
	{"exhaustion/zombies", isolatedLevels, attackZombies},
	{"exhaustion/mmap_past_the_limit", isolatedLevels, attackMmap},
	{"exhaustion/memfd_past_the_limit", isolatedLevels, attackMemfd},
	{"exhaustion/memory_in_many_processes", isolatedLevels, attackManyProcesses},
	{"exhaustion/sparse_files", isolatedLevels, attackSparse},

	// Information leaks.
	{"leak/host_paths_in_mountinfo", isolatedLevels, attackMountinfo},
	{"leak/boot_id", isolatedLevels, attackBootID},
	{"leak/host_unix_sockets", isolatedLevels, attackHostUnixSockets},
	{"leak/kernel_keys_and_symbols", isolatedLevels, attackKernelInfo},

	// Escapes.
	{"escape/setns_with_namespace_descriptors", isolatedLevels, attackSetns},
	{"escape/root_and_namespace_changes", isolatedLevels, attackRootChanges},
	{"escape/foreign_abis", isolatedLevels, attackForeignABI},
	{"escape/system_calls_newer_than_the_filter", isolatedLevels, attackNewerSyscalls},
	{"escape/kernel_interfaces", prodOnly, attackKernelInterfaces},
	{"escape/device_nodes", isolatedLevels, attackDevices},
	{"escape/proc_writes", isolatedLevels, attackProcWrites},
	{"escape/hard_links_out", isolatedLevels, attackHardLinks},
}

// checkHealthy is assertHealthy for a cleanup: it reports, and does not
// stop the test.
func checkHealthy(t *testing.T, m *Manager, ws string) {
	t.Helper()
	r := exec1(t, m, ws, "print(1)", 20*time.Second)
	if !r.OK || r.Stdout != "1\n" {
		t.Errorf("the next execution: ok=%v stdout=%q error=%+v", r.OK, r.Stdout, r.Error)
	}
}

// pyHead and pyTail frame an attack's Python: helpers, and a report
// (a dict named report) printed as JSON on the last line with the identity
// of the fork server it ran under: its start time and the sandbox's
// boot_id, which is random per sandbox at both levels (fork servers of two
// sandboxes may start in one clock tick).
const pyHead = `import ctypes, errno, json, os, platform, signal, socket, struct, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def zygote_id():
    if os.getppid() == 0:
        return ''
    try:
        with open('/proc/%d/stat' % os.getppid()) as f:
            start = f.read().rsplit(')', 1)[1].split()[19]
        with open('/proc/sys/kernel/random/boot_id') as f:
            return start + ' ' + f.read().strip()
    except OSError:
        return ''
def errname(e):
    if getattr(e, 'errno', None):
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__
def attempt(f, *args):
    ctypes.set_errno(0)
    r = f(*args)
    e = ctypes.get_errno()
    return 'ok' if r != -1 else errno.errorcode.get(e, str(e))
def sc(name, *args):
    return attempt(libc.syscall, ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args])
def tryit(f, *args, **kw):
    try:
        f(*args, **kw)
        return 'ok'
    except OSError as e:
        return errname(e)
    except Exception as e:
        return type(e).__name__
NR = {
    'x86_64': {'userfaultfd': 323, 'perf_event_open': 298, 'io_uring_setup': 425, 'io_uring_enter': 426,
               'io_uring_register': 427, 'open_tree': 428, 'fsopen': 430, 'pidfd_open': 434, 'pidfd_getfd': 438,
               'pidfd_send_signal': 424, 'process_vm_readv': 310, 'kcmp': 312, 'pivot_root': 155, 'syslog': 103,
               'getpid': 39, 'memfd_secret': 447},
    'aarch64': {'userfaultfd': 282, 'perf_event_open': 241, 'io_uring_setup': 425, 'io_uring_enter': 426,
                'io_uring_register': 427, 'open_tree': 428, 'fsopen': 430, 'pidfd_open': 434, 'pidfd_getfd': 438,
                'pidfd_send_signal': 424, 'process_vm_readv': 270, 'kcmp': 272, 'pivot_root': 41, 'syslog': 116,
                'getpid': 172, 'memfd_secret': 447},
}[platform.machine()]
report = {}
`

const pyTail = `
print(json.dumps(dict(report, zygote=zygote_id())))
`

func py(body string) string { return pyHead + body + pyTail }

// exec runs code with ctx bound as globals and h answering its calls (nil
// for none).
func (a *arena) exec(code string, ctx map[string]any, h CallHandler, timeout time.Duration) *Result {
	return a.m.Exec(context.Background(), Request{Workspace: a.ws, Code: code, Context: ctx, Calls: h, Timeout: timeout})
}

// report runs py(body), which must succeed, and returns its report.
func (a *arena) report(t *testing.T, body string, ctx map[string]any) map[string]any {
	t.Helper()
	var v map[string]any
	verdict(t, a.m, a.ws, py(body), ctx, false, &v)
	return v
}

// settle waits until the pool holds an idle sandbox and nothing is busy or
// starting, so that in production the next execution runs in the warm
// sandbox the last one left.
func (a *arena) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := a.m.PoolStats()
		if st.Busy == 0 && st.Starting == 0 && st.Idle >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sandbox came back to the pool: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// planted runs check (a baseline), then plant, then check again. The three
// share one warm sandbox, which their reports' zygote ids (the fork
// server's start time) confirm. It returns the two check reports without
// the ids, for the caller to compare.
func (a *arena) planted(t *testing.T, plant, check string, ctx map[string]any) (before, after map[string]any) {
	t.Helper()
	a.settle(t)
	before = a.report(t, check, ctx)
	a.settle(t)
	p := a.report(t, plant, ctx)
	a.settle(t)
	after = a.report(t, check, ctx)
	if before["zygote"] == "" || before["zygote"] != p["zygote"] || p["zygote"] != after["zygote"] {
		t.Fatalf("the executions did not share one warm sandbox (fork servers %v, %v, %v): the test proves nothing",
			before["zygote"], p["zygote"], after["zygote"])
	}
	t.Logf("planted: %s", toJSON(p))
	delete(before, "zygote")
	delete(after, "zygote")
	return before, after
}

// samePlanted fails unless the check found after planting what it found
// before.
func samePlanted(t *testing.T, before, after map[string]any) {
	t.Helper()
	if b, a := toJSON(before), toJSON(after); b != a {
		t.Errorf("the next execution found what the last one left:\nbefore %s\nafter  %s", b, a)
	}
}

// wantFailure fails unless r failed with an error of type typ whose
// message contains msg.
func wantFailure(t *testing.T, r *Result, typ, msg string) {
	t.Helper()
	if r.OK || r.Error == nil || r.Error.Type != typ || !strings.Contains(r.Error.Message, msg) {
		t.Fatalf("ok=%v error=%+v, want a %s error mentioning %q (stdout %.200q)", r.OK, r.Error, typ, msg, r.Stdout)
	}
}

// reportOK fails for every entry of a flat report that says "ok", but the
// ones in allowed.
func reportOK(t *testing.T, v map[string]any, allowed ...string) {
	t.Helper()
	n := 0
	for k, outcome := range v {
		if k == "zygote" {
			continue
		}
		n++
		if outcome == "ok" && !slices.Contains(allowed, k) {
			t.Errorf("%s succeeded inside the sandbox", k)
		}
	}
	if n == 0 {
		t.Fatal("empty report")
	}
}

// --- persistence ---------------------------------------------------------

func attackAbstractSocket(t *testing.T, a *arena) {
	mk := marker()
	ctx := map[string]any{"NAME": "codecell-redteam-" + mk, "MARKER": mk}
	plant := `s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind('\0' + NAME)
s.listen(8)
# A detached process keeps the listener open after the execution.
subprocess.Popen(['/usr/bin/sleep', MARKER], start_new_session=True, pass_fds=[s.fileno()])
report['bound'] = True
`
	check := `c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
report['connect'] = tryit(c.connect, '\0' + NAME)
`
	before, after := a.planted(t, plant, check, ctx)
	if after["connect"] == "ok" {
		t.Errorf("the next execution reached the last one's abstract socket")
	}
	samePlanted(t, before, after)
	waitGone(t, mk)
}

func attackInterpreterState(t *testing.T, a *arena) {
	plant := `import builtins, resource, shutil
os.environ['CODECELL_EVIL'] = '1'
os.putenv('CODECELL_EVIL2', '1')
builtins.EVIL = True
json.EVIL = True
shutil.rmtree = lambda *a, **k: None
sys.path.insert(0, '/tmp/evil')
sys.modules['evil'] = sys
sys.setrecursionlimit(60)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGUSR1, lambda *a: None)
os.umask(0)
os.chdir('/tmp')
resource.setrlimit(resource.RLIMIT_NOFILE, (16, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
report['planted'] = True
`
	check := `import builtins, resource, shutil
mask = os.umask(0o22)
os.umask(mask)
report.update({'env': os.environ.get('CODECELL_EVIL'), 'env2': os.environ.get('CODECELL_EVIL2'),
    'builtins': hasattr(builtins, 'EVIL'), 'json': hasattr(json, 'EVIL'), 'rmtree': shutil.rmtree.__name__,
    'path': '/tmp/evil' in sys.path, 'modules': 'evil' in sys.modules, 'recursion': sys.getrecursionlimit(),
    'sigterm': str(signal.getsignal(signal.SIGTERM)), 'sigusr1': str(signal.getsignal(signal.SIGUSR1)),
    'umask': mask, 'cwd': os.getcwd(), 'nofile': resource.getrlimit(resource.RLIMIT_NOFILE)})
`
	before, after := a.planted(t, plant, check, nil)
	samePlanted(t, before, after)
}

func attackLeftDescriptors(t *testing.T, a *arena) {
	mk := marker()
	plant := `import re, select
fds = [os.open(p, os.O_RDWR | os.O_CREAT, 0o600) for p in ('/tmp/held', '/dev/shm/held', 'held.txt')]
fds += list(os.pipe()) + [s.detach() for s in socket.socketpair()]
fds.append(os.eventfd(0))
ep = select.epoll()
fds.append(ep.fileno())
for i, fd in enumerate(fds):
    os.dup2(fd, 100 + i)
    os.set_inheritable(100 + i, True)
subprocess.Popen(['/usr/bin/sleep', MARKER], start_new_session=True, pass_fds=range(100, 100 + len(fds)))
report['left'] = len(fds)
`
	check := `import re
seen = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        seen[fd] = re.sub(r'\[\d+\]', '', os.readlink('/proc/self/fd/' + fd))
    except OSError:
        pass  # the directory listing's own descriptor
report['fds'] = seen
`
	before, after := a.planted(t, plant, check, map[string]any{"MARKER": mk})
	samePlanted(t, before, after)
	waitGone(t, mk)
	os.Remove(filepath.Join(a.ws, "held.txt"))
}

func attackHidingProcesses(t *testing.T, a *arena) {
	mk := marker()
	plant := `def detached(body):
    if os.fork() == 0:
        try:
            os.setsid()
            body()
        finally:
            os._exit(0)
def disguised():
    # Named like the runner, ignoring every signal it can.
    for s in range(1, 65):
        try:
            signal.signal(s, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass
    os.execv('/usr/bin/sleep', ['codecell_runner.py', MARKER])
def stopped():
    if os.fork() == 0:
        os.kill(os.getpid(), signal.SIGSTOP)
        os.execv('/usr/bin/sleep', ['sleep', MARKER])
    os.execv('/usr/bin/sleep', ['sleep', MARKER])
def racer():
    # Forks for as long as it lives, so that new processes appear while
    # the fork server kills the old ones.
    while True:
        try:
            if os.fork() == 0:
                os.execv('/usr/bin/sleep', ['sleep', MARKER])
        except OSError:
            time.sleep(0.001)
if os.fork() == 0:
    os._exit(0)  # a zombie: never reaped by this process
for body in (disguised, stopped, racer):  # the racer takes every process slot left
    detached(body)
time.sleep(0.3)
report['planted'] = True
`
	check := `me = os.getpid()
others = {}
for d in os.listdir('/proc'):
    if d.isdigit() and int(d) not in (1, me):
        try:
            with open('/proc/%s/cmdline' % d, 'rb') as f:
                others[d] = f.read().replace(b'\0', b' ').decode(errors='replace')
        except OSError as e:
            others[d] = errname(e)
report['others'] = others
`
	before, after := a.planted(t, plant, check, map[string]any{"MARKER": mk})
	samePlanted(t, before, after)
	waitGone(t, mk)
}

func attackPosixShm(t *testing.T, a *arena) {
	plant := `import _posixshmem, _multiprocessing
fd = _posixshmem.shm_open('/codecell_evil', os.O_CREAT | os.O_RDWR, 0o600)
os.ftruncate(fd, 1 << 20)
os.write(fd, b'left behind')
# A named semaphore, deliberately not unlinked.
sem = _multiprocessing.SemLock(1, 1, 1, '/codecell_sem', False)
report['planted'] = sorted(os.listdir('/dev/shm'))
`
	check := `import _posixshmem
report['shm'] = sorted(os.listdir('/dev/shm'))
report['open'] = tryit(_posixshmem.shm_open, '/codecell_evil', os.O_RDWR, 0)
`
	before, after := a.planted(t, plant, check, nil)
	if after["open"] == "ok" {
		t.Errorf("the next execution opened the last one's shared memory")
	}
	samePlanted(t, before, after)
}

// attackSessionLeftovers: a session's /tmp, globals and background
// processes reach neither a plain execution in the same workspace nor
// anything after the session is closed.
func attackSessionLeftovers(t *testing.T, a *arena) {
	mk := marker()
	s, err := a.m.OpenSession(context.Background(), Request{Workspace: a.ws})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.Exec(context.Background(), Request{Workspace: a.ws, Timeout: 20 * time.Second, Context: map[string]any{"MARKER": mk}, Code: `import os, subprocess
open('/tmp/from-session', 'w').write('session data')
secret = 'session global'
subprocess.Popen(['/usr/bin/sleep', MARKER], start_new_session=True)
print('planted')`})
	if !r.OK {
		t.Fatalf("session: %+v", r.Error)
	}
	v := a.report(t, `report['tmp'] = os.path.exists('/tmp/from-session')
report['global'] = 'secret' in globals()
found = []
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            if MARKER in open('/proc/%s/cmdline' % d).read():
                found.append(d)
        except OSError:
            pass
report['processes'] = found
`, map[string]any{"MARKER": mk})
	if v["tmp"] != false || v["global"] != false || len(v["processes"].([]any)) != 0 {
		t.Errorf("a plain execution saw the session's state: %s", toJSON(v))
	}
	s.Close()
	waitGone(t, mk)
}

// --- the fork server -----------------------------------------------------

func attackOtherProcessMemory(t *testing.T, a *arena) {
	v := a.report(t, `me = os.getpid()
pids = [d for d in os.listdir('/proc') if d.isdigit() and int(d) != me]
for d in pids:
    for f, flags in [('mem', os.O_RDWR), ('mem', os.O_RDONLY), ('environ', os.O_RDONLY), ('maps', os.O_RDONLY),
                     ('auxv', os.O_RDONLY), ('syscall', os.O_RDONLY), ('pagemap', os.O_RDONLY), ('stack', os.O_RDONLY)]:
        def op():
            os.close(os.open('/proc/%s/%s' % (d, f), flags))
        report['%s/%s%s' % (d, f, ' rw' if flags == os.O_RDWR else '')] = tryit(op)
    for f in ('fd', 'cwd', 'root', 'map_files'):
        report['%s/%s' % (d, f)] = tryit(os.listdir, '/proc/%s/%s' % (d, f))
`, nil)
	delete(v, "zygote")
	if len(v) == 0 {
		t.Fatal("no other process in the sandbox: the test proves nothing")
	}
	reportOK(t, v)
}

// attackTakeOverInit writes code into the sandbox's init through
// /proc/1/mem: code that clears its parent-death signal, so that when the
// host kills bubblewrap the PID namespace and the code's processes live on.
// (Before the fork server was init, bubblewrap's dumpable reaper was, and
// this worked: processes outlived their sandbox and the manager.)
func attackTakeOverInit(t *testing.T, a *arena) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the injected code is x86-64")
	}
	mk := marker()
	r := a.exec(py(`subprocess.Popen(['/usr/bin/sleep', MARKER], start_new_session=True)
# prctl(PR_SET_PDEATHSIG, 0); for (;;) pause();
code = bytes([0xbf, 1, 0, 0, 0, 0x31, 0xf6, 0xb8, 157, 0, 0, 0, 0x0f, 0x05, 0xb8, 34, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7])
try:
    pc = int(open('/proc/1/syscall').read().split()[-1], 16)
    fd = os.open('/proc/1/mem', os.O_RDWR)
    os.pwrite(fd, code, pc)
    report['init'] = 'injected'
except OSError as e:
    report['init'] = errname(e)
if report['init'] == 'injected':
    print(json.dumps(report), flush=True)
    libc.prctl(1, 0, 0, 0, 0)
    os.kill(os.getppid(), signal.SIGKILL)  # wakes init, which now runs the code
    time.sleep(2)
`), map[string]any{"MARKER": mk}, nil, 20*time.Second)
	t.Logf("ok=%v error=%+v stdout %q", r.OK, r.Error, r.Stdout)
	if strings.Contains(r.Stdout, "injected") {
		t.Errorf("the code wrote into the memory of the sandbox's init")
	}
	a.settle(t)
	if pids := hostProcessesWith(mk); len(pids) > 0 {
		time.Sleep(2 * time.Second)
		if pids = hostProcessesWith(mk); len(pids) > 0 {
			killSurvivors(pids)
			t.Fatalf("processes of the sandbox outlived it: %v", pids)
		}
	}
}

// killSurvivors kills host processes and their ancestors up to the first
// that is not part of a sandbox (bubblewrap or the runner).
func killSurvivors(pids []int) {
	for _, pid := range pids {
		for p := pid; p > 1; {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			if err != nil {
				break
			}
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			if p != pid && !strings.HasPrefix(string(cmd), BwrapPath) && !strings.Contains(string(cmd), "codecell_runner") {
				break
			}
			syscall.Kill(p, syscall.SIGKILL)
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if len(f) < 2 {
				break
			}
			p, _ = strconv.Atoi(f[1])
		}
	}
}

func attackSignalZygote(t *testing.T, a *arena) {
	a.settle(t)
	v := a.report(t, `z = os.getppid()
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM, signal.SIGSTOP, signal.SIGKILL):
    report['kill %s' % s.name] = tryit(os.kill, z, s)
time.sleep(0.3)
with open('/proc/%d/stat' % z) as f:
    report['state'] = f.read().rsplit(')', 1)[1].split()[0]
`, nil)
	if s := v["state"]; s != "S" && s != "R" {
		t.Errorf("the fork server's state after the signals: %v", s)
	}
	a.settle(t)
	w := a.report(t, "", nil)
	if v["zygote"] != w["zygote"] {
		t.Errorf("the fork server did not survive the code's signals (fork server %v, then %v)", v["zygote"], w["zygote"])
	}
}

func attackPidfd(t *testing.T, a *arena) {
	v := a.report(t, `z = os.getppid()
ctypes.set_errno(0)
pidfd = libc.syscall(ctypes.c_long(NR['pidfd_open']), ctypes.c_long(z), ctypes.c_long(0))
if pidfd >= 0:
    report['pidfd_getfd(zygote, 0..9)'] = 'ok' if any(sc('pidfd_getfd', pidfd, n, 0) == 'ok' for n in range(10)) else sc('pidfd_getfd', pidfd, 3, 0)
    report['pidfd_send_signal(SIGKILL)'] = sc('pidfd_send_signal', pidfd, 9, 0, 0)
buf = ctypes.create_string_buffer(64)
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
local, remote = iovec(ctypes.addressof(buf), 64), iovec(0x400000, 64)
report['process_vm_readv(zygote)'] = attempt(libc.syscall, ctypes.c_long(NR['process_vm_readv']), ctypes.c_long(z),
    ctypes.byref(local), ctypes.c_long(1), ctypes.byref(remote), ctypes.c_long(1), ctypes.c_long(0))
report['kcmp(self, zygote)'] = sc('kcmp', os.getpid(), z, 0, 0, 0)
report['ptrace(PTRACE_SEIZE, zygote)'] = attempt(libc.ptrace, ctypes.c_long(0x4206), ctypes.c_long(z), None, None)
time.sleep(0.2)
report['zygote alive'] = 'ok' if tryit(os.kill, z, 0) == 'ok' else 'gone'
`, nil)
	if v["zygote alive"] != "ok" {
		t.Errorf("the fork server died: %s", toJSON(v))
	}
	delete(v, "zygote alive")
	// The signal "succeeds" from the sender's side; as init the fork
	// server never gets it, which the check above shows.
	reportOK(t, v, "pidfd_send_signal(SIGKILL)")
}

func attackPrctl(t *testing.T, a *arena) {
	mk := marker()
	v := a.report(t, `# A subreaper of its own, no parent-death signal, grandchildren orphaned below it.
report['PR_SET_CHILD_SUBREAPER'] = attempt(libc.prctl, 36, 1, 0, 0, 0)
libc.prctl(1, 0, 0, 0, 0)
if os.fork() == 0:
    for _ in range(3):
        if os.fork() == 0:
            os.setsid()
            libc.prctl(15, b'codecell_runner', 0, 0, 0)
            os.execv('/usr/bin/sleep', ['sleep', MARKER])
    os._exit(0)
report['PR_SET_MM'] = attempt(libc.prctl, 35, 8, ctypes.c_ulong(0x1000), 0, 0)
report['PR_CAP_AMBIENT_RAISE(CAP_SYS_ADMIN)'] = attempt(libc.prctl, 47, 2, 21, 0, 0)
report['PR_SET_SECUREBITS'] = attempt(libc.prctl, 28, 0x2f, 0, 0, 0)
report['PR_SET_NO_NEW_PRIVS(0)'] = attempt(libc.prctl, 38, 0, 0, 0, 0)
`, map[string]any{"MARKER": mk})
	if v["PR_SET_CHILD_SUBREAPER"] != "ok" {
		t.Logf("no subreaper: %v", v["PR_SET_CHILD_SUBREAPER"])
	}
	delete(v, "PR_SET_CHILD_SUBREAPER")
	reportOK(t, v)
	waitGone(t, mk)
	w := a.report(t, `report['others'] = [d for d in os.listdir('/proc') if d.isdigit() and int(d) not in (1, os.getpid())]`, nil)
	if len(w["others"].([]any)) != 0 {
		t.Errorf("the orphans outlived the execution: %v", w["others"])
	}
}

// TestRedTeamInheritedDescriptors: a descriptor codecell's own process
// inherited without close-on-exec (from a supervisor, a shell, a host
// application) does not reach the code. Not parallel: it leaks a
// descriptor into the test process on purpose.
func TestRedTeamInheritedDescriptors(t *testing.T) {
	mk := marker()
	secret := filepath.Join(t.TempDir(), "inherited.txt")
	if err := os.WriteFile(secret, []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	// syscall.Open, unlike os.Open, does not set close-on-exec.
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for _, level := range isolatedLevels {
		t.Run(string(level), func(t *testing.T) {
			m, ws := levelManager(t, level, Limits{})
			a := &arena{level: level, m: m, ws: ws}
			v := a.report(t, `found = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        target = os.readlink('/proc/self/fd/' + fd)
        data = os.pread(int(fd), 64, 0) if target.startswith('/') else b''
    except OSError:
        continue
    found[fd] = [target, data.decode(errors='replace')]
report['fds'] = found
`, nil)
			if strings.Contains(toJSON(v), mk) {
				t.Errorf("the code read a descriptor codecell inherited: %s", toJSON(v["fds"]))
			}
			for fd, what := range v["fds"].(map[string]any) {
				if target := what.([]any)[0].(string); strings.HasPrefix(target, "/") && target != "/dev/null" {
					t.Errorf("the code holds descriptor %s on %s", fd, target)
				}
			}
		})
	}
}

// --- the channel -----------------------------------------------------------

// chanHead gives the code the raw channel: raw writes bytes on it, frame
// encodes an object as the runner does.
const chanHead = `import json, os, struct, time
from codecell import _rpc
ch = _rpc._chan
def raw(b):
    v = memoryview(b)
    while v:
        v = v[os.write(ch.wfd, v):]
def frame(obj):
    d = json.dumps(obj).encode()
    return struct.pack('>I', len(d)) + d
`

// channelAttack writes what body writes on the channel and then waits; the
// host must end the execution with an error of type typ mentioning msg.
func channelAttack(body, typ, msg string) func(*testing.T, *arena) {
	return func(t *testing.T, a *arena) {
		r := a.exec(chanHead+body+"\ntime.sleep(10)\n", nil, &echoHandler{}, 30*time.Second)
		wantFailure(t, r, typ, msg)
		if typ == ErrSandbox && !strings.Contains(r.Error.Message, "channel") {
			t.Errorf("the error does not say the channel broke: %s", r.Error.Message)
		}
	}
}

func attackCallsAfterResult(t *testing.T, a *arena) {
	h := &echoHandler{}
	r := a.exec(chanHead+`call = frame({'type': 'call', 'id': 7, 'method': 'tool', 'params': {'server': 's', 'tool': 't', 'arguments': {}}})
raw(frame({'type': 'result', 'ok': True, 'error': None, 'result': {'kind': 'json', 'value': 'forged'}}) + call * 50
    + frame({'type': 'output', 'stream': 'stdout', 'data': 'after the result'}))
time.sleep(0.5)
os._exit(0)
`, nil, h, 30*time.Second)
	if h.calls.Load() != 0 {
		t.Errorf("the host answered %d calls sent after the result", h.calls.Load())
	}
	if strings.Contains(r.Stdout, "after the result") {
		t.Errorf("output sent after the result counted: %q", r.Stdout)
	}
	if !r.OK || r.Result != "forged" {
		t.Errorf("ok=%v result=%v error=%+v, want the code's own (forged) result", r.OK, r.Result, r.Error)
	}
}

func attackCallStorm(t *testing.T, a *arena) {
	h := &echoHandler{}
	r := a.exec(chanHead+`import threading
def drain():
    try:
        while os.read(ch.rfd, 1 << 16):
            pass
    except OSError:
        pass
threading.Thread(target=drain, daemon=True).start()
blob = frame({'type': 'call', 'id': 1, 'method': 'noop', 'params': {}}) * 1000
for _ in range(101):
    raw(blob)
time.sleep(20)
`, nil, h, 60*time.Second)
	wantFailure(t, r, ErrSandbox, "more than 100000 calls")
}

func attackCallsNeverRead(t *testing.T, a *arena) {
	a.settle(t) // the timeout counts from the request, and a cold start would take part of it
	r := a.exec(chanHead+`raw(frame({'type': 'call', 'id': 1, 'method': 'tool', 'params': {'server': 's', 'tool': 't', 'arguments': {'pad': 'x' * 1000}}}) * 20000)
`, nil, &echoHandler{}, 5*time.Second)
	wantFailure(t, r, ErrTimeout, "timeout")
}

func attackDescriptorsToHost(t *testing.T, a *arena) {
	mk := marker()
	r := a.exec(pyHead+chanHead+`import array
s = socket.socket(fileno=os.dup(ch.wfd))
fds = array.array('i', [os.memfd_create('codecell-leak-' + MARKER) for _ in range(200)])
sent = 0
for _ in range(20):
    try:
        s.sendmsg([frame({'type': 'output', 'stream': 'stdout', 'data': '.'})], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        sent += 1
    except OSError as e:  # ETOOMANYREFS: the kernel bounds descriptors in flight by RLIMIT_NOFILE
        print(errname(e))
        time.sleep(0.05)
print('sent', sent)
`, map[string]any{"MARKER": mk}, nil, 30*time.Second)
	if !r.OK || !strings.Contains(r.Stdout, "sent") || strings.Contains(r.Stdout, "sent 0") {
		t.Fatalf("ok=%v error=%+v stdout %q", r.OK, r.Error, r.Stdout)
	}
	links, _ := filepath.Glob("/proc/self/fd/*")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.Contains(target, mk) {
			t.Fatalf("the host holds a descriptor the code sent: %s -> %s", l, target)
		}
	}
}

func attackInvalidUTF8(t *testing.T, a *arena) {
	r := a.exec(chanHead+`d = b'{"type": "output", "stream": "stdout", "data": "\xff\xfe bad \xed\xa0\x80"}'
raw(struct.pack('>I', len(d)) + d)
os.write(1, b'pipe \xff\xc0\xed\xa0\x80 bytes\n')
time.sleep(0.5)  # under gVisor a thread of the runner forwards the pipe: let it
raw(frame({'type': 'result', 'ok': True, 'error': None, 'result': {'kind': 'json', 'value': '\ud800 lone'}}))
os._exit(0)
`, nil, nil, 30*time.Second)
	if !r.OK {
		t.Fatalf("ok=%v error=%+v", r.OK, r.Error)
	}
	if !utf8.ValidString(r.Stdout) || !utf8.ValidString(toJSON(r.Result)) || !strings.Contains(r.Stdout, "bytes") {
		t.Errorf("stdout %q result %q: want valid UTF-8", r.Stdout, toJSON(r.Result))
	}
}

func attackChannelClosed(t *testing.T, a *arena) {
	r := a.exec(chanHead+`os.close(ch.wfd)
if ch.rfd != ch.wfd:
    os.close(ch.rfd)
print('closed', flush=True)
os._exit(0)
`, nil, nil, 30*time.Second)
	wantFailure(t, r, "SystemExit", "before returning a result")
}

// attackDeepResult forges a result nested as deep as the host's frame
// decoder takes; past the MCP SDK's limit of 1000 levels it failed the
// whole answer with a protocol error.
func attackDeepResult(t *testing.T, a *arena) {
	r := a.exec(chanHead+`d = b'{"type": "result", "ok": true, "error": null, "result": {"kind": "json", "value": ' + b'[' * 9990 + b']' * 9990 + b'}}'
raw(struct.pack('>I', len(d)) + d)
os._exit(0)
`, nil, nil, 30*time.Second)
	s, _ := r.Result.(string)
	if !r.OK || !strings.HasPrefix(s, "[codecell: the result nests more than") || !strings.Contains(s, "[[[[") {
		t.Fatalf("ok=%v error=%+v result %.120v", r.OK, r.Error, r.Result)
	}
	if nestsDeeper(r.Result, maxResultDepth) {
		t.Fatal("the result still nests too deep")
	}
}

// --- resource exhaustion ----------------------------------------------------

func attackThreads(t *testing.T, a *arena) {
	v := a.report(t, `import threading
ev = threading.Event()
n = 0
try:
    for _ in range(5000):
        threading.Thread(target=ev.wait, daemon=True).start()
        n += 1
except (RuntimeError, MemoryError) as e:
    report['error'] = type(e).__name__ + ': ' + str(e)
ev.set()
report['threads'] = n
`, nil)
	if v["error"] == nil || v["threads"].(float64) > float64(DefaultLimits.Pids) {
		t.Errorf("%v threads started (limit %d processes), error %v", v["threads"], DefaultLimits.Pids, v["error"])
	}
}

func attackInotify(t *testing.T, a *arena) {
	code := `n = 0
while n < 2000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        report['error'] = errno.errorcode.get(ctypes.get_errno(), '?')
        break
    n += 1
report['instances'] = n
`
	v := a.report(t, code, nil)
	if v["error"] == nil || v["instances"].(float64) > float64(DefaultLimits.OpenFiles) {
		t.Errorf("%v inotify instances, error %v", v["instances"], v["error"])
	}
	if w := a.report(t, code, nil); w["instances"].(float64) == 0 {
		t.Errorf("the next execution could not get an inotify instance: %v", w["error"])
	}
}

// attackInotifyShared: while one execution holds every inotify instance it
// can, another, in another sandbox, asks for one. The kernel counts them
// per user up the user namespaces, and every production sandbox's user is
// the host's nobody.
func attackInotifyShared(t *testing.T, a *arena) {
	a.settle(t)
	release := filepath.Join(a.ws, "release-inotify")
	defer os.Remove(release)
	holding := make(chan struct{})
	var once sync.Once
	done := make(chan *Result, 1)
	go func() {
		done <- a.m.Exec(context.Background(), Request{Workspace: a.ws, Timeout: 30 * time.Second,
			OnOutput: func(_ string, p []byte) {
				if strings.Contains(string(p), "holding") {
					once.Do(func() { close(holding) })
				}
			},
			Code: `import ctypes, os, time
libc = ctypes.CDLL(None)
fds = []
while len(fds) < 2000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
print('holding', len(fds), flush=True)
for _ in range(200):
    if os.path.exists('release-inotify'):
        break
    time.sleep(0.1)
`})
	}()
	select {
	case <-holding:
	case r := <-done:
		t.Fatalf("the holder ended before it held anything: %+v %q", r.Error, r.Stdout)
	}
	v := a.report(t, `fd = libc.inotify_init1(0)
report['inotify'] = 'ok' if fd >= 0 else errno.errorcode.get(ctypes.get_errno(), '?')
`, nil)
	os.WriteFile(release, nil, 0o644)
	held := <-done
	if v["inotify"] == "ok" {
		return
	}
	if a.level == Production {
		t.Skipf("known gap: every production sandbox runs as the host's nobody, so per-user kernel limits are shared: "+
			"while one execution held inotify instances (%q), another sandbox's got %v (issue #14)", strings.TrimSpace(held.Stdout), v["inotify"])
	}
	t.Errorf("while one execution held inotify instances (%q), another sandbox's got %v", strings.TrimSpace(held.Stdout), v["inotify"])
}

func attackEventDescriptors(t *testing.T, a *arena) {
	v := a.report(t, `import select
made = {'eventfd': 0, 'epoll': 0, 'timerfd': 0}
held = []
try:
    for i in range(10000):
        kind = ('eventfd', 'epoll', 'timerfd')[i % 3]
        if kind == 'eventfd':
            held.append(os.eventfd(0))
        elif kind == 'epoll':
            held.append(select.epoll())
        else:
            fd = libc.timerfd_create(1, 0)
            if fd < 0:
                raise OSError(ctypes.get_errno(), 'timerfd_create')
            held.append(fd)
        made[kind] += 1
except OSError as e:
    report['error'] = errname(e)
report['made'] = sum(made.values())
`, nil)
	if v["error"] != "EMFILE" || v["made"].(float64) > float64(DefaultLimits.OpenFiles) {
		t.Errorf("%v descriptors made, error %v; want EMFILE within %d", v["made"], v["error"], DefaultLimits.OpenFiles)
	}
}

func attackRaiseLimits(t *testing.T, a *arena) {
	v := a.report(t, `import resource
for name in ('RLIMIT_NOFILE', 'RLIMIT_NPROC', 'RLIMIT_AS', 'RLIMIT_FSIZE', 'RLIMIT_CPU'):
    which = getattr(resource, name)
    soft, hard = resource.getrlimit(which)
    if hard == resource.RLIM_INFINITY:
        report[name] = 'unlimited'
        continue
    report[name] = tryit(resource.setrlimit, which, (hard + 1, hard + 1))
`, nil)
	for k, outcome := range v {
		if outcome == "unlimited" {
			t.Errorf("%s has no hard limit", k)
		}
	}
	reportOK(t, v)
}

func attackFillShm(t *testing.T, a *arena) {
	v := a.report(t, `n = 0
try:
    with open('/dev/shm/fill', 'wb') as f:
        for _ in range(256):
            f.write(b'x' * (1 << 20))
            f.flush()
            n += 1
except OSError as e:
    report['error'] = errname(e)
report['mib'] = n
`, nil)
	if v["error"] != "ENOSPC" || v["mib"].(float64) > float64(DefaultLimits.TmpSize>>20) {
		t.Errorf("/dev/shm took %v MiB, error %v; want ENOSPC within %d MiB", v["mib"], v["error"], DefaultLimits.TmpSize>>20)
	}
	w := a.report(t, `report['shm'] = os.listdir('/dev/shm')
open('/dev/shm/next', 'wb').write(b'x' * (1 << 20))
`, nil)
	if len(w["shm"].([]any)) != 0 {
		t.Errorf("/dev/shm in the next execution: %v", w["shm"])
	}
}

func attackHugeArgv(t *testing.T, a *arena) {
	v := a.report(t, `report['argv'] = tryit(subprocess.run, ['/usr/bin/true'] + ['x' * 1000] * 65536)
report['one huge argument'] = tryit(subprocess.run, ['/usr/bin/true', 'x' * (1 << 20)])
report['env'] = tryit(subprocess.run, ['/usr/bin/true'], env={'A': 'x' * (1 << 20)})
`, nil)
	reportOK(t, v)
}

func attackZombies(t *testing.T, a *arena) {
	v := a.report(t, `n = 0
while n < 1000:
    try:
        pid = os.fork()
    except OSError as e:
        report['error'] = errname(e)
        break
    if pid == 0:
        os._exit(0)
    n += 1
time.sleep(0.2)
report['zombies'] = n
`, nil)
	if v["error"] == nil || v["zombies"].(float64) > float64(DefaultLimits.Pids) {
		t.Errorf("%v children forked and left unreaped, error %v", v["zombies"], v["error"])
	}
	a.settle(t)
	w := a.report(t, `report['others'] = [d for d in os.listdir('/proc') if d.isdigit() and int(d) not in (1, os.getpid())]
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
`, nil)
	if len(w["others"].([]any)) != 0 {
		t.Errorf("processes left for the next execution: %v", w["others"])
	}
}

func attackMmap(t *testing.T, a *arena) {
	v := a.report(t, `import mmap
report['mmap 4 GiB'] = tryit(mmap.mmap, -1, 4 << 30)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
p = libc.mmap(None, 64 << 30, 3, 0x22 | 0x4000, -1, 0)  # MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE
report['mmap 64 GiB, no reserve'] = 'ok' if p not in (None, ctypes.c_void_p(-1).value) else errno.errorcode.get(ctypes.get_errno(), '?')
`, nil)
	reportOK(t, v)
}

// attackMemfd holds memory the address-space limit does not count: the
// pages of memory files written with write(2), never mapped. A sandbox's
// cgroup counts them: the kernel stops the execution with MemoryLimit.
func attackMemfd(t *testing.T, a *arena) {
	// Past the limit and past what a sandbox's cgroup allows beside it
	// (ForkServerMemory, GVisorMemory).
	held := int64(800 << 20)
	code := py(`chunk = b'x' * (1 << 20)
fds, n = [], 0
try:
    while n < HELD >> 20:
        if n % 200 == 0:
            fds.append(os.memfd_create('hold'))
        os.write(fds[-1], chunk)
        n += 1
except (OSError, MemoryError) as e:
    report['error'] = errname(e)
report['held'] = n << 20
`)
	r := a.exec(code, map[string]any{"HELD": held}, nil, slack)
	if r.Error != nil && r.Error.Type == ErrMemoryLimit {
		return
	}
	var v map[string]any
	verdictOf(t, r, false, &v)
	if got := int64(v["held"].(float64)); got > DefaultLimits.Memory+GVisorMemory {
		if perSandbox, how := a.m.MemoryScope(); !perSandbox {
			t.Skipf("known gap where there is no cgroup: memory is limited %s; one process held %d MiB of memory files past its %d MiB limit",
				how, got>>20, DefaultLimits.Memory>>20)
		}
		t.Errorf("one process held %d MiB of memory files past the sandbox's %d MiB limit", got>>20, DefaultLimits.Memory>>20)
	}
}

// attackManyProcesses holds memory in several processes, each under the
// limit alone (issue #14: five held 398 MiB with a 128 MiB limit).
func attackManyProcesses(t *testing.T, a *arena) {
	r := a.exec(memoryHogs(6, 128), nil, nil, slack)
	if r.Error != nil && r.Error.Type == ErrMemoryLimit {
		return
	}
	if strings.Contains(r.Stdout, "all held") {
		if perSandbox, how := a.m.MemoryScope(); !perSandbox {
			t.Skipf("known gap where there is no cgroup: memory is limited %s; six processes held 6 x 128 MiB under a %d MiB limit", how, DefaultLimits.Memory>>20)
		}
		t.Fatalf("six processes held 6 x 128 MiB under a %d MiB sandbox limit", DefaultLimits.Memory>>20)
	}
	t.Fatalf("want MemoryLimit, got ok=%v error=%+v stdout=%q", r.OK, r.Error, r.Stdout)
}

func attackSparse(t *testing.T, a *arena) {
	v := a.report(t, `for p in ('sparse', '/tmp/sparse'):
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
    report['truncate %s to 1 TiB' % p] = tryit(os.ftruncate, fd, 1 << 40)
    report['write %s at 1 TiB' % p] = tryit(os.pwrite, fd, b'x', 1 << 40)
    os.close(fd)
`, nil)
	reportOK(t, v)
	if info, err := os.Stat(filepath.Join(a.ws, "sparse")); err == nil && info.Size() > DefaultLimits.FileSize {
		t.Errorf("the file on the host is %d bytes, limit %d", info.Size(), DefaultLimits.FileSize)
	}
	os.Remove(filepath.Join(a.ws, "sparse"))
}

// attackPythonStartupFiles plants, in the workspace (HOME and the working
// directory), every file a python subprocess might run at start-up or
// import in place of the standard library's: .pth files and usercustomize
// in the user site, sitecustomize, and modules named after json, pip and
// site. A later execution's ordinary python subprocesses must run none.
// (Code that asks for them, with -E or its own environment, gets them.)
func attackPythonStartupFiles(t *testing.T, a *arena) {
	plant := py(`import sys
v = 'python%d.%d' % sys.version_info[:2]
dirs = ['/workspace', '/workspace/.local/lib/%s/site-packages' % v, '/workspace/.local/lib/python3/site-packages']
for d in dirs:
    os.makedirs(d, exist_ok=True)
    for name, text in (('planted.pth', 'import sys; sys.stderr.write("PLANTED pth\\n")\n'),
                       ('usercustomize.py', 'import sys; sys.stderr.write("PLANTED usercustomize\\n")\n'),
                       ('sitecustomize.py', 'import sys; sys.stderr.write("PLANTED sitecustomize\\n")\n')):
        with open(os.path.join(d, name), 'w') as f:
            f.write(text)
for mod in ('json', 'site', 'textwrap', 'runpy', 'encodings'):
    with open('/workspace/%s.py' % mod, 'w') as f:
        f.write('import sys; sys.stderr.write("PLANTED %s\\n")\n' % mod)
os.makedirs('/workspace/pip', exist_ok=True)
with open('/workspace/pip/__init__.py', 'w') as f:
    f.write('import sys; sys.stderr.write("PLANTED pip\\n")\n')
with open('/workspace/pip/__main__.py', 'w') as f:
    f.write('import sys; sys.stderr.write("PLANTED pip main\\n")\n')
with open('/workspace/script.py', 'w') as f:
    f.write('import json, textwrap; print("script ran")\n')
report['planted'] = True
`)
	defer func() {
		for _, p := range []string{".local", "json.py", "site.py", "textwrap.py", "runpy.py", "encodings.py", "pip", "script.py",
			"planted.pth", "usercustomize.py", "sitecustomize.py"} {
			os.RemoveAll(filepath.Join(a.ws, p))
		}
	}()
	var v map[string]any
	verdictOf(t, a.exec(plant, nil, nil, slack), false, &v)
	a.settle(t)
	w := a.report(t, `runs = {}
for args in (['-c', 'pass'], ['-c', 'import json, textwrap'], ['-m', 'site'], ['-m', 'json.tool', '/dev/null'],
             ['-m', 'pip', '--version'], ['script.py'], ['-s', '-c', 'pass']):
    p = subprocess.run([sys.executable] + args, capture_output=True, text=True, cwd='/workspace', timeout=60)
    runs[' '.join(args)] = p.stderr + p.stdout
report['runs'] = runs
`, nil)
	runs, _ := w["runs"].(map[string]any)
	if len(runs) == 0 {
		t.Fatalf("no runs: %v", w)
	}
	for args, out := range runs {
		if strings.Contains(fmt.Sprint(out), "PLANTED") {
			t.Errorf("python3 %s in a later execution ran a file planted in the workspace: %q", args, out)
		}
	}
}

// --- information leaks -------------------------------------------------------

// mountTables is code that reports the sandbox's mount tables.
const mountTables = `for p in ('/proc/self/mountinfo', '/proc/self/mounts', '/proc/1/mountinfo'):
    try:
        report[p] = open(p).read()
    except OSError as e:
        report[p] = errname(e)
`

// attackMountinfo: the mount table shows, for each bind, the source's path
// within its filesystem. The runner is copied in, not bound, so the state
// directory never shows; a workspace shows its host path unless it is a
// filesystem of its own (an image, TestMountinfoWorkspaceOfItsOwn), which
// this test's plain directory is not.
func attackMountinfo(t *testing.T, a *arena) {
	text := toJSON(a.report(t, mountTables, nil))
	if strings.Contains(text, a.m.opts.StateDir) {
		t.Errorf("the state directory %s (the runner's place) is in the sandbox's mount table", a.m.opts.StateDir)
	}
	var seen []string
	for _, p := range []string{a.ws, filepath.Dir(a.ws)} {
		if strings.Contains(text, p) {
			seen = append(seen, p)
		}
	}
	if len(seen) == 0 {
		return
	}
	if a.level == Production && !ownFilesystem(a.ws) {
		t.Skipf("known gap: /proc/self/mountinfo shows the path of a bound directory within its filesystem, here a plain workspace directory: %v; "+
			"a workspace image, or a data dir on a filesystem of its own, shows none (issue #14)", seen)
	}
	t.Errorf("host paths in the sandbox's mount table: %v", seen)
}

// ownFilesystem reports whether dir is the root of a filesystem (a mount of
// its own, not a directory within its parent's).
func ownFilesystem(dir string) bool {
	var st, parent syscall.Stat_t
	if syscall.Stat(dir, &st) != nil || syscall.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// TestMountinfoWorkspaceOfItsOwn: with the workspace a filesystem of its
// own, as a workspace image is, the sandbox's mount table shows nothing of
// the host's paths: not the workspace's, not the data dir's (the runner is
// copied in). The workspace here is a tmpfs, which needs root to mount.
func TestMountinfoWorkspaceOfItsOwn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a filesystem for the workspace needs root")
	}
	m, _ := newTestManager(t, Production, Limits{}, 0)
	ws := filepath.Join(reachableTempDir(t), "ns-secret-name", "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", ws, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs for the workspace: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(ws, syscall.MNT_DETACH) })
	var v map[string]any
	verdict(t, m, ws, py(mountTables), nil, false, &v)
	text := toJSON(v)
	if !strings.Contains(text, WorkspaceMount) {
		t.Fatalf("no %s in the mount table: the test proves nothing: %.300s", WorkspaceMount, text)
	}
	for _, p := range []string{filepath.Dir(filepath.Dir(ws)), m.opts.StateDir, "ns-secret-name"} {
		if strings.Contains(text, p) {
			t.Errorf("the sandbox's mount table shows %s", p)
		}
	}
}

func attackBootID(t *testing.T, a *arena) {
	host, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("no boot_id on the host: %v", err)
	}
	v := a.report(t, `try:
    report['boot_id'] = open('/proc/sys/kernel/random/boot_id').read()
except OSError as e:
    report['boot_id'] = errname(e)
`, nil)
	if v["boot_id"] == string(host) {
		t.Fatalf("the sandbox reads the host's boot_id %s", strings.TrimSpace(string(host)))
	}
	if a.level != Production {
		return
	}
	// Another sandbox reads another, so code cannot tell whether two
	// sandboxes share a host: a session holds one sandbox while a plain
	// execution runs in a second.
	sess, err := a.m.OpenSession(context.Background(), Request{Workspace: a.ws})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	read := py(`report['boot_id'] = open('/proc/sys/kernel/random/boot_id').read()`)
	var in, out map[string]any
	verdictOf(t, sess.Exec(context.Background(), Request{Workspace: a.ws, Code: read, Timeout: slack}), false, &in)
	verdictOf(t, a.exec(read, nil, nil, slack), false, &out)
	if in["zygote"] == out["zygote"] {
		t.Fatalf("the session and the execution ran in one sandbox (%v): the test proves nothing", in["zygote"])
	}
	if in["boot_id"] == out["boot_id"] || in["boot_id"] == string(host) {
		t.Errorf("two sandboxes read boot_ids %q and %q (the host's is %q)", in["boot_id"], out["boot_id"], host)
	}
}

func attackHostUnixSockets(t *testing.T, a *arena) {
	mk := marker()
	abstract, err := net.Listen("unix", "@codecell-redteam-"+mk)
	if err != nil {
		t.Fatal(err)
	}
	defer abstract.Close()
	path := filepath.Join(reachableTempDir(t), "host.sock")
	named, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	os.Chmod(path, 0o777)
	v := a.report(t, `for name, addr in (('abstract', '\0codecell-redteam-' + MARKER), ('named', PATH)):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    report[name] = tryit(c.connect, addr)
`, map[string]any{"MARKER": mk, "PATH": path})
	reportOK(t, v)
	for _, ln := range []net.Listener{abstract, named} {
		ln.(*net.UnixListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
		if c, err := ln.Accept(); err == nil {
			c.Close()
			t.Errorf("%s accepted a connection from the sandbox", ln.Addr())
		}
	}
}

func attackKernelInfo(t *testing.T, a *arena) {
	v := a.report(t, `def read(p, n=1 << 16):
    try:
        with open(p) as f:
            return f.read(n)
    except OSError as e:
        return errname(e)
report['/proc/keys'] = read('/proc/keys')
report['/proc/key-users'] = read('/proc/key-users')
syms = read('/proc/kallsyms', 1 << 20)
report['kallsyms addresses'] = sum(1 for l in syms.splitlines() if ' ' in l and l.split(' ', 1)[0].strip('0'))
report['/proc/kmsg'] = read('/proc/kmsg', 1)
report['/dev/kmsg'] = read('/dev/kmsg', 1)
buf = ctypes.create_string_buffer(4096)
report['syslog(SYSLOG_ACTION_READ_ALL)'] = attempt(libc.syscall, ctypes.c_long(NR['syslog']), ctypes.c_long(3), buf, ctypes.c_long(4096))
`, nil)
	for _, f := range []string{"/proc/keys", "/proc/key-users"} {
		if s, _ := v[f].(string); strings.TrimSpace(s) != "" && s != "ENOENT" && s != "EACCES" {
			t.Errorf("%s shows keys: %q", f, s)
		}
	}
	if n := v["kallsyms addresses"]; n != 0.0 {
		t.Errorf("/proc/kallsyms shows %v kernel addresses", n)
	}
	for _, k := range []string{"/proc/kmsg", "/dev/kmsg", "syslog(SYSLOG_ACTION_READ_ALL)"} {
		if s, _ := v[k].(string); s == "ok" || (s != "" && !strings.HasPrefix(s, "E")) {
			t.Errorf("%s: read %q", k, s)
		}
	}
}

// --- escapes --------------------------------------------------------------------

func attackSetns(t *testing.T, a *arena) {
	v := a.report(t, `for pid in ('self', '1'):
    for ns in ('user', 'mnt', 'net', 'pid', 'ipc', 'uts', 'cgroup', 'time'):
        try:
            fd = os.open('/proc/%s/ns/%s' % (pid, ns), os.O_RDONLY)
        except OSError as e:
            report['open /proc/%s/ns/%s' % (pid, ns)] = errname(e)
            continue
        report['setns /proc/%s/ns/%s' % (pid, ns)] = attempt(libc.setns, fd, 0)
        os.close(fd)
`, nil)
	for k := range v {
		if strings.HasPrefix(k, "open ") {
			delete(v, k)
		}
	}
	if len(v) == 1 { // the zygote id alone
		if a.level == Production {
			t.Fatal("no namespace descriptor could be opened: the test proves nothing")
		}
		return
	}
	reportOK(t, v)
}

func attackRootChanges(t *testing.T, a *arena) {
	v := a.report(t, `report['chroot'] = attempt(libc.chroot, b'/tmp')
os.makedirs('/tmp/new/old', exist_ok=True)
new, old = ctypes.create_string_buffer(b'/tmp/new'), ctypes.create_string_buffer(b'/tmp/new/old')
report['pivot_root'] = sc('pivot_root', ctypes.addressof(new), ctypes.addressof(old))
for name, flag in (('NEWNS', 0x20000), ('NEWUTS', 0x4000000), ('NEWIPC', 0x8000000), ('NEWUSER', 0x10000000),
                   ('NEWPID', 0x20000000), ('NEWNET', 0x40000000), ('NEWCGROUP', 0x2000000), ('NEWTIME', 0x80),
                   ('NEWUSER|NEWNS', 0x10020000)):
    report['unshare(%s)' % name] = attempt(libc.unshare, flag)
    pid = os.fork() if name == 'NEWUSER' else -1
    if pid == 0:
        os._exit(0 if libc.unshare(flag) == 0 else 1)
    if pid > 0:
        report['unshare(NEWUSER) in a child'] = 'ok' if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 else 'refused'
`, nil)
	reportOK(t, v)
}

func attackForeignABI(t *testing.T, a *arena) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86-64 only")
	}
	v := a.report(t, `import mmap
def in_child(fn):
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(fn())
        except BaseException:
            os._exit(99)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return 'ok' if os.WEXITSTATUS(status) == 0 else 'exit %d' % os.WEXITSTATUS(status)
def int80():
    m = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))  # getpid through int 0x80
    f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
    return 0 if f() > 0 else 1
def x32():
    ctypes.set_errno(0)
    return 0 if libc.syscall(ctypes.c_long(0x40000000 | NR['getpid'])) > 0 else 1
report['i386 int 0x80'] = in_child(int80)
report['x32'] = in_child(x32)
`, nil)
	reportOK(t, v)
}

// attackNewerSyscalls makes system calls added to Linux after the seccomp
// filter's table (issue #28): a deny list does not refuse what it does not
// name, and open_tree_attr (467, Linux 6.15) reached the kernel next to a
// refused open_tree, as file_getattr and file_setattr (468, 469, Linux 6.17)
// did. Every number the table does not name must fail with ENOSYS, as on a
// kernel without the call; open_tree_attr, of the refused mount calls, with
// EPERM, or ENOSYS from a gVisor without it. Arguments are ones a kernel that
// has the call rejects otherwise (EFAULT, EINVAL). Ordinary code still runs.
func attackNewerSyscalls(t *testing.T, a *arena) {
	v := a.report(t, `import threading
# Not named by the filter's table (go-seccomp-bpf's): gaps in it, then past
# its last (467). 336 on x86-64 is uprobe, which the kernel makes without
# asking seccomp.
gaps = {'x86_64': range(337, 424), 'aarch64': [*range(245, 260), *range(295, 403), 415]}[platform.machine()]
reached = {}
for nr in [*gaps, *range(468, 500), 1000, 0x3fffffff]:
    r = attempt(libc.syscall, ctypes.c_long(nr), *[ctypes.c_long(0)] * 5)
    if r != 'ENOSYS':
        reached[nr] = r
report['unnamed'] = reached
report['open_tree_attr'] = attempt(libc.syscall, ctypes.c_long(467), ctypes.c_long(-1), *[ctypes.c_long(0)] * 4)
def ordinary():
    with open('/tmp/newer', 'w') as f:
        f.write('x')
    t = threading.Thread(target=os.getpid)
    t.start()
    t.join()
    subprocess.run(['/usr/bin/true'], check=True)
report['ordinary'] = tryit(ordinary)
`, nil)
	if reached, _ := v["unnamed"].(map[string]any); len(reached) > 0 {
		t.Errorf("call numbers the filter does not name reached the kernel (number: answer): %v", reached)
	}
	want := []string{"EPERM"}
	if a.level == Hardened {
		want = append(want, "ENOSYS")
	}
	if got, _ := v["open_tree_attr"].(string); !slices.Contains(want, got) {
		t.Errorf("open_tree_attr: %q, want one of %q", got, want)
	}
	if v["ordinary"] != "ok" {
		t.Errorf("files, a thread and a subprocess: %v", v["ordinary"])
	}
}

func attackKernelInterfaces(t *testing.T, a *arena) {
	v := a.report(t, `buf = ctypes.create_string_buffer(512)
report['userfaultfd'] = sc('userfaultfd', 1 | 2)
report['/dev/userfaultfd'] = tryit(os.open, '/dev/userfaultfd', os.O_RDWR)
report['perf_event_open'] = attempt(libc.syscall, ctypes.c_long(NR['perf_event_open']), buf, ctypes.c_long(0), ctypes.c_long(-1), ctypes.c_long(-1), ctypes.c_long(0))
report['io_uring_enter'] = sc('io_uring_enter', 3, 1, 0, 0, 0, 0)
report['io_uring_register'] = sc('io_uring_register', 3, 0, 0, 0)
report['open_tree'] = attempt(libc.syscall, ctypes.c_long(NR['open_tree']), ctypes.c_long(-100), b'/tmp', ctypes.c_long(1))
report['fsopen'] = attempt(libc.syscall, ctypes.c_long(NR['fsopen']), b'tmpfs', ctypes.c_long(0))
report['memfd_secret'] = sc('memfd_secret', 0)
`, nil)
	// memfd_secret is allowed (it only hides the caller's own pages), and
	// usually compiled out.
	reportOK(t, v, "memfd_secret")
}

func attackDevices(t *testing.T, a *arena) {
	devices := []string{"/dev/mem", "/dev/kmem", "/dev/port", "/dev/kvm", "/dev/loop-control", "/dev/loop0",
		"/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/vhost-net", "/dev/vsock", "/dev/cpu/0/msr", "/dev/mapper/control"}
	if a.level == Production {
		// gVisor has FUSE and a TUN device of its own, in its own kernel.
		devices = append(devices, "/dev/fuse", "/dev/net/tun")
	}
	v := a.report(t, `for d in ('/tmp', '/dev/shm', '.'):
    for name, kind, dev in (('mem', 0o20000, os.makedev(1, 1)), ('disk', 0o60000, os.makedev(8, 0))):
        node = '%s/rt-%s' % (d, name)
        report['mknod ' + node] = tryit(os.mknod, node, kind | 0o666, dev)
        if report['mknod ' + node] == 'ok':
            report['open ' + node] = tryit(lambda: os.close(os.open(node, os.O_RDWR)))
            os.unlink(node)
for p in DEVICES:
    report['open ' + p] = tryit(lambda: os.close(os.open(p, os.O_RDONLY)))
`, map[string]any{"DEVICES": devices})
	if a.level == Hardened {
		// gVisor lets the code make device nodes in its own tmpfs; they
		// are its kernel's, and none opens a device.
		for k := range v {
			if strings.HasPrefix(k, "mknod /tmp/") || strings.HasPrefix(k, "mknod /dev/shm/") {
				delete(v, k)
			}
		}
	}
	reportOK(t, v)
}

func attackProcWrites(t *testing.T, a *arena) {
	v := a.report(t, `def write(p, data):
    with open(p, 'w') as f:
        f.write(data)
report['write /proc/self/exe'] = tryit(os.open, '/proc/self/exe', os.O_WRONLY)
report['write /proc/self/uid_map'] = tryit(write, '/proc/self/uid_map', '0 0 1')
report['write /proc/self/setgroups'] = tryit(write, '/proc/self/setgroups', 'allow')
report['write /proc/self/oom_score_adj -1000'] = tryit(write, '/proc/self/oom_score_adj', '-1000')
report['write /proc/1/oom_score_adj'] = tryit(write, '/proc/1/oom_score_adj', '1000')
report['write /proc/sys/kernel/ns_last_pid'] = tryit(write, '/proc/sys/kernel/ns_last_pid', '100')
report['write /proc/self/attr/current'] = tryit(write, '/proc/self/attr/current', 'unconfined')
report['write /usr/bin/python3'] = tryit(os.open, '/usr/bin/python3', os.O_WRONLY)
`, nil)
	if a.level == Hardened {
		// Under gVisor the code is pid 1, and its OOM score is the
		// sentry's bookkeeping: the host's OOM killer never sees it.
		delete(v, "write /proc/1/oom_score_adj")
		delete(v, "write /proc/self/oom_score_adj -1000")
	}
	reportOK(t, v)
}

func attackHardLinks(t *testing.T, a *arena) {
	v := a.report(t, `open('/tmp/mine', 'w').write('x')
open('/dev/shm/mine', 'w').write('x')
for src in ('/usr/bin/python3', '/codecell/codecell_runner.py', '/etc/ld.so.cache', '/tmp/mine', '/dev/shm/mine', '/dev/null', '/proc/self/exe', '/proc/self/status'):
    dst = 'rt-link-' + src.replace('/', '_')
    report['link ' + src] = tryit(os.link, src, dst)
fd = os.open('/usr/bin/python3', os.O_RDONLY)
report['linkat AT_EMPTY_PATH'] = attempt(libc.linkat, fd, b'', -100, b'rt-link-empty', 0x1000)
report['linkat /proc/self/fd'] = attempt(libc.linkat, -100, ('/proc/self/fd/%d' % fd).encode(), -100, b'rt-link-fd', 0x400)
`, nil)
	reportOK(t, v)
	links, _ := filepath.Glob(filepath.Join(a.ws, "rt-link-*"))
	for _, l := range links {
		os.Remove(l)
	}
}
