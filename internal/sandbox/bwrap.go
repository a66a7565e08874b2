package sandbox

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"path"
	"strconv"

	"github.com/codecell/codecell/internal/runner"
)

// Paths inside a sandbox.
const (
	WorkspaceMount = "/workspace"       // the namespace's workspace, read-write, the working directory
	RuntimeMount   = "/codecell"        // codecell's Python files, read-only
	GenMount       = "/codecell/gen"    // the generated servers package, read-only
	SkillsMount    = "/codecell/skills" // the namespace's saved skills, read-only
)

// sandboxUID is the unprivileged user the code runs as inside the sandbox.
const sandboxUID = 65534

// UID is the host uid and gid a root-run codecell's sandboxes run as (see
// HostUser), for files made for the code to own.
const UID = sandboxUID

// minimalEnv is the whole environment bubblewrap and runsc are started with,
// so nothing of codecell's own environment (tokens, keys) reaches a sandbox,
// not even through /proc/1/environ.
var minimalEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// sandboxEnv is the environment of the code.
var sandboxEnv = [][2]string{
	{"PATH", "/usr/local/bin:/usr/bin:/bin"},
	{"HOME", WorkspaceMount},
	{"TMPDIR", "/tmp"},
	{"LANG", "C.UTF-8"},
	{"PYTHONUNBUFFERED", "1"},
	{"MPLBACKEND", "Agg"},
	// Caches (fontconfig's, matplotlib's) go to the private /tmp, not to
	// HOME, the workspace, where they would show as files the code made.
	{"XDG_CACHE_HOME", "/tmp/.cache"},
	{"MPLCONFIGDIR", "/tmp/.matplotlib"},
	// HOME is the workspace, so a user site directory there
	// (~/.local/lib/python3.X/site-packages, with its .pth files and
	// usercustomize) would run in every python subprocess the code starts:
	// a file fetched into the workspace must not run unasked.
	{"PYTHONNOUSERSITE", "1"},
	// The working directory is the workspace too, and python -c and -m
	// put it first on sys.path: a json.py or pip/ left there would stand
	// in for the real one in `python3 -m pip` or `python3 -c "import
	// json"`. Python 3.11 and later leave it (and a script's directory)
	// off, as the execution's own interpreter does (it runs isolated).
	{"PYTHONSAFEPATH", "1"},
	// glibc reserves 64 MiB of address space for each thread's malloc arena,
	// up to eight per core: under the address-space limit (512 MiB by
	// default) a dozen threads used it all, and "can't start new thread"
	// came long before sandbox.pids. Python holds the GIL anyway.
	{"MALLOC_ARENA_MAX", "2"},
}

// bwrapSpec is everything the bubblewrap command line depends on. Descriptor
// fields are numbers in the child (3 is the first of ExtraFiles).
type bwrapSpec struct {
	Python    string
	ExtraRO   []string // host directories to expose read-only at the same path
	CtlFD     int      // control socket of the zygote
	SeccompFD int      // compiled seccomp program; 0 means none
	BootIDFD  int      // the sandbox's own boot_id (see newBootID), shown in place of the host's; 0 means none
	Runtime   string   // directory with the runner, mounted at RuntimeMount when RuntimeFiles is empty
	// RuntimeFiles are the runner's files, copied into the sandbox's own
	// root at RuntimeMount from descriptors rather than bound from Runtime,
	// so that the sandbox's mount table does not show Runtime's host path.
	RuntimeFiles []bwrapFile
	// Script is the file under RuntimeMount the interpreter runs: the
	// runner's source, or its bytecode (runner.CompiledScript) when
	// RuntimeFiles hold it; "" is the source.
	Script    string
	Workspace string // the workspace, mounted at WorkspaceMount
	Gen       string // the generated servers package's directory, mounted at GenMount; "" for none
	Skills    string // the namespace's skills directory, mounted at SkillsMount; "" for none
	TmpSize   int64
	Preload   []string // the runner's --preload argument, or nil
	// Network, when set, is the sandbox's way out: EgressSock (the
	// proxy's socket on the host) is bound at EgressMount and the
	// network's trust store at TrustMount, with their environment.
	Network    *Network
	EgressSock string
	TrustFD    int // Network.Trust, for TrustMount

	// Unbound starts a sandbox bound to no namespace yet (unbound.go):
	// WorkspaceMount is an empty directory, and nothing is bound at
	// SkillsMount, though the runner is told of it when Skills is set; the
	// host mounts both when a namespace claims the sandbox.
	Unbound bool
}

// bwrapFile is a file bubblewrap writes into the sandbox from a descriptor.
type bwrapFile struct {
	Path string // relative to RuntimeMount
	FD   int
}

// etcFiles are the few host files Python and common libraries read; the rest
// of /etc (shadow, ssh keys, codecell's config) stays out.
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives", "/etc/ssl/certs",
	"/etc/ca-certificates.conf", "/etc/mime.types", "/etc/python3", "/etc/python3.11",
	"/etc/matplotlibrc", "/etc/fonts", // matplotlib's defaults (Debian keeps them in /etc) and fontconfig's
}

