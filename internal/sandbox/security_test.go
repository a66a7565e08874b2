package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run hostile code through the real product path (Manager.Exec)
// at the isolated levels. The code reports what it managed to do as a JSON
// object on the last line of its stdout; each case checks that report and
// then that the manager still runs print(1). The seccomp package tests the
// filter's system calls in isolation; here a few are checked end to end.

// isolatedLevels are the levels that claim isolation (README, "Isolation levels").
var isolatedLevels = []Level{Production, Hardened}

// verdict runs code with ctx bound as globals and decodes the JSON object on
// the last line of its stdout into v. The execution must succeed unless
// mayFail, in which case v is left alone when there is no report.
func verdict(t *testing.T, m *Manager, ws, code string, ctx map[string]any, mayFail bool, v any) *Result {
	t.Helper()
	r := m.Exec(context.Background(), Request{Workspace: ws, Code: code, Context: ctx, Timeout: slack})
	return verdictOf(t, r, mayFail, v)
}

// verdictOf is verdict for an execution already run.
func verdictOf(t *testing.T, r *Result, mayFail bool, v any) *Result {
	t.Helper()
	if !r.OK && !mayFail {
		t.Fatalf("the code failed: %+v\nstdout %s", r.Error, tail(r.Stdout))
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	last := lines[len(lines)-1]
	if err := json.Unmarshal([]byte(last), v); err != nil {
		if mayFail {
			return r
		}
		t.Fatalf("no report from the code (%v): stdout %s stderr %s", err, tail(r.Stdout), tail(r.Stderr))
	}
	t.Logf("report: %s", last)
	return r
}

// noneOK fails for every entry of a report of attempts that says "ok".
func noneOK(t *testing.T, report map[string]string) {
	t.Helper()
	if len(report) == 0 {
		t.Fatal("empty report")
	}
	for what, outcome := range report {
		if outcome == "ok" {
			t.Errorf("%s succeeded inside the sandbox", what)
		}
	}
}

// pyAttempt is Python that defines attempt(f, *args): calls a ctypes
// function and returns "ok" or the errno's name.
const pyAttempt = `import ctypes, errno, json, os, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
def attempt(f, *args):
    ctypes.set_errno(0)
    r = f(*args)
    e = ctypes.get_errno()
    return 'ok' if r != -1 else errno.errorcode.get(e, str(e))
`

func TestSecurity(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, level Level, m *Manager, ws string)
	}{
		{"files outside the sandbox", testHostFiles},
		{"network", testNetwork},
		{"denied system calls", testSyscalls},
		{"kill(-1) stays inside", testKillAll},
		{"terminal injection", testTIOCSTI},
		{"symlinks out of the workspace", testSymlinks},
		{"/proc/sys and /sys", testProcSys},
		{"unprivileged user without capabilities", testIdentity},
		{"no process outlives its execution", testLingering},
	}
	for _, level := range isolatedLevels {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			m, ws := levelManager(t, level, Limits{})
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					tt.run(t, level, m, ws)
					assertHealthy(t, m, ws)
				})
			}
		})
	}
}

// TestSecurityEnvironment is not parallel: it sets an environment variable
// of the test process, which the manager's sandboxes must not see.
func TestSecurityEnvironment(t *testing.T) {
	secret := fmt.Sprintf("s3cr3t-%d", rand.Int64())
	t.Setenv("CODECELL_TEST_SECRET", secret)
	code := `import glob, json, os, subprocess
seen = [repr(dict(os.environ))]
read = []
paths = ['/proc/self/environ', '/proc/1/environ']
paths += sorted(glob.glob('/proc/[0-9]*/environ')) + sorted(glob.glob('/proc/[0-9]*/task/*/environ'))
for p in paths:
    try:
        with open(p, 'rb') as f:
            seen.append(f.read().decode('latin-1'))
        read.append(p)
    except OSError:
        pass
seen.append(subprocess.run(['/usr/bin/env'], capture_output=True, text=True).stdout)
print('\n'.join(seen))
print(json.dumps({'read': read}))
`
	for _, level := range isolatedLevels {
		t.Run(string(level), func(t *testing.T) {
			m, ws := levelManager(t, level, Limits{})
			var v struct{ Read []string }
			r := verdict(t, m, ws, code, nil, false, &v)
			if !strings.Contains(strings.Join(v.Read, " "), "/proc/self/environ") {
				t.Fatalf("the code could not read even its own environment (read %v): the test proves nothing", v.Read)
			}
			if strings.Contains(r.Stdout+r.Stderr, secret) {
				t.Fatalf("the server's environment is visible in the sandbox: %s", r.Stdout)
			}
			assertHealthy(t, m, ws)
		})
	}
}

