package seccomp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"syscall"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// ErrUnsupported is returned by [Program] on an operating system or
// architecture the filter is not written for.
var ErrUnsupported = errors.New("seccomp filter not available on this platform")

// Rule describes one system call the filter refuses.
type Rule struct {
	// Syscall is the kernel's name for the call, as in syscalls(2).
	Syscall string
	// Errno is what the refused call fails with.
	Errno syscall.Errno
	// When says which calls are refused; empty means every call.
	When string
}

// The Linux ABI values the filter uses. They are spelled out rather than
// taken from x/sys/unix or syscall so that they stay Linux's on any build host.
const (
	eperm  = syscall.Errno(1)
	enosys = syscall.Errno(38)

	retKillProcess = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno       = 0x00050000 // SECCOMP_RET_ERRNO; the errno is the low 16 bits
	retAllow       = 0x7fff0000 // SECCOMP_RET_ALLOW

	// Offsets in struct seccomp_data.
	offNr   = 0
	offArch = 4
	offArgs = 16

	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000
	cloneNamespace = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet

	afUnix  = 1
	afInet  = 2
	afInet6 = 10

	sockTypeMask = 0xf // the kernel's SOCK_TYPE_MASK; the rest is SOCK_NONBLOCK|SOCK_CLOEXEC
	sockRaw      = 3
	sockPacket   = 10 // obsolete; socket(AF_INET, SOCK_PACKET) is turned into a packet socket

	tiocsti   = 0x5412
	tioclinux = 0x541c

	perLinux       = 0
	personalityGet = 0xffffffff
)

// argOp is how an argTest compares an argument.
type argOp int

const (
	opIn     argOp = iota // refuse if the value is one of vals
	opNotIn               // refuse unless the value is one of vals
	opAnyBit              // refuse if the value has any bit of vals[0]
)

// argTest is one condition on a system call argument. Only the low 32 bits
// are compared: every argument tested is one the kernel truncates to 32 bits
// (int, unsigned int, or clone's flags, of which it reads lower_32_bits), so
// the high bits are the caller's to set and must not change the outcome.
type argTest struct {
	arg  uint32 // 0 to 5
	mask uint32 // ANDed with the value before comparing; 0 means none
	op   argOp
	vals []uint32
}

// rule is a Rule with its conditions; a call is refused if any test holds,
// or always if there are none.
type rule struct {
	Rule
	tests []argTest
}

// always lists the calls refused whatever their arguments, by why.
var always = [][]string{
	// Inspecting or changing other processes.
	{"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd"},
	// Large kernel attack surface with a record of privilege escalations,
	// which Python code has no use for.
	{"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register"},
	// Kernel keyrings are not namespaced.
	{"keyctl", "add_key", "request_key"},
	// Mounts, namespaces and the root directory.
	{"mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr", "fsopen", "fsmount",
		"fsconfig", "fspick", "mount_setattr", "statmount", "listmount", "unshare", "setns", "chroot"},
	// File handles open files by inode, bypassing path permission checks.
	{"name_to_handle_at", "open_by_handle_at"},
	// The machine as a whole: kernel code, clocks, swap, logs, devices.
	{"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
		"swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
		"syslog", "vhangup", "quotactl", "quotactl_fd", "lookup_dcookie", "nfsservctl", "uselib",
		"iopl", "ioperm"},
	// SysV IPC objects outlive the process, so a warm sandbox could leave
	// them for a later execution to find.
	{"shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
		"semget", "semop", "semtimedop", "semctl"},
	// POSIX message queues too: they live in the sandbox's IPC namespace,
	// which outlives every execution of a warm sandbox.
	{"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"},
}

// notEverywhere are calls in always that some supported architectures do
// not have; any other name missing from an architecture's table is a mistake.
var notEverywhere = map[string]bool{"uselib": true, "iopl": true, "ioperm": true}

