package seccomp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"syscall"
	"testing"
)

func TestProgram(t *testing.T) {
	if runtime.GOOS != "linux" || platforms[runtime.GOARCH].info == nil {
		if _, err := Program(); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Program() on %s/%s: err = %v, want ErrUnsupported", runtime.GOOS, runtime.GOARCH, err)
		}
		t.Skipf("no filter for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	a, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || len(a)%8 != 0 {
		t.Fatalf("len(Program()) = %d, want a positive multiple of 8", len(a))
	}
	if n := len(a) / 8; n > 4096 { // BPF_MAXINSNS
		t.Fatalf("program has %d instructions, more than the kernel accepts", n)
	}
	orig := bytes.Clone(a)
	a[0] ^= 0xff // the caller's copy must not be the cached one
	b, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(orig, b) {
		t.Fatal("Program() differs between calls")
	}
	// Built afresh, not from the cache: map order must not leak in.
	for range 5 {
		c, err := build(runtime.GOARCH)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(orig, c) {
			t.Fatal("build() is not deterministic")
		}
	}
}

func TestBuildUnsupported(t *testing.T) {
	if _, err := build("riscv64"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("build(riscv64): err = %v, want ErrUnsupported", err)
	}
}

func TestRules(t *testing.T) {
	rs := Rules()
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.Syscall] {
			t.Errorf("%s listed twice", r.Syscall)
		}
		seen[r.Syscall] = true
		if r.Errno != eperm && r.Errno != enosys {
			t.Errorf("%s: errno %v, want EPERM or ENOSYS", r.Syscall, r.Errno)
		}
	}
	// What the isolation levels (README, "Isolation levels") and the
	// sandbox's design rely on; removing one is a decision, not an accident.
	required := []string{
		"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "userfaultfd",
		"keyctl", "add_key", "request_key", "mount", "umount2", "pivot_root", "move_mount",
		"open_tree", "open_tree_attr", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
		"statmount", "listmount", "kexec_load",
		"kexec_file_load", "init_module", "finit_module", "delete_module", "io_uring_setup",
		"io_uring_enter", "io_uring_register", "unshare", "setns", "chroot", "swapon", "swapoff",
		"reboot", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
		"lookup_dcookie", "name_to_handle_at", "open_by_handle_at", "quotactl", "syslog", "vhangup",
		"pidfd_getfd", "personality", "nfsservctl", "uselib", "iopl", "ioperm", "shmget", "shmat",
		"shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl",
		"clone", "clone3", "socket", "ioctl",
	}
	for _, name := range required {
		if !seen[name] {
			t.Errorf("%s is not in Rules()", name)
		}
	}
	rs[0].Syscall = "changed"
	if Rules()[0].Syscall == "changed" {
		t.Error("Rules() returns shared storage")
	}
}

// TestMissingSyscalls pins which rules name calls an architecture lacks, so
// that a misspelt name cannot pass for one that does not exist there.
func TestMissingSyscalls(t *testing.T) {
	for _, tc := range []struct {
		goarch string
		want   []string
	}{
		{"amd64", nil},
		{"arm64", []string{"ioperm", "iopl", "uselib"}},
	} {
		t.Run(tc.goarch, func(t *testing.T) {
			var missing []string
			for _, r := range Rules() {
				if _, ok := platforms[tc.goarch].info.SyscallNames[r.Syscall]; !ok {
					missing = append(missing, r.Syscall)
				}
			}
			slices.Sort(missing)
			if !slices.Equal(missing, tc.want) {
				t.Errorf("missing = %v, want %v", missing, tc.want)
			}
		})
	}
}

// TestKnownCalls pins the call numbers the filter lets through to its rules:
// those go-seccomp-bpf's syscall tables name. A newer go-seccomp-bpf that
// names more lets them through where the filter had refused them with
// ENOSYS; review each new call against the rules (refuse it if it belongs to
// a refused family, as open_tree_attr does to the mount calls), then update
// the ranges here.
func TestKnownCalls(t *testing.T) {
	for _, tc := range []struct {
		goarch string
		want   []nrRange
	}{
		// x86-64's own calls, then those numbered with every architecture's
		// from pidfd_send_signal on. 336 is uprobe (Linux 6.16), which the
		// table lacks; the kernel makes it without asking seccomp (as it
		// does uretprobe), and it works only from a uprobe trampoline.
		{"amd64", []nrRange{{0, 335}, {424, 467}}},
		// The generic table; 244 is the start of the architecture-specific
		// range, which arm64 leaves empty, and 403-414 are the 32-bit
		// time64 calls, which arm64 does not have (the kernel answers ENOSYS).
		{"arm64", []nrRange{{0, 244}, {260, 294}, {403, 414}, {416, 467}}},
	} {
		t.Run(tc.goarch, func(t *testing.T) {
			if got := platforms[tc.goarch].known(); !slices.Equal(got, tc.want) {
				t.Errorf("known calls %v, want %v: go-seccomp-bpf's table changed; review the calls it added (see the test's doc)", got, tc.want)
			}
		})
	}
}