func testHostFiles(t *testing.T, level Level, m *Manager, ws string) {
	marker := marker()
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"token": "`+marker+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	candidates := []string{
		"/root", "/root/.bashrc", "/root/.profile", "/home", "/etc/shadow", "/etc/passwd",
		m.opts.StateDir, m.runtime, filepath.Dir(m.opts.StateDir), ws, cfgDir, cfg,
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, home, filepath.Join(home, ".bashrc"), filepath.Join(home, ".profile"))
	}
	if entries, err := os.ReadDir("/home"); err == nil {
		for _, e := range entries {
			candidates = append(candidates, filepath.Join("/home", e.Name()))
		}
	}
	// Only paths that exist on the host prove anything.
	var paths []string
	for _, p := range candidates {
		if _, err := os.Lstat(p); err == nil && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	code := `import json, os
readable, errors = [], {}
for p in paths:
    try:
        if os.path.isdir(p):
            os.listdir(p)
        else:
            with open(p, 'rb') as f:
                f.read(1)
        readable.append(p)
    except OSError as e:
        errors[p] = type(e).__name__
print(json.dumps({'readable': readable, 'errors': errors}))
`
	var v struct {
		Readable []string
		Errors   map[string]string
	}
	r := verdict(t, m, ws, code, map[string]any{"paths": paths}, false, &v)
	if len(v.Readable) > 0 {
		t.Errorf("host paths readable inside the sandbox: %v", v.Readable)
	}
	for p, e := range v.Errors {
		if e != "FileNotFoundError" && e != "PermissionError" && e != "NotADirectoryError" {
			t.Errorf("%s: %s, want FileNotFoundError or PermissionError", p, e)
		}
	}
	if len(v.Errors) != len(paths) {
		t.Errorf("%d of %d paths reported", len(v.Errors), len(paths))
	}
	if strings.Contains(r.Stdout, marker) {
		t.Errorf("the config file's content reached the sandbox")
	}
}

func testNetwork(t *testing.T, level Level, m *Manager, ws string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code := `import errno, json, socket
def err(e):
    if isinstance(e, TimeoutError):
        return 'timeout'
    return errno.errorcode.get(e.errno, type(e).__name__) if e.errno else type(e).__name__
def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=5).close()
        return 'ok'
    except OSError as e:
        return err(e)
v = {'host loopback': connect('127.0.0.1', port), 'metadata': connect('169.254.169.254', 80),
     'public': connect('1.1.1.1', 53)}
try:
    socket.getaddrinfo('example.com', 80)
    v['dns'] = 'ok'
except OSError as e:
    v['dns'] = type(e).__name__
for name, args in [('netlink socket', (socket.AF_NETLINK, socket.SOCK_RAW, 0)),
                   ('raw socket', (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                   ('packet socket', (socket.AF_PACKET, socket.SOCK_RAW, 0))]:
    try:
        socket.socket(*args).close()
        v[name] = 'ok'
    except OSError as e:
        v[name] = err(e)
try:
    lines = open('/proc/net/dev').read().splitlines()[2:]
    v['interfaces'] = ' '.join(sorted(l.split(':')[0].strip() for l in lines))
except OSError as e:
    v['interfaces'] = ''
print(json.dumps(v))
`
	port := ln.Addr().(*net.TCPAddr).Port
	var v map[string]string
	verdict(t, m, ws, code, map[string]any{"port": port}, false, &v)
	ifaces := v["interfaces"]
	delete(v, "interfaces")
	noneOK(t, v)
	// An empty network namespace has no route: the metadata address must
	// fail at once, not after the connect timeout.
	if v["metadata"] == "timeout" {
		t.Errorf("connecting to 169.254.169.254 timed out instead of failing at once")
	}
	if ifaces != "" && ifaces != "lo" {
		t.Errorf("network interfaces inside the sandbox: %q, want lo at most", ifaces)
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Errorf("the host listener on port %d accepted a connection", port)
	}
}

func testSyscalls(t *testing.T, level Level, m *Manager, ws string) {
	code := pyAttempt + `nr = {'x86_64': {'keyctl': 250, 'bpf': 321}, 'aarch64': {'keyctl': 219, 'bpf': 280}}[platform.machine()]
buf = ctypes.create_string_buffer(512)
v = {
    'ptrace(PTRACE_TRACEME)': attempt(libc.ptrace, L(0), L(0), None, None),
    'ptrace(PTRACE_ATTACH, 1)': attempt(libc.ptrace, L(16), L(1), None, None),
    'ptrace(PTRACE_ATTACH, parent)': attempt(libc.ptrace, L(16), L(os.getppid()), None, None),
    'unshare(CLONE_NEWUSER)': attempt(libc.unshare, 0x10000000),
    'unshare(CLONE_NEWNS)': attempt(libc.unshare, 0x00020000),
    'io_uring_setup': attempt(libc.syscall, L(425), L(8), buf),
    'mount': attempt(libc.mount, b'none', b'/tmp', b'tmpfs', ctypes.c_ulong(0), None),
    'keyctl(KEYCTL_GET_KEYRING_ID)': attempt(libc.syscall, L(nr['keyctl']), L(0), L(-3), L(1)),
    'bpf(BPF_MAP_CREATE)': attempt(libc.syscall, L(nr['bpf']), L(0), buf, L(128)),
}
print(json.dumps(v))
`
	var v map[string]string
	verdict(t, m, ws, code, nil, false, &v)
	noneOK(t, v)
}

