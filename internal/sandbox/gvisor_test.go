package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/codecell/codecell/internal/seccomp"
)

func TestGVisorSpec(t *testing.T) {
	s := gvisorSpec{
		Rootfs:    "/state/gvisor/c1/rootfs",
		Python:    "/usr/bin/python3",
		ReadOnly:  []hostBind{{Source: "/usr/share/zoneinfo/Etc/UTC", Dest: "/etc/localtime"}, {Source: "/opt/py", Dest: "/opt/py", Dir: true}},
		Runtime:   "/state/runtime/abc",
		Workspace: "/data/ws/main",
		TmpSize:   1 << 20,
		OpenFiles: 100,
	}
	spec := ociConfig(s)
	mount := func(dst string) ociMount {
		for _, m := range spec.Mounts {
			if m.Destination == dst {
				return m
			}
		}
		t.Fatalf("no mount at %s in %+v", dst, spec.Mounts)
		return ociMount{}
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"root is the empty directory, read-only", spec.Root, ociRoot{Path: s.Rootfs, Readonly: true}},
		{"unprivileged user", spec.Process.User, ociUser{UID: sandboxUID, GID: sandboxUID, AdditionalGids: []uint32{}}},
		{"no new privileges", spec.Process.NoNewPrivileges, true},
		{"no capabilities", toJSON(spec.Process.Capabilities), `{"bounding":[],"effective":[],"inheritable":[],"permitted":[],"ambient":[]}`},
		{"runner as fork server", spec.Process.Args, []string{"/usr/bin/python3", "-I", "-B", "/codecell/codecell_runner.py", "--forkserver", "--scratch", "/tmp:/dev/shm"}},
		{"working directory", spec.Process.Cwd, WorkspaceMount},
		{"environment", spec.Process.Env, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "TMPDIR=/tmp", "LANG=C.UTF-8", "PYTHONUNBUFFERED=1", "MPLBACKEND=Agg",
			"XDG_CACHE_HOME=/tmp/.cache", "MPLCONFIGDIR=/tmp/.matplotlib", "PYTHONNOUSERSITE=1", "PYTHONSAFEPATH=1", "MALLOC_ARENA_MAX=2"}},
		{"rlimits", spec.Process.Rlimits, []ociRlimit{{Type: "RLIMIT_CORE"}, {Type: "RLIMIT_NOFILE", Hard: 100, Soft: 100}}},
		{"hostname", spec.Hostname, "codecell"},
		{"namespaces", toJSON(spec.Linux.Namespaces), `[{"type":"pid"},{"type":"network"},{"type":"ipc"},{"type":"uts"},{"type":"mount"}]`},
		{"/usr read-only", mount("/usr"), ociMount{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro", "nosuid", "nodev"}}},
		{"etc file read-only, resolved", mount("/etc/localtime").Source + " " + mount("/etc/localtime").Options[1], "/usr/share/zoneinfo/Etc/UTC ro"},
		{"extra prefix read-only", mount("/opt/py").Options[1], "ro"},
		{"runner read-only", mount(RuntimeMount), ociMount{Destination: RuntimeMount, Type: "bind", Source: s.Runtime, Options: []string{"rbind", "ro", "nosuid", "nodev"}}},
		{"workspace read-write", mount(WorkspaceMount), ociMount{Destination: WorkspaceMount, Type: "bind", Source: s.Workspace, Options: []string{"rbind", "rw", "nosuid", "nodev"}}},
		{"private /proc", mount("/proc").Type, "proc"},
		{"size-capped /tmp", mount("/tmp").Options, []string{"nosuid", "nodev", "mode=1777", "size=1048576"}},
		{"size-capped /dev/shm", mount("/dev/shm").Type + " " + strings.Join(mount("/dev/shm").Options, ","), "tmpfs nosuid,nodev,mode=1777,size=1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g, w := toJSON(tt.got), toJSON(tt.want); g != w {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
	t.Run("nothing else of the host", func(t *testing.T) {
		allowed := []string{"/usr", "/etc/localtime", "/opt/py", "/proc", "/tmp", "/dev/shm", RuntimeMount, WorkspaceMount}
		for _, m := range spec.Mounts {
			if !slices.Contains(allowed, m.Destination) {
				t.Errorf("unexpected mount %+v", m)
			}
		}
	})
}

// TestGVisorSeccompProfile checks what a hardened sandbox hands runsc: the
// production rules as an OCI profile, less clone3 (see gvisorSeccomp), and
// the flag without which runsc ignores it.
func TestGVisorSeccompProfile(t *testing.T) {
	want, err := seccomp.OCIProfile()
	if err != nil {
		t.Skipf("no seccomp profile here: %v", err)
	}
	got, err := gvisorSeccomp()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got.Syscalls {
		names = append(names, s.Names...)
	}
	if slices.Contains(names, "clone3") {
		t.Error("clone3 is in the profile: runsc would make it EPERM, and glibc falls back to clone only on ENOSYS")
	}
	for i, s := range want.Syscalls {
		want.Syscalls[i].Names = slices.DeleteFunc(s.Names, func(n string) bool { return n == "clone3" })
	}
	want.Syscalls = slices.DeleteFunc(want.Syscalls, func(s seccomp.ProfileSyscall) bool { return len(s.Names) == 0 })
	if g, w := toJSON(got), toJSON(want); g != w {
		t.Errorf("profile is not the production rules less clone3:\ngot  %s\nwant %s", g, w)
	}

	if args := runscArgs("/root", "run"); !slices.Contains(args, "--oci-seccomp") {
		t.Errorf("runsc %v: without --oci-seccomp runsc ignores the profile", args)
	}
	spec := ociConfig(gvisorSpec{Seccomp: got})
	if spec.Linux.Seccomp != got {
		t.Error("ociConfig does not carry the profile")
	}
	if j := toJSON(ociConfig(gvisorSpec{}).Linux); strings.Contains(j, "seccomp") {
		t.Errorf("no profile, yet linux is %s", j)
	}
}

func TestWriteBundle(t *testing.T) {
	dir := t.TempDir()
	s := gvisorSpec{
		Rootfs:    filepath.Join(dir, "rootfs"),
		Python:    python,
		ReadOnly:  hostBinds([]string{"/etc/ld.so.cache", "/etc/ssl/certs", "/etc/no-such-file"}),
		Runtime:   "/rt",
		Workspace: "/ws",
		TmpSize:   1 << 20,
		OpenFiles: 64,
	}
	if err := writeBundle(dir, s); err != nil {
		t.Fatal(err)
	}
	var spec ociSpec
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	for _, m := range spec.Mounts {
		if m.Destination == "/etc/no-such-file" {
			t.Errorf("missing host file mounted: %+v", m)
		}
		info, err := os.Stat(filepath.Join(s.Rootfs, m.Destination))
		if err != nil {
			t.Errorf("no mount point for %s: %v", m.Destination, err)
			continue
		}
		if m.Type == "bind" {
			src, err := os.Stat(m.Source)
			if err == nil && src.IsDir() != info.IsDir() {
				t.Errorf("mount point %s: dir %v, source dir %v", m.Destination, info.IsDir(), src.IsDir())
			}
		}
	}
	if target, err := os.Readlink(filepath.Join(s.Rootfs, "lib")); err != nil || target != "usr/lib" {
		t.Errorf("lib -> %q, %v", target, err)
	}
	if info, err := os.Stat(s.Rootfs); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("rootfs mode: %v %v", info.Mode(), err)
	}
}

// procsMatching lists the processes whose command line contains needle.
func procsMatching(needle string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, needle) {
			found = append(found, e.Name()+": "+cmd)
		}
	}
	return found
}

