//go:build linux

package seccomp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	bwrapPath  = "/usr/bin/bwrap"
	pythonPath = "/usr/bin/python3"
)

// probeHeader (testdata/probe.py, which the sandbox package's gVisor tests
// share) and probeFooter are the Python side of TestBwrap, around the list
// of probes. Each probe runs in a forked
// child, so that one which changes the process (ptrace, personality) or is
// killed cannot disturb the next, and reports "ok", an errno name, a signal
// name, "skip: why" or "error: what".

const probeHeader = "testdata/probe.py"

const probeFooter = `
print(json.dumps({name: probe(fn) for name, fn in PROBES}))
`

// probe is one attempt made inside the sandbox.
type probe struct {
	name string
	// py is a Python expression that makes the attempt and evaluates to 0
	// or an errno, or raises OSError; see probeHeader for its helpers.
	py string
	// want is the outcome under the filter.
	want string
	// samePlain marks a refused call that can fail the same way without the
	// filter (for lack of a capability, say), so that it proves nothing
	// about the filter. Every other refused call is made with arguments the
	// kernel would reject differently (EINVAL, EFAULT, EBADF) or accept,
	// so that the unfiltered control run shows the probe reaches the filter.
	samePlain bool
	// needs is what the host kernel must do for the probe to show anything,
	// and reached the outcome without the filter that shows it does. A kernel
	// that stops the attempt itself (no IA32 emulation, no such call) stops
	// it with or without the filter, so there the probe is skipped.
	needs, reached string
}