func testKillAll(t *testing.T, level Level, m *Manager, ws string) {
	// A host process of the user the sandbox's user maps to: the one kill(-1)
	// could reach if the PID namespace did not hold.
	host := exec.Command("/usr/bin/sleep", "60")
	if m.HostUser() == "nobody" {
		host.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID, Groups: []uint32{}}}
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		host.Process.Kill()
		host.Wait()
	}()
	code := `import json, os, signal
try:
    os.kill(-1, signal.SIGKILL)
    v = 'sent'
except OSError as e:
    v = type(e).__name__
print(json.dumps({'kill': v}), flush=True)
`
	var v map[string]string
	r := verdict(t, m, ws, code, nil, true, &v)
	t.Logf("kill(-1): ok=%v error=%+v report=%v", r.OK, r.Error, v)
	// A SIGKILL sent by the code has landed by the end of the next
	// execution, so the host process is checked after one.
	assertHealthy(t, m, ws)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", host.Process.Pid))
	if err != nil {
		t.Fatalf("the host process is gone: %v", err)
	}
	if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) == 0 || f[0] == "Z" {
		t.Fatalf("the host process was killed from the sandbox: %s", b)
	}
}

func testTIOCSTI(t *testing.T, level Level, m *Manager, ws string) {
	code := `import errno, fcntl, json, os, termios
def sti(fd):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b'x')
        return 'ok'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
v = {'TIOCSTI on stdin': sti(0)}
try:
    fd = os.open('/dev/tty', os.O_RDWR)
    v['open /dev/tty'] = 'ok'
    v['TIOCSTI on /dev/tty'] = sti(fd)
except OSError as e:
    v['open /dev/tty'] = errno.errorcode.get(e.errno, str(e.errno))
try:
    master, slave = os.openpty()
    v['TIOCSTI on a new pty'] = sti(slave)
except OSError as e:
    v['openpty'] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(v))
`
	var v map[string]string
	verdict(t, m, ws, code, nil, false, &v)
	noneOK(t, v)
}

func testSymlinks(t *testing.T, level Level, m *Manager, ws string) {
	marker := marker()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"escape": "/etc", "secret": secret, "secretdir": filepath.Dir(secret)} {
		link := filepath.Join(ws, name)
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	code := `import json, os
tries = ['escape/shadow', 'escape/passwd', 'secret', 'secretdir/secret.txt',
         '/proc/self/cwd/secret', '/proc/self/cwd/escape/shadow']
if not os.path.lexists('rootlink'):
    os.symlink('/', 'rootlink')
tries += ['rootlink' + secret_path, 'rootlink/etc/shadow']
for d in os.listdir('/proc'):
    if d.isdigit() or d in ('self', 'thread-self'):
        tries += ['/proc/%s/root%s' % (d, secret_path), '/proc/%s/root/etc/shadow' % d,
                  '/proc/%s/root/etc/passwd' % d]
readable = []
for p in tries:
    try:
        with open(p, 'rb') as f:
            f.read()
        readable.append(p)
    except OSError:
        pass
try:
    etc = sorted(os.listdir('escape'))
except OSError as e:
    etc = [type(e).__name__]
print(json.dumps({'tried': len(tries), 'readable': readable, 'etc': etc}))
`
	var v struct {
		Tried    int
		Readable []string
		Etc      []string
	}
	r := verdict(t, m, ws, code, map[string]any{"secret_path": secret}, false, &v)
	if len(v.Readable) > 0 {
		t.Errorf("read through symlinks: %v", v.Readable)
	}
	if strings.Contains(r.Stdout, marker) {
		t.Errorf("the host file's content reached the sandbox")
	}
	for _, name := range v.Etc {
		if name == "shadow" || name == "passwd" {
			t.Errorf("/etc inside the sandbox holds the host's %s: %v", name, v.Etc)
		}
	}
}