// bwrapArgs builds the bubblewrap command line of a production sandbox. It is
// a pure function so the policy can be read and tested as data.
func bwrapArgs(s bwrapSpec) []string {
	fd := strconv.Itoa
	size := strconv.FormatInt(s.TmpSize, 10)
	uid := strconv.Itoa(sandboxUID)
	a := []string{
		"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
		"--unshare-uts", "--unshare-cgroup-try",
		"--disable-userns",
		// The fork server is the PID namespace's init, not a bubblewrap
		// reaper: that reaper runs as the code's user and is dumpable, so
		// the code could write its memory through /proc/1/mem, make it
		// ignore its parent's death, and keep the namespace and its own
		// processes alive after the host killed the sandbox. The fork
		// server is not dumpable, reaps what the code leaves, and as init
		// takes no signal the code sends it but those it handles.
		"--as-pid-1",
		"--die-with-parent", "--new-session",
		"--uid", uid, "--gid", uid,
		"--hostname", "codecell",
		"--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin",
		"--symlink", "usr/sbin", "/sbin",
		"--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64",
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", f, f)
	}
	a = append(a,
		"--proc", "/proc",
		// bubblewrap leaves /proc/sys writable (it covers only what it finds
		// writable, and the directory is not). Its files belong to host
		// root, which the sandbox user never is (see HostUser); this is
		// the second line of defence against global sysctls such as
		// kernel.core_pattern, which the kernel runs as host root.
		"--ro-bind", "/proc/sys", "/proc/sys",
	)
	if s.BootIDFD > 0 {
		// The host's boot_id names the machine and its boot: code in two
		// sandboxes (or two executions a reboot apart) could tell whether
		// they share a host. Each sandbox reads one of its own.
		a = append(a, "--ro-bind-data", fd(s.BootIDFD), "/proc/sys/kernel/random/boot_id")
	}
	a = append(a,
		"--dev", "/dev",
		"--size", size, "--tmpfs", "/tmp",
		"--size", size, "--tmpfs", "/dev/shm",
	)
	if len(s.RuntimeFiles) > 0 {
		// Read-only once the root is remounted so (below); the mount
		// points of Gen and Skills are made here, as Install makes them.
		a = append(a, "--perms", "0755", "--dir", RuntimeMount)
		made := map[string]bool{RuntimeMount: true}
		for _, f := range s.RuntimeFiles {
			dest := path.Join(RuntimeMount, f.Path)
			var dirs []string // parents not made yet, innermost first
			for dir := path.Dir(dest); !made[dir]; dir = path.Dir(dir) {
				made[dir] = true
				dirs = append(dirs, dir)
			}
			for i := len(dirs) - 1; i >= 0; i-- {
				a = append(a, "--perms", "0755", "--dir", dirs[i])
			}
			a = append(a, "--perms", "0444", "--file", fd(f.FD), dest)
		}
		a = append(a, "--perms", "0755", "--dir", GenMount, "--perms", "0755", "--dir", SkillsMount)
	} else {
		a = append(a, "--ro-bind", s.Runtime, RuntimeMount)
	}
	if s.Unbound {
		a = append(a, "--perms", "0700", "--dir", WorkspaceMount)
	} else {
		a = append(a, "--bind", s.Workspace, WorkspaceMount)
	}
	a = append(a,
		"--chdir", WorkspaceMount,
		"--clearenv",
	)
	// After /tmp: a directory under /tmp (tests) must not be hidden by it.
	for _, d := range s.ExtraRO {
		a = append(a, "--ro-bind", d, d)
	}
	for _, kv := range sandboxEnv {
		a = append(a, "--setenv", kv[0], kv[1])
	}
	if s.Network != nil {
		// Still no interface but loopback: the socket is the way out.
		a = append(a, "--perms", "0755", "--dir", path.Dir(EgressMount), "--bind", s.EgressSock, EgressMount)
		if s.TrustFD > 0 {
			a = append(a, "--perms", "0444", "--file", fd(s.TrustFD), TrustMount)
		}
		for _, kv := range networkEnv(s.Network) {
			a = append(a, "--setenv", kv[0], kv[1])
		}
	}
	if s.Gen != "" {
		a = append(a, "--ro-bind", s.Gen, GenMount)
	}
	if s.Skills != "" && !s.Unbound {
		a = append(a, "--ro-bind", s.Skills, SkillsMount)
	}
	// Last, once every mount point exists: the root and /dev are tmpfs
	// bubblewrap made, writable unless remounted, and they live as long as
	// the sandbox, so a file written there (/etc/ld.so.preload, a library
	// in /dev) would reach every later execution. Only the workspace, /tmp
	// and /dev/shm stay writable; the fork server wipes the last two.
	a = append(a, "--remount-ro", "/dev", "--remount-ro", "/")
	if s.SeccompFD > 0 {
		a = append(a, "--seccomp", fd(s.SeccompFD))
	}
	a = append(a, "--", s.Python, "-I", "-B", path.Join(RuntimeMount, cmp.Or(s.Script, runner.Script)),
		"--zygote", fd(s.CtlFD), "--isolated", "--scratch", "/tmp:/dev/shm")
	a = append(a, s.Preload...)
	if s.Skills != "" {
		a = append(a, "--skills", SkillsMount)
	}
	if s.Gen != "" {
		a = append(a, "--gen", GenMount)
	}
	return a
}

// newBootID is a random boot_id as the kernel writes it: a version 4 UUID
// and a newline.
func newBootID() []byte {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Appendf(nil, "%x-%x-%x-%x-%x\n", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