// conditional lists the calls refused depending on their arguments.
var conditional = []rule{
	{
		Rule: Rule{Syscall: "clone", Errno: eperm,
			When: "flags include a namespace flag (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET)"},
		// The flags are the first argument on every supported architecture.
		tests: []argTest{{arg: 0, op: opAnyBit, vals: []uint32{cloneNamespace}}},
	},
	{
		// An allow-list of families: the network namespace holds only a
		// loopback, but some families (AF_VSOCK to the hypervisor, AF_NETLINK
		// to the kernel, AF_PACKET) reach past it or widen the kernel surface.
		Rule: Rule{Syscall: "socket", Errno: eperm,
			When: "domain is not AF_UNIX, AF_INET or AF_INET6, or type is SOCK_RAW or SOCK_PACKET"},
		// The not-in test last: OCIProfile needs it so (see there).
		tests: []argTest{
			{arg: 1, mask: sockTypeMask, op: opIn, vals: []uint32{sockRaw, sockPacket}},
			{arg: 0, op: opNotIn, vals: []uint32{afUnix, afInet, afInet6}},
		},
	},
	{
		Rule:  Rule{Syscall: "socketpair", Errno: eperm, When: "domain is not AF_UNIX"},
		tests: []argTest{{arg: 0, op: opNotIn, vals: []uint32{afUnix}}},
	},
	{
		Rule: Rule{Syscall: "ioctl", Errno: eperm,
			When: "request is TIOCSTI or TIOCLINUX"},
		tests: []argTest{{arg: 1, op: opIn, vals: []uint32{tiocsti, tioclinux}}},
	},
	{
		// Other personas can turn off address space randomisation
		// (ADDR_NO_RANDOMIZE) or make readable memory executable
		// (READ_IMPLIES_EXEC) for programs the sandbox runs.
		Rule: Rule{Syscall: "personality", Errno: eperm,
			When: "persona is not PER_LINUX or the 0xffffffff query"},
		tests: []argTest{{arg: 0, op: opNotIn, vals: []uint32{perLinux, personalityGet}}},
	},
}

// clone3 takes its flags in a structure in memory, which a seccomp filter
// cannot read, so it is refused with ENOSYS: glibc then falls back to clone,
// whose flags the conditional rule above inspects.
var clone3 = Rule{Syscall: "clone3", Errno: enosys}

// rules returns every rule, conditional ones first, in a fixed order.
func rules() []rule {
	var rs []rule
	rs = append(rs, conditional...)
	rs = append(rs, rule{Rule: clone3})
	for _, group := range always {
		for _, name := range group {
			rs = append(rs, rule{Rule: Rule{Syscall: name, Errno: eperm}})
		}
	}
	return rs
}

// Rules returns what the filter refuses, for `codecell doctor` and the
// documentation. The slice is the caller's to keep.
//
// clone3 fails with ENOSYS, not EPERM, so that libc falls back to clone,
// whose flags the filter can read. Beyond these rules, a call through a
// foreign ABI kills the process, and a call number the architecture's syscall
// table does not name (one newer than the filter, an x32 call on amd64) fails
// with ENOSYS. A name may have no system call on some architectures (iopl
// exists only on x86); there it cannot be called anyway.
func Rules() []Rule {
	rs := rules()
	out := make([]Rule, len(rs))
	for i, r := range rs {
		out[i] = r.Rule
	}
	return out
}

// platform is an architecture the filter is written for. All are
// little-endian, which fixes where an argument's low 32 bits are.
type platform struct {
	// info's syscall table is every call the rules were written against;
	// TestKnownCalls pins it, so that a newer go-seccomp-bpf that names more
	// calls (and so lets them through) is a reviewed change.
	info *arch.Info
}

var platforms = map[string]platform{
	"amd64": {info: arch.X86_64},
	"arm64": {info: arch.AARCH64},
}

// nrRange is the call numbers from lo to hi, both included.
type nrRange struct{ lo, hi uint32 }

// known returns the runs of consecutive call numbers that p's syscall table
// names, in increasing order.
func (p platform) known() []nrRange {
	nrs := slices.Sorted(maps.Keys(p.info.SyscallNumbers))
	var runs []nrRange
	for _, n := range nrs {
		if len(runs) > 0 && runs[len(runs)-1].hi+1 == uint32(n) {
			runs[len(runs)-1].hi++
			continue
		}
		runs = append(runs, nrRange{uint32(n), uint32(n)})
	}
	return runs
}

var program = sync.OnceValues(func() ([]byte, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, runtime.GOOS)
	}
	return build(runtime.GOARCH)
})

// Program returns the filter for the running architecture as bubblewrap's
// --seccomp option reads it: an array of struct sock_filter in native byte
// order. The result is the same on every call and the caller's to keep.
// It returns an error wrapping [ErrUnsupported] on other than Linux on amd64
// or arm64.
func Program() ([]byte, error) {
	b, err := program()
	return bytes.Clone(b), err
}

// build returns the encoded filter for goarch.
func build(goarch string) ([]byte, error) {
	p, ok := platforms[goarch]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, goarch)
	}
	raw, err := assembleFilter(p)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