// assertNoProcs fails unless the processes that mention needle end. They
// have been killed; the deadline only ends a test that would hang, for on a
// loaded machine their end can take seconds.
func assertNoProcs(t *testing.T, needle string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(slack); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if left = procsMatching(needle); len(left) == 0 {
			return
		}
	}
	t.Errorf("processes left for %s:\n%s", needle, strings.Join(left, "\n"))
}

// idleGVisor waits for the pool to hold a warm hardened sandbox for ws and
// returns it (still in the pool: the next Exec takes it).
func idleGVisor(t *testing.T, m *Manager, ws string) *gvisor {
	t.Helper()
	waitWarm(t, m, ws)
	tg := m.defaultTarget(ws)
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.idle[tg]
	return list[len(list)-1].(*gvisor)
}

func TestHardened(t *testing.T) {
	m, ws := newTestManager(t, Hardened, Limits{}, 1)
	ok := func(t *testing.T, r *Result) {
		t.Helper()
		if !r.OK {
			t.Fatalf("execution failed: %+v (stdout %q, stderr %q)", r.Error, r.Stdout, r.Stderr)
		}
	}
	nextWorks := func(t *testing.T) {
		t.Helper()
		r := exec1(t, m, ws, "print('next')", slack)
		ok(t, r)
		if r.Stdout != "next\n" {
			t.Fatalf("next execution: stdout %q", r.Stdout)
		}
	}

	t.Run("start time", func(t *testing.T) {
		// Exec and Warm prepare the workspace before they start a sandbox;
		// starting one directly must too, or runsc has nothing to bind.
		if err := m.PrepareDir(ws); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		sb, err := m.startGVisor(context.Background(), m.defaultTarget(ws))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("one hardened sandbox started (runsc run, runner ready) in %s", time.Since(start))
		g := sb.(*gvisor)
		if !g.alive() || len(procsMatching(g.id)) == 0 {
			t.Fatalf("sandbox %s not running", g.id)
		}
		start = time.Now()
		g.kill()
		t.Logf("an idle hardened sandbox was killed in %s", time.Since(start))
		assertNoProcs(t, g.id)
		if _, err := os.Stat(g.bundle); !os.IsNotExist(err) {
			t.Errorf("bundle left behind: %v", err)
		}
		if files := g.stateFiles(); len(files) > 0 {
			t.Errorf("runsc state left behind: %v", files)
		}

		idleGVisor(t, m, ws)
		start = time.Now()
		ok(t, exec1(t, m, ws, "1", slack))
		t.Logf("an execution on a warm hardened sandbox returned in %s", time.Since(start))
	})

	tests := []struct {
		name, code string
		context    map[string]any
		stdout     string
		result     any
		errType    string
		traceback  string
	}{
		{name: "print", code: "print('hi')", stdout: "hi\n"},
		{name: "last expression", code: "x = 20\nx + 22", result: float64(42)},
		{name: "context", code: "n * 2", context: map[string]any{"n": 21}, result: float64(42)},
		{name: "exception", code: "def f():\n    raise ValueError('bad')\nf()", errType: "ValueError", traceback: "raise ValueError('bad')"},
		{name: "os._exit", code: "import os; os._exit(4)", errType: "SystemExit"},
		{name: "segfault", code: "import ctypes; ctypes.string_at(0)", errType: ErrKilled},
		{name: "broken channel", code: "import os\nfor fd in range(3, 10):\n    try: os.write(fd, b'\\xff\\xff\\xff\\xffgarbage')\n    except OSError: pass\nimport time; time.sleep(5)", errType: ErrSandbox},
		{name: "identity", code: "import os, socket\n[os.getuid(), os.getgid(), socket.gethostname(), os.getcwd()]",
			result: []any{float64(sandboxUID), float64(sandboxUID), "codecell", WorkspaceMount}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := m.Exec(context.Background(), Request{Workspace: ws, Code: tt.code, Context: tt.context, Timeout: slack})
			if tt.errType == "" {
				ok(t, r)
			} else if r.OK || r.Error == nil || r.Error.Type != tt.errType {
				t.Fatalf("error = %+v, want type %s (stderr %q)", r.Error, tt.errType, r.Stderr)
			}
			if r.Stdout != tt.stdout {
				t.Errorf("stdout %q, want %q", r.Stdout, tt.stdout)
			}
			if tt.result != nil && !equalJSON(r.Result, tt.result) {
				t.Errorf("result = %#v, want %#v", r.Result, tt.result)
			}
			if tt.traceback != "" && (!strings.Contains(r.Error.Traceback, tt.traceback) || strings.Contains(r.Error.Traceback, "codecell_runner")) {
				t.Errorf("traceback:\n%s", r.Error.Traceback)
			}
			if r.Isolation != Hardened {
				t.Errorf("isolation %q", r.Isolation)
			}
			nextWorks(t)
		})
	}

	t.Run("workspace is shared with the host", func(t *testing.T) {
		idleGVisor(t, m, ws) // warm before the host writes: the sandbox must still see it
		if err := os.WriteFile(filepath.Join(ws, "from-host.txt"), []byte("host"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := exec1(t, m, ws, "open('out.txt', 'w').write('hi')\nopen('from-host.txt').read()", slack)
		ok(t, r)
		if !equalJSON(r.Result, "host") {
			t.Errorf("host file read as %#v", r.Result)
		}
		data, err := os.ReadFile(filepath.Join(ws, "out.txt"))
		if err != nil || string(data) != "hi" {
			t.Fatalf("out.txt on the host: %q, %v", data, err)
		}
		r = exec1(t, m, ws, "open('out.txt').read()", slack)
		ok(t, r)
		if !equalJSON(r.Result, "hi") {
			t.Fatalf("next execution read %#v", r.Result)
		}
	})

	t.Run("tmp is private", func(t *testing.T) {
		ok(t, exec1(t, m, ws, "open('/tmp/secret', 'w').write('x'); open('/dev/shm/secret', 'w').write('x')", slack))
		r := exec1(t, m, ws, "import os; [os.path.exists('/tmp/secret'), os.path.exists('/dev/shm/secret')]", slack)
		ok(t, r)
		if !equalJSON(r.Result, []any{false, false}) {
			t.Fatalf("scratch files survived: %#v", r.Result)
		}
	})

	t.Run("host is hidden", func(t *testing.T) {
		paths := []string{"/etc/shadow", "/etc/passwd", "/root", "/home", m.opts.StateDir, ws}
		code := "import os\npaths = " + toJSON(paths) + "\n[p for p in paths if os.path.exists(p)]"
		r := exec1(t, m, ws, code, slack)
		ok(t, r)
		if !equalJSON(r.Result, []any{}) {
			t.Fatalf("visible host paths: %#v", r.Result)
		}
		// Current runsc releases refuse /proc/1/environ (the fork server is
		// not dumpable); Debian 12's shows it, and nothing of the host
		// may be in it.
		r = exec1(t, m, ws, "import os\ntry:\n    env = open('/proc/1/environ').read()\nexcept PermissionError:\n    env = ''\n[sorted(os.listdir('/')), env]", slack)
		ok(t, r)
		t.Logf("sandbox root and init environment: %v", r.Result)
		if env := toJSON(r.Result); strings.Contains(env, m.opts.StateDir) || strings.Contains(env, "GOPATH") {
			t.Errorf("host leaks into the sandbox: %s", env)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		g := idleGVisor(t, m, ws)
		start := time.Now()
		r := exec1(t, m, ws, "while True: pass", 3*time.Second)
		if r.OK || r.Error == nil || r.Error.Type != ErrTimeout {
			t.Fatalf("error = %+v, want Timeout", r.Error)
		}
		// How soon is not asserted: a loaded machine can delay any step of
		// the stop. One that never returned would hang the test instead.
		t.Logf("3s timeout returned after %s", time.Since(start))
		assertNoProcs(t, g.id)
		if _, err := os.Stat(g.bundle); !os.IsNotExist(err) {
			t.Errorf("bundle left behind: %v", err)
		}
		if files := g.stateFiles(); len(files) > 0 {
			t.Errorf("runsc state left behind: %v", files)
		}
		nextWorks(t)
	})

	t.Run("cancel", func(t *testing.T) {
		g := idleGVisor(t, m, ws)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		r := m.Exec(ctx, Request{Workspace: ws, Code: "import time; time.sleep(60)", Timeout: slack})
		if r.OK || r.Error == nil || r.Error.Type != ErrKilled {
			t.Fatalf("error = %+v, want Killed", r.Error)
		}
		assertNoProcs(t, g.id)
		nextWorks(t)
	})

	t.Run("kill while starting", func(t *testing.T) {
		// A start cancelled before runsc has created the container must not
		// leave its processes or state behind either.
		for _, after := range []time.Duration{10 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond} {
			ctx, cancel := context.WithTimeout(context.Background(), after)
			sb, err := m.startGVisor(ctx, m.defaultTarget(ws))
			cancel()
			if err == nil {
				sb.kill()
			}
		}
		// "close leaves nothing" checks what they left.
	})

	t.Run("close leaves nothing", func(t *testing.T) {
		idleGVisor(t, m, ws)
		// The teardown of this one is under way when Close is called, and
		// Close must wait for it: the test's TempDir is removed right after.
		ok(t, exec1(t, m, ws, "1", slack))
		m.Close()
		var left []string
		bundles, _ := os.ReadDir(filepath.Join(m.opts.StateDir, "gvisor"))
		state, _ := os.ReadDir(filepath.Join(m.opts.StateDir, "gvisor", "state"))
		for _, e := range append(bundles, state...) {
			if e.Name() != "state" {
				left = append(left, e.Name())
			}
		}
		if len(left) > 0 {
			t.Errorf("bundles or runsc state left behind after Close: %v", left)
		}
		assertNoProcs(t, m.opts.StateDir)
	})
}

// seccompProbes is the Python side of TestGVisorSeccomp, before the list of
// probes: the seccomp package's own probe helpers (see its TestBwrap), so
// both levels are probed the same way.
const seccompProbes = "../seccomp/testdata/probe.py"

// gvisorProbe is one attempt made inside gVisor.
type gvisorProbe struct {
	name string
	py   string // a Python expression for the probe helpers of seccompProbes
	// refused means the profile refuses the call, which must then fail with
	// EPERM; otherwise the profile must not change gVisor's own answer.
	refused bool
	// works means the call must succeed: the sandbox needs it.
	works bool
	// samePlain marks a refused call that gVisor itself fails with EPERM,
	// so that the probe cannot show the profile at work.
	samePlain bool
}

// gvisorProbes are the calls the profile decides by their arguments, and
// some it must let through. Arguments are chosen, as in the seccomp
// package's own probes, so that gVisor without the profile answers other
// than EPERM where it can.
var gvisorProbes = []gvisorProbe{
	{name: "fork", py: `fork()`, works: true},
	{name: "thread", py: `thread()`, works: true},
	{name: "subprocess", py: `run_true()`, works: true},
	{name: "socket_unix", py: `sock(socket.AF_UNIX, socket.SOCK_STREAM)`, works: true},
	{name: "socket_inet_stream", py: `sock(socket.AF_INET, socket.SOCK_STREAM)`, works: true},
	{name: "socket_inet_dgram", py: `sock(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)`, works: true},
	{name: "ioctl_fionread", py: `sc("ioctl", os.pipe()[0], 0x541B, ctypes.addressof(ctypes.c_int()))`, works: true},
	// gVisor's own answer (EINVAL in 20221219, which implements no
	// personality) must come through.
	{name: "personality_query", py: `sc("personality", 0xffffffff)`},
	{name: "personality_linux", py: `sc("personality", 0)`},
	// Left out of the profile (see gvisorSeccomp): glibc needs ENOSYS.
	{name: "clone3", py: `sc("clone3", 0, 0)`},

	{name: "personality_no_aslr", py: `sc("personality", 0x0040000)`, refused: true},
	{name: "socket_netlink", py: `sock(socket.AF_NETLINK, socket.SOCK_RAW, 0)`, refused: true},
	{name: "socket_netlink_high_bits", py: `sc("socket", (1 << 32) | 16, 3, 0)`, refused: true},
	// gVisor checks CAP_NET_RAW before anything else of a packet or raw
	// socket; SOCK_RAW of AF_UNIX shows the type test at work instead.
	{name: "socket_packet", py: `sc("socket", 17, 3, 0)`, refused: true, samePlain: true},
	{name: "socket_inet_raw", py: `sc("socket", 2, 3, 1000)`, refused: true, samePlain: true},
	{name: "socket_unix_raw", py: `sc("socket", 1, 3, 0)`, refused: true},
	{name: "socket_unix_raw_flags", py: `sc("socket", 1, 3 | 0x80000 | 0x800, 0)`, refused: true},
	{name: "socket_unix_raw_high_bits", py: `sc("socket", 1, (1 << 32) | 3, 0)`, refused: true},
	{name: "socket_inet_sock_packet", py: `sc("socket", 2, 10, 0)`, refused: true},
	{name: "ioctl_tiocsti", py: `sc("ioctl", -1, 0x5412, 0)`, refused: true},
	{name: "ioctl_tiocsti_high_bits", py: `sc("ioctl", -1, (1 << 32) | 0x5412, 0)`, refused: true},
	{name: "ioctl_tioclinux", py: `sc("ioctl", -1, 0x541C, 0)`, refused: true},
	// CLONE_THREAD without CLONE_SIGHAND makes gVisor answer EINVAL before
	// it creates anything.
	{name: "clone_newuser", py: `sc("clone", 0x10000000 | 0x10000, 0, 0, 0, 0)`, refused: true},
	{name: "clone_newuser_high_bits", py: `sc("clone", (1 << 32) | 0x10000000 | 0x10000, 0, 0, 0, 0)`, refused: true},
	{name: "clone_newns", py: `sc("clone", 0x20000 | 0x10000, 0, 0, 0, 0)`, refused: true},
	{name: "clone_newpid", py: `sc("clone", 0x20000000 | 0x10000, 0, 0, 0, 0)`, refused: true},
	{name: "clone_newnet", py: `sc("clone", 0x40000000 | 0x10000, 0, 0, 0, 0)`, refused: true},
}

// TestGVisorSeccomp runs probes in gVisor with the hardened profile and
// without it: every call the production filter refuses outright is made with
// zero arguments, and those it decides by their arguments as gvisorProbes
// says. A refused call must fail with EPERM, or with ENOSYS where gVisor
// does not have the call at all (runsc skips a name it does not know).
func TestGVisorSeccomp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts gVisor sandboxes; skipped with -short")
	}
	if err := Check(t.Context(), Hardened, python); err != nil {
		t.Skipf("hardened unavailable here: %v", err)
	}
	info, err := arch.GetInfo(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	profile, err := gvisorSeccomp()
	if err != nil {
		t.Fatal(err)
	}

	probes := slices.Clone(gvisorProbes)
	for _, r := range seccomp.Rules() {
		if _, ok := info.SyscallNames[r.Syscall]; ok && r.When == "" && r.Syscall != "clone3" {
			// With zero arguments gVisor may well refuse the call itself
			// (for want of a capability, say): samePlain.
			probes = append(probes, gvisorProbe{name: r.Syscall, py: `sc("` + r.Syscall + `")`, refused: true, samePlain: true})
		}
	}
	filtered := runGVisorProbes(t, probes, info.SyscallNames, profile)
	plain := runGVisorProbes(t, probes, info.SyscallNames, nil)

	shown := 0
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			got, without := filtered[p.name], plain[p.name]
			t.Logf("with profile: %s; without: %s", got, without)
			switch {
			case p.works && got != "ok":
				t.Errorf("with profile: %s, want ok", got)
			case !p.refused && got != without:
				t.Errorf("with profile: %s, without: %s; the profile must let it through", got, without)
			case p.refused && got == "ENOSYS" && without == "ENOSYS":
				t.Logf("gVisor does not have %s: refused without the profile", p.name)
			case p.refused && got != "EPERM":
				t.Errorf("with profile: %s, want EPERM", got)
			case p.refused && without == "EPERM" && !p.samePlain:
				t.Errorf("without profile: also EPERM, so the probe does not show the profile at work")
			case p.refused && without != "EPERM":
				shown++
			}
		})
	}
	t.Logf("%d of %d refusals differ from gVisor's own answer", shown, len(probes))
}