func testProcSys(t *testing.T, level Level, m *Manager, ws string) {
	// Only writes that would be harmless if they got through: the global
	// sysctls get their current value written back. kernel.core_pattern and
	// kernel.modprobe name programs the kernel runs as host root.
	code := `import json, os
v = {}
def write(p, data):
    try:
        with open(p, 'w') as f:
            f.write(data)
        v['write ' + p] = 'ok'
    except OSError as e:
        v['write ' + p] = type(e).__name__
def current(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return ''
for p in ['/proc/sys/kernel/core_pattern', '/proc/sys/kernel/modprobe', '/proc/sys/kernel/randomize_va_space']:
    write(p, current(p))
write('/proc/sys/kernel/hostname', 'pwned')
write('/proc/sys/vm/drop_caches', '1')
write('/proc/sysrq-trigger', 'h')
try:
    v['/sys/class/net'] = ' '.join(sorted(os.listdir('/sys/class/net')))
except OSError as e:
    v['/sys/class/net'] = type(e).__name__
print(json.dumps(v))
`
	var v map[string]string
	verdict(t, m, ws, code, nil, false, &v)
	// /sys is absent, or at most shows the sandbox's own loopback.
	if n := v["/sys/class/net"]; n != "FileNotFoundError" && n != "" && n != "lo" {
		t.Errorf("/sys/class/net lists %q", n)
	}
	delete(v, "/sys/class/net")
	noneOK(t, v)
}

func testIdentity(t *testing.T, level Level, m *Manager, ws string) {
	code := `import json, os, subprocess
keys = ('Uid', 'Gid', 'CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp')
def status(text):
    pairs = (l.split(':', 1) for l in text.splitlines() if ':' in l)
    return {k: ' '.join(v.split()) for k, v in pairs if k in keys}
v = {'uid': os.getuid(), 'euid': os.geteuid(),
     'self': status(open('/proc/self/status').read()),
     'child': status(subprocess.run(['/usr/bin/cat', '/proc/self/status'], capture_output=True, text=True).stdout)}
try:
    os.setuid(0)
    v['setuid(0)'] = 'ok'
except OSError as e:
    v['setuid(0)'] = type(e).__name__
print(json.dumps(v))
`
	var v struct {
		UID    int `json:"uid"`
		EUID   int `json:"euid"`
		Self   map[string]string
		Child  map[string]string
		Setuid string `json:"setuid(0)"`
	}
	verdict(t, m, ws, code, nil, false, &v)
	if v.UID == 0 || v.EUID == 0 {
		t.Errorf("the code runs as uid %d (effective %d)", v.UID, v.EUID)
	}
	if v.Setuid == "ok" {
		t.Errorf("setuid(0) succeeded")
	}
	for who, st := range map[string]map[string]string{"the code": v.Self, "its child": v.Child} {
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
			if v, ok := st[k]; (ok || k == "CapEff") && v != "0000000000000000" {
				t.Errorf("%s has %s %q, want none", who, k, st[k])
			}
		}
		if level == Production && (st["Seccomp"] != "2" || st["NoNewPrivs"] != "1") {
			t.Errorf("%s: Seccomp %q NoNewPrivs %q, want a filter and no new privileges", who, st["Seccomp"], st["NoNewPrivs"])
		}
		if strings.HasPrefix(st["Uid"], "0 ") || strings.Contains(st["Uid"], " 0") {
			t.Errorf("%s: Uid %q", who, st["Uid"])
		}
	}
}

func testLingering(t *testing.T, level Level, m *Manager, ws string) {
	mk := marker()
	first := `import os, subprocess
subprocess.Popen(['/usr/bin/sleep', MARKER], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv('/usr/bin/sleep', ['sleep', MARKER])
    os._exit(0)
print('started')
`
	r := m.Exec(context.Background(), Request{Workspace: ws, Code: first, Context: map[string]any{"MARKER": mk}, Timeout: slack})
	if !r.OK || r.Stdout != "started\n" {
		t.Fatalf("first execution: ok=%v stdout=%q error=%+v", r.OK, r.Stdout, r.Error)
	}
	waitGone(t, mk)
	second := `import json, os
procs = {}
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            with open('/proc/%s/cmdline' % d, 'rb') as f:
                procs[d] = f.read().replace(b'\0', b' ').decode(errors='replace').strip()
        except OSError:
            pass
print(json.dumps({'self': os.getpid(), 'procs': procs}))
`
	var v struct {
		Self  int
		Procs map[string]string
	}
	verdict(t, m, ws, second, nil, false, &v)
	if _, ok := v.Procs[fmt.Sprint(v.Self)]; !ok {
		t.Fatalf("the code does not see itself in /proc: %v", v.Procs)
	}
	for pid, cmd := range v.Procs {
		if strings.Contains(cmd, mk) || !(strings.Contains(cmd, "codecell_runner") || strings.HasPrefix(cmd, BwrapPath)) {
			t.Errorf("process %s (%q) is not the sandbox's own", pid, cmd)
		}
	}
}