// assembleFilter lays out the filter for p. It takes only syscall tables
// from go-seccomp-bpf, not its Policy compiler, which in an allow-by-default
// policy sends calls from a foreign ABI to the default action (so i386 calls
// through int 0x80 would pass every rule) and compares all 64 bits of an
// argument (so high bits would pass the argument rules).
func assembleFilter(p platform) ([]bpf.RawInstruction, error) {
	var a assembler

	// The rules name the native ABI's numbers; under any other ABI the same
	// numbers mean other calls, so such a call is not let through at all.
	native := a.newLabel()
	a.load32(offArch)
	a.jumpIf(bpf.JumpEqual, uint32(p.info.ID), native, 0)
	a.ret(retKillProcess)
	a.place(native)
	a.load32(offNr)
	unnamedCalls(&a, p.known())

	// Conditional rules come first and end in their own returns, so that
	// the unconditional rules' jumps to the shared returns stay short.
	// A linear scan costs a few dozen instructions per call, which is noise
	// next to a Python interpreter's own work.
	denied := map[syscall.Errno]label{}
	for _, r := range rules() {
		nr, ok := p.info.SyscallNames[r.Syscall]
		if !ok {
			if notEverywhere[r.Syscall] && len(r.tests) == 0 {
				continue
			}
			return nil, fmt.Errorf("build seccomp filter: no system call %q on %s", r.Syscall, p.info.Name)
		}
		if len(r.tests) == 0 {
			l, ok := denied[r.Errno]
			if !ok {
				l = a.newLabel()
				denied[r.Errno] = l
			}
			a.jumpIf(bpf.JumpEqual, uint32(nr), l, 0)
			continue
		}
		if err := conditionalBlock(&a, uint32(nr), r); err != nil {
			return nil, err
		}
	}
	a.ret(retAllow)
	for _, errno := range []syscall.Errno{eperm, enosys} {
		if l, ok := denied[errno]; ok {
			a.place(l)
			a.ret(retErrno | uint32(errno))
		}
	}
	return a.assemble()
}

// unnamedCalls emits the refusal of every call number outside known, entered
// with the number in A; it falls through for the others.
//
// The rules are a deny list, so a call added to the kernel after they were
// written would reach it unexamined: open_tree_attr (Linux 6.15) did, next to
// a rule refusing open_tree. Only the calls the rules were written against
// are let through to them; any other number fails as on a kernel without the
// call, with ENOSYS, on which libc falls back to an older call. That covers
// numbers past the table's last, gaps in it, x32 calls on amd64 (numbered
// from bit 30) and -1.
func unnamedCalls(a *assembler, known []nrRange) {
	named, unnamed := a.newLabel(), a.newLabel()
	for _, r := range known {
		// In increasing order, so below r.lo is between two runs.
		if r.lo > 0 {
			a.jumpIf(bpf.JumpGreaterOrEqual, r.lo, 0, unnamed)
		}
		a.jumpIf(bpf.JumpGreaterThan, r.hi, 0, named)
	}
	a.place(unnamed)
	a.ret(retErrno | uint32(enosys))
	a.place(named)
}

// conditionalBlock emits r's tests, entered with the call number in A. It
// returns from the filter if nr matches and falls through otherwise.
func conditionalBlock(a *assembler, nr uint32, r rule) error {
	skip, deny := a.newLabel(), a.newLabel()
	a.jumpIf(bpf.JumpEqual, nr, 0, skip)
	for _, t := range r.tests {
		if t.arg > 5 || len(t.vals) == 0 {
			return fmt.Errorf("build seccomp filter: bad test on %s", r.Syscall)
		}
		a.load32(offArgs + 8*t.arg) // the low half on a little-endian machine
		if t.mask != 0 {
			a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: t.mask})
		}
		switch t.op {
		case opIn:
			for _, v := range t.vals {
				a.jumpIf(bpf.JumpEqual, v, deny, 0)
			}
		case opAnyBit:
			a.jumpIf(bpf.JumpBitsSet, t.vals[0], deny, 0)
		case opNotIn:
			next := a.newLabel()
			for i, v := range t.vals {
				otherwise := label(0)
				if i == len(t.vals)-1 {
					otherwise = deny
				}
				a.jumpIf(bpf.JumpEqual, v, next, otherwise)
			}
			a.place(next)
		}
	}
	a.ret(retAllow)
	a.place(deny)
	a.ret(retErrno | uint32(r.Errno))
	a.place(skip)
	return nil
}