// call is the struct seccomp_data a filter sees.
type call struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

func (c call) bytes() []byte {
	b := binary.NativeEndian.AppendUint32(nil, c.nr)
	b = binary.NativeEndian.AppendUint32(b, c.arch)
	b = binary.NativeEndian.AppendUint64(b, 0) // instruction pointer
	for _, a := range c.args {
		b = binary.NativeEndian.AppendUint64(b, a)
	}
	return b
}

// run interprets prog, the encoded filter, the way the kernel does for the
// instructions the filter uses, and returns the action.
func run(prog []byte, c call) (uint32, error) {
	data := c.bytes()
	var a uint32
	for pc := 0; ; pc++ {
		if (pc+1)*8 > len(prog) {
			return 0, fmt.Errorf("ran off the end at %d", pc)
		}
		ins := prog[pc*8:]
		op, jt, jf, k := binary.NativeEndian.Uint16(ins), ins[2], ins[3], binary.NativeEndian.Uint32(ins[4:])
		switch op {
		case 0x20: // ld [k]
			if k%4 != 0 || int(k)+4 > len(data) {
				return 0, fmt.Errorf("bad load at %d: %d", pc, k)
			}
			a = binary.NativeEndian.Uint32(data[k:])
		case 0x54: // and #k
			a &= k
		case 0x15, 0x25, 0x35, 0x45: // jeq, jgt, jge, jset #k
			var cond bool
			switch op {
			case 0x15:
				cond = a == k
			case 0x25:
				cond = a > k
			case 0x35:
				cond = a >= k
			case 0x45:
				cond = a&k != 0
			}
			if cond {
				pc += int(jt)
			} else {
				pc += int(jf)
			}
		case 0x06: // ret #k
			return k, nil
		default:
			return 0, fmt.Errorf("unexpected opcode %#x at %d", op, pc)
		}
	}
}

type filterCase struct {
	name string
	call call
	want uint32 // the action
}

func action(errno syscall.Errno) uint32 { return retErrno | uint32(errno) }

// x32SyscallBit is __X32_SYSCALL_BIT, which marks an x32 call on amd64.
const x32SyscallBit = 0x40000000