var probes = []probe{
	// Allowed.
	{name: "fork", py: `fork()`, want: "ok"},
	{name: "thread", py: `thread()`, want: "ok"},
	{name: "subprocess", py: `run_true()`, want: "ok"},
	{name: "socket_unix", py: `sock(socket.AF_UNIX, socket.SOCK_STREAM)`, want: "ok"},
	{name: "socket_inet_stream", py: `sock(socket.AF_INET, socket.SOCK_STREAM)`, want: "ok"},
	{name: "socket_inet_dgram", py: `sock(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)`, want: "ok"},
	{name: "ioctl_fionread", py: `sc("ioctl", os.pipe()[0], 0x541B, ctypes.addressof(ctypes.c_int()))`, want: "ok"},
	{name: "personality_query", py: `sc("personality", 0xffffffff)`, want: "ok"},

	// Refused. Arguments are chosen so that an unfiltered kernel answers
	// something other than EPERM; see samePlain.
	{name: "ptrace_traceme", py: `sc("ptrace", 0, 0, 0, 0)`, want: "EPERM"},
	{name: "process_vm_readv", py: `sc("process_vm_readv", os.getpid(), 0, 0, 0, 0, 1)`, want: "EPERM"},
	{name: "process_vm_writev", py: `sc("process_vm_writev", os.getpid(), 0, 0, 0, 0, 1)`, want: "EPERM"},
	{name: "pidfd_getfd", py: `sc("pidfd_getfd", -1, 0, 0)`, want: "EPERM"},
	{name: "kcmp", py: `sc("kcmp", os.getpid(), os.getpid(), 0xff, 0, 0)`, want: "EPERM"},
	{name: "bpf", py: `sc("bpf", 0xffff, 0, 0)`, want: "EPERM", samePlain: true}, // unprivileged_bpf_disabled
	{name: "perf_event_open", py: `sc("perf_event_open", 0, 0, -1, -1, 0)`, want: "EPERM"},
	{name: "userfaultfd", py: `sc("userfaultfd", 1 | 2)`, want: "EPERM"},
	{name: "io_uring_setup", py: `sc("io_uring_setup", 1, 0)`, want: "EPERM", samePlain: true}, // io_uring_disabled
	{name: "io_uring_enter", py: `sc("io_uring_enter", -1, 0, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "io_uring_register", py: `sc("io_uring_register", -1, 0, 0, 0)`, want: "EPERM"},
	{name: "keyctl", py: `sc("keyctl", 0xffff, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "add_key", py: `sc("add_key", 0, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "request_key", py: `sc("request_key", 0, 0, 0, 0)`, want: "EPERM"},
	{name: "mount", py: `sc("mount", 0, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "umount2", py: `sc("umount2", 0, 0x80000000)`, want: "EPERM"},
	{name: "pivot_root", py: `sc("pivot_root", 0, 0)`, want: "EPERM", samePlain: true},
	{name: "open_tree", py: `sc("open_tree", -1, 0, 0xffffffff)`, want: "EPERM"},
	// Newer than the rules first written for the family (Linux 6.8, 6.15).
	{name: "open_tree_attr", py: `sc("open_tree_attr", -1, 0, 0, 0, 0)`, want: "EPERM", needs: "have open_tree_attr", reached: "EFAULT"},
	{name: "statmount", py: `sc("statmount", 0, 0, 0, 0)`, want: "EPERM", needs: "have statmount", reached: "EFAULT"},
	{name: "listmount", py: `sc("listmount", 0, 0, 0, 0)`, want: "EPERM", needs: "have listmount", reached: "EFAULT"},
	{name: "move_mount", py: `sc("move_mount", -1, 0, -1, 0, 0xffffffff)`, want: "EPERM", samePlain: true},
	{name: "fsopen", py: `sc("fsopen", 0, 0xffffffff)`, want: "EPERM", samePlain: true},
	{name: "chroot", py: `sc("chroot", 0)`, want: "EPERM"},
	{name: "setns", py: `sc("setns", -1, 0)`, want: "EPERM"},
	// Whether an unfiltered unshare(CLONE_NEWUSER) succeeds depends on the
	// host; adding a CSIGNAL bit makes it EINVAL everywhere.
	{name: "unshare_newuser", py: `sc("unshare", 0x10000000)`, want: "EPERM", samePlain: true},
	{name: "unshare_newuser_os", py: `unshare()`, want: "EPERM", samePlain: true},
	{name: "unshare_newuser_bad_flags", py: `sc("unshare", 0x10000000 | 1)`, want: "EPERM"},
	{name: "init_module", py: `sc("init_module", 0, 0, 0)`, want: "EPERM", samePlain: true},
	{name: "kexec_load", py: `sc("kexec_load", 0, 0, 0, 0)`, want: "EPERM", samePlain: true},
	{name: "acct", py: `sc("acct", 0)`, want: "EPERM", samePlain: true},
	{name: "clock_settime", py: `sc("clock_settime", 0, 0)`, want: "EPERM"},
	{name: "adjtimex", py: `sc("adjtimex", 0)`, want: "EPERM"},
	{name: "lookup_dcookie", py: `sc("lookup_dcookie", 0, 0, 0)`, want: "EPERM", samePlain: true}, // gone in 6.8, CAP_SYS_ADMIN before
	{name: "name_to_handle_at", py: `sc("name_to_handle_at", -100, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "open_by_handle_at", py: `sc("open_by_handle_at", -1, 0, 0)`, want: "EPERM", samePlain: true},
	{name: "shmget", py: `sc("shmget", 0, 4096, 0o600)`, want: "EPERM"},
	{name: "msgget", py: `sc("msgget", 0, 0o600)`, want: "EPERM"},
	{name: "semget", py: `sc("semget", 0, 1, 0o600)`, want: "EPERM"},
	{name: "personality_no_aslr", py: `sc("personality", 0x0040000)`, want: "EPERM"},
	// socket: by domain, by type (after the flags), and with high bits the
	// kernel ignores.
	{name: "socket_netlink", py: `sock(socket.AF_NETLINK, socket.SOCK_RAW, 0)`, want: "EPERM"},
	{name: "socket_netlink_high_bits", py: `sc("socket", (1 << 32) | 16, 3, 0)`, want: "EPERM"},
	{name: "socket_packet", py: `sock(socket.AF_PACKET, socket.SOCK_RAW, 0)`, want: "EPERM", samePlain: true},
	{name: "socket_packet_bad_type", py: `sc("socket", 17, 11, 0)`, want: "EPERM"},
	{name: "socket_inet_raw", py: `sc("socket", 2, 3, 1000)`, want: "EPERM"},
	{name: "socket_inet_raw_flags", py: `sc("socket", 2, 3 | 0x80000 | 0x800, 1000)`, want: "EPERM"},
	{name: "socket_inet_sock_packet", py: `sc("socket", 2, 10, 0)`, want: "EPERM", samePlain: true},
	// ioctl: TIOCSTI would push input into a terminal; fd -1 makes the
	// unfiltered kernel answer EBADF.
	{name: "ioctl_tiocsti", py: `sc("ioctl", -1, 0x5412, 0)`, want: "EPERM"},
	{name: "ioctl_tiocsti_high_bits", py: `sc("ioctl", -1, (1 << 32) | 0x5412, 0)`, want: "EPERM"},
	{name: "ioctl_tioclinux", py: `sc("ioctl", -1, 0x541C, 0)`, want: "EPERM"},
	// clone: namespace flags are refused; CLONE_THREAD without CLONE_SIGHAND
	// makes the unfiltered kernel answer EINVAL before creating anything.
	{name: "clone_newuser", py: `sc("clone", 0x10000000 | 0x10000, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "clone_newuser_high_bits", py: `sc("clone", (1 << 32) | 0x10000000 | 0x10000, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "clone_newns", py: `sc("clone", 0x20000 | 0x10000, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "clone_newpid", py: `sc("clone", 0x20000000 | 0x10000, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "clone_newnet", py: `sc("clone", 0x40000000 | 0x10000, 0, 0, 0, 0)`, want: "EPERM"},
	{name: "clone3", py: `sc("clone3", 0, 0)`, want: "ENOSYS", needs: "have clone3", reached: "EINVAL"},
	// Calls the filter has no name for, newer than its table (file_getattr,
	// Linux 6.17), fail as on a kernel without them.
	{name: "unnamed", py: `unnamed()`, want: "ENOSYS", needs: "have a call the filter's table does not name", reached: "ok"},
	// Foreign ABIs.
	{name: "i386_int80", py: `int80()`, want: "SIGSYS", needs: "run 32-bit system calls via int 0x80", reached: "ok"},
	{name: "x32", py: `x32()`, want: "ENOSYS", samePlain: true}, // x32 is usually compiled out
}

func TestBwrap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sandboxes; skipped with -short")
	}
	for _, path := range []string{bwrapPath, pythonPath} {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("needs %s: %v", path, err)
		}
	}
	ctx := t.Context()
	if out, err := sandboxCmd(ctx, bwrapPath, "--unshare-all", "--ro-bind", "/", "/", "true").CombinedOutput(); err != nil {
		t.Skipf("bubblewrap cannot make a sandbox on this host (bwrap --unshare-all --ro-bind / / true: %v: %s)",
			err, bytes.TrimSpace(out))
	}

	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	filtered := runProbes(t, prog)
	plain := runProbes(t, nil)

	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			got := filtered[p.name]
			t.Logf("with filter: %s; without: %s", got, plain[p.name])
			if skip, ok := strings.CutPrefix(got, "skip: "); ok {
				t.Skip(skip)
			}
			if p.needs != "" && plain[p.name] != p.reached {
				t.Skipf("this kernel does not %s even unfiltered (%s): the probe would show nothing about the filter",
					p.needs, plain[p.name])
			}
			if got != p.want {
				t.Errorf("with filter: %s, want %s", got, p.want)
			}
			if p.want == "ok" || p.samePlain {
				return
			}
			if plain[p.name] == p.want {
				t.Errorf("without filter: also %s, so the probe does not show the filter at work", p.want)
			}
		})
	}
}

// runProbes runs probes inside bubblewrap, with prog as its seccomp filter
// if not nil, and returns each probe's outcome.
func runProbes(t *testing.T, prog []byte) map[string]string {
	t.Helper()
	p, ok := platforms[runtime.GOARCH]
	if !ok {
		t.Skipf("no filter for %s", runtime.GOARCH)
	}
	numbers, err := json.Marshal(p.info.SyscallNames)
	if err != nil {
		t.Fatal(err)
	}
	header, err := os.ReadFile(probeHeader)
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.Write(header)
	script.WriteString("PROBES = [\n")
	for _, p := range probes {
		fmt.Fprintf(&script, "    (%q, lambda: %s),\n", p.name, p.py)
	}
	script.WriteString("]\n")
	script.WriteString(probeFooter)

	args := []string{
		"--unshare-all", "--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64",
		"--symlink", "usr/bin", "/bin",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
	}
	var extra []*os.File
	if prog != nil {
		path := filepath.Join(t.TempDir(), "filter.bpf")
		if err := os.WriteFile(path, prog, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		extra = append(extra, f)
		args = append(args, "--seccomp", "3") // ExtraFiles[0] is fd 3
	}
	args = append(args, pythonPath, "-I", "-S", "-c", script.String(), string(numbers))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := sandboxCmd(ctx, bwrapPath, args...)
	cmd.ExtraFiles = extra
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run probes (filter: %t): %v\nstderr:\n%s", prog != nil, err, stderr.Bytes())
	}
	var out map[string]string
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("probe output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	return out
}

// sandboxCmd returns a command in its own process group, with an empty
// environment, that is killed with its group when ctx ends or the test
// process dies.
func sandboxCmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