// runGVisorProbes runs probes in a one-shot gVisor container like a hardened
// sandbox's, with profile as its seccomp policy, and returns each outcome.
func runGVisorProbes(t *testing.T, probes []gvisorProbe, numbers map[string]int, profile *seccomp.Profile) map[string]string {
	t.Helper()
	nr, err := json.Marshal(numbers)
	if err != nil {
		t.Fatal(err)
	}
	header, err := os.ReadFile(seccompProbes)
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.Write(header)
	script.WriteString("PROBES = [\n")
	for _, p := range probes {
		fmt.Fprintf(&script, "    (%q, lambda: %s),\n", p.name, p.py)
	}
	script.WriteString("]\nprint(json.dumps({name: probe(fn) for name, fn in PROBES}))\n")

	dir := t.TempDir()
	t.Cleanup(func() { unmountNullNetNS(filepath.Join(dir, "state")) })
	for _, d := range []string{"state", "runtime", "workspace"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := gvisorSpec{
		Rootfs:    filepath.Join(dir, "bundle", "rootfs"),
		Python:    python,
		ReadOnly:  hostBinds(etcFiles),
		Runtime:   filepath.Join(dir, "runtime"),
		Workspace: filepath.Join(dir, "workspace"),
		TmpSize:   1 << 20,
		OpenFiles: 64,
		Args:      []string{python, "-I", "-S", "-c", script.String(), string(nr)},
		Seccomp:   profile,
	}
	if err := writeBundle(filepath.Join(dir, "bundle"), spec); err != nil {
		t.Fatal(err)
	}
	id, err := containerID()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), slack)
	defer cancel()
	cmd := exec.CommandContext(ctx, RunscPath, runscArgs(filepath.Join(dir, "state"), "run", "--bundle", filepath.Join(dir, "bundle"), id)...)
	cmd.Env = minimalEnv
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run probes (profile: %t): %v\nstderr:\n%s", profile != nil, err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Logf("runsc stderr (profile: %t):\n%s", profile != nil, stderr.Bytes())
	}
	var out map[string]string
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("probe output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	return out
}