func TestFilter(t *testing.T) {
	const (
		auditI386 = 0x40000003
		auditARM  = 0x40000028
	)
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			p := platforms[goarch]
			prog, err := build(goarch)
			if err != nil {
				t.Fatal(err)
			}
			native := uint32(p.info.ID)
			nr := func(name string) uint32 {
				n, ok := p.info.SyscallNames[name]
				if !ok {
					t.Fatalf("no %s on %s", name, goarch)
				}
				return uint32(n)
			}
			sys := func(name string, args ...uint64) call {
				c := call{nr: nr(name), arch: native}
				copy(c.args[:], args)
				return c
			}
			const (
				high       = 1 << 32 // high bits the kernel ignores in the arguments tested
				sigchld    = 17      // Linux's, whatever the build host
				cloneVM    = 0x100
				cloneVfork = 0x4000
			)

			tests := []filterCase{
				{"read", sys("read", 0, 0, 0), retAllow},
				{"openat", sys("openat", 0, 0, 0), retAllow},
				{"fork", sys("clone", sigchld), retAllow},
				{"thread", sys("clone", 0x3d0f00), retAllow},
				{"vfork", sys("clone", cloneVM|cloneVfork|sigchld), retAllow},
				{"clone NEWNS", sys("clone", cloneNewNS), action(eperm)},
				{"clone NEWCGROUP", sys("clone", cloneNewCgroup), action(eperm)},
				{"clone NEWUTS", sys("clone", cloneNewUTS), action(eperm)},
				{"clone NEWIPC", sys("clone", cloneNewIPC), action(eperm)},
				{"clone NEWUSER", sys("clone", cloneNewUser|sigchld), action(eperm)},
				{"clone NEWPID", sys("clone", cloneNewPID), action(eperm)},
				{"clone NEWNET", sys("clone", cloneNewNet), action(eperm)},
				{"clone NEWUSER high bits", sys("clone", high|cloneNewUser), action(eperm)},
				{"clone high bits only", sys("clone", high|sigchld), retAllow},
				{"clone3", sys("clone3", 0, 0), action(enosys)},
				{"socket inet stream", sys("socket", 2, 1|0x80000, 0), retAllow},
				{"socket unix dgram", sys("socket", 1, 2, 0), retAllow},
				{"socket inet6 dgram nonblock", sys("socket", 10, 2|0x800, 0), retAllow},
				{"socket netlink", sys("socket", 16, 3, 0), action(eperm)},
				{"socket netlink dgram", sys("socket", 16, 2, 0), action(eperm)},
				{"socket netlink high bits", sys("socket", high|16, 3, 0), action(eperm)},
				{"socket packet", sys("socket", 17, 2, 0), action(eperm)},
				{"socket vsock", sys("socket", 40, 1, 0), action(eperm)},
				{"socket bluetooth", sys("socket", 31, 1, 0), action(eperm)},
				{"socket inet high bits", sys("socket", high|2, 1, 0), retAllow},
				{"socketpair inet", sys("socketpair", 2, 1, 0, 0), action(eperm)},
				{"mq_open", sys("mq_open", 0, 0, 0, 0), action(eperm)},
				{"socket inet raw", sys("socket", 2, sockRaw, 1), action(eperm)},
				{"socket inet raw cloexec nonblock", sys("socket", 2, sockRaw|0x80000|0x800, 1), action(eperm)},
				{"socket inet raw high bits", sys("socket", 2, high|sockRaw, 1), action(eperm)},
				{"socket inet packet", sys("socket", 2, sockPacket, 0), action(eperm)},
				{"socket unix raw", sys("socket", 1, sockRaw, 0), action(eperm)},
				{"socketpair unix", sys("socketpair", 1, 1, 0, 0), retAllow},
				{"ioctl FIONREAD", sys("ioctl", 0, 0x541b, 0), retAllow},
				{"ioctl TCGETS", sys("ioctl", 0, 0x5401, 0), retAllow},
				{"ioctl TIOCSTI", sys("ioctl", 0, tiocsti, 0), action(eperm)},
				{"ioctl TIOCSTI high bits", sys("ioctl", 0, high|tiocsti, 0), action(eperm)},
				{"ioctl TIOCLINUX", sys("ioctl", 0, tioclinux, 0), action(eperm)},
				{"personality query", sys("personality", 0xffffffff), retAllow},
				{"personality linux", sys("personality", 0), retAllow},
				{"personality linux high bits", sys("personality", high), retAllow},
				{"personality no aslr", sys("personality", 0x0040000), action(eperm)},
				{"personality read implies exec", sys("personality", 0x0400000), action(eperm)},
				{"personality query high bits", sys("personality", high|0xffffffff), retAllow},
				{"foreign arch", call{nr: nr("getpid"), arch: auditI386}, retKillProcess},
				{"foreign arch arm", call{nr: nr("getpid"), arch: auditARM}, retKillProcess},
			}
			// Numbers the table does not name: past its last, where the
			// kernel's calls newer than the filter are, and far past it.
			last := slices.Max(slices.Collect(maps.Keys(p.info.SyscallNumbers)))
			for _, n := range []uint32{uint32(last) + 1, uint32(last) + 2, 1000, 0x3fffffff, 0xffffffff} {
				tests = append(tests, filterCase{fmt.Sprintf("unnamed %d", n), call{nr: n, arch: native}, action(enosys)})
			}
			if goarch == "amd64" {
				tests = append(tests,
					filterCase{"x32 getpid", call{nr: x32SyscallBit | nr("getpid"), arch: native}, action(enosys)},
					filterCase{"x32 open_tree_attr", call{nr: x32SyscallBit | nr("open_tree_attr"), arch: native}, action(enosys)},
				)
			}
			for _, r := range rules() {
				if len(r.tests) > 0 {
					continue
				}
				n, ok := p.info.SyscallNames[r.Syscall]
				if !ok {
					continue
				}
				tests = append(tests, filterCase{r.Syscall, call{nr: uint32(n), arch: native}, action(r.Errno)})
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					got, err := run(prog, tc.call)
					if err != nil {
						t.Fatal(err)
					}
					if got != tc.want {
						t.Errorf("action = %#x, want %#x", got, tc.want)
					}
				})
			}

			// Every call number the table names and no rule does is allowed;
			// every number up to the table's last that it does not name fails
			// with ENOSYS.
			named := map[uint32]bool{}
			for _, r := range rules() {
				if n, ok := p.info.SyscallNames[r.Syscall]; ok {
					named[uint32(n)] = true
				}
			}
			for n := range uint32(last) + 1 {
				want := uint32(retAllow)
				name, ok := p.info.SyscallNumbers[int(n)]
				switch {
				case !ok:
					want = action(enosys)
				case named[n]:
					continue
				}
				got, err := run(prog, call{nr: n, arch: native})
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%d (%q): action = %#x, want %#x", n, name, got, want)
				}
			}
		})
	}
}
