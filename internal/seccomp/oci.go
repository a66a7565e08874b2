package seccomp

import (
	"fmt"
	"math/bits"
	"runtime"
	"syscall"
)

// Profile is the linux.seccomp section of an OCI runtime configuration
// (runtime-spec, config-linux.md#seccomp), the form in which a container
// runtime such as gVisor's runsc takes a seccomp policy.
type Profile struct {
	DefaultAction string           `json:"defaultAction"`
	Architectures []string         `json:"architectures,omitempty"`
	Syscalls      []ProfileSyscall `json:"syscalls,omitempty"`
}

// ProfileSyscall is one entry of a [Profile]: Action applies to a call named
// in Names whose arguments meet Args. As runc and runsc read Args, several
// conditions on the same argument match if any of them holds; conditions on
// different arguments must all hold. Every entry of [OCIProfile] tests one
// argument at most, so only the first reading applies.
type ProfileSyscall struct {
	Names    []string     `json:"names"`
	Action   string       `json:"action"`
	ErrnoRet *uint        `json:"errnoRet,omitempty"`
	Args     []ProfileArg `json:"args,omitempty"`
}

// ProfileArg is a condition on argument Index. [OCIProfile] uses only
// SCMP_CMP_MASKED_EQ: the argument ANDed with Value equals ValueTwo.
type ProfileArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// The OCI names for the actions and the comparison the profile uses.
const (
	actAllow = "SCMP_ACT_ALLOW"
	actErrno = "SCMP_ACT_ERRNO"
	opMasked = "SCMP_CMP_MASKED_EQ"
)

// ociArch is the libseccomp name of each platform's native ABI.
var ociArch = map[string]string{
	"amd64": "SCMP_ARCH_X86_64",
	"arm64": "SCMP_ARCH_AARCH64",
}

// OCIProfile returns the rules of [Program] for the running architecture as
// an OCI seccomp profile: every call is allowed except as [Rules] says. It is
// derived from the same table as Program, so the two refuse the same calls
// with the same arguments, and is the caller's to keep.
//
// Only the native ABI is listed, so a runtime that compiles the profile with
// libseccomp kills a call through another ABI, as Program does; x32 calls
// are left to the runtime. A profile names calls, not numbers, so it cannot
// refuse the numbers Program refuses for want of a name (calls newer than
// go-seccomp-bpf's table): the runtime's own table decides those. gVisor's
// sentry answers every number it does not implement with ENOSYS, and runs
// those it does in itself rather than in the host's kernel. Every condition compares the low 32 bits only,
// with a mask that clears the high ones, for the reason the package doc
// gives; an equality test (SCMP_CMP_EQ) would compare all 64.
//
// Where Program refuses a call unless an argument has one of a few values
// (personality), the profile has an SCMP_ACT_ALLOW entry for those values
// followed by an unconditional SCMP_ACT_ERRNO entry for the call. That relies
// on the first matching entry deciding, which is how gVisor's runsc reads a
// profile; runc drops entries whose action is the default one, and would
// refuse every such call.
//
// It returns an error wrapping [ErrUnsupported] on other than Linux on amd64
// or arm64.
func OCIProfile() (*Profile, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, runtime.GOOS)
	}
	return buildProfile(runtime.GOARCH)
}

// buildProfile returns the profile for goarch.
func buildProfile(goarch string) (*Profile, error) {
	p, ok := platforms[goarch]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, goarch)
	}
	prof := &Profile{DefaultAction: actAllow, Architectures: []string{ociArch[goarch]}}
	// Unconditional rules with the same errno share an entry, in the order
	// of their first appearance.
	blanket := map[syscall.Errno]int{}
	for _, r := range rules() {
		if _, ok := p.info.SyscallNames[r.Syscall]; !ok {
			if notEverywhere[r.Syscall] && len(r.tests) == 0 {
				continue
			}
			return nil, fmt.Errorf("build seccomp profile: no system call %q on %s", r.Syscall, p.info.Name)
		}
		if len(r.tests) == 0 {
			i, ok := blanket[r.Errno]
			if !ok {
				i = len(prof.Syscalls)
				blanket[r.Errno] = i
				prof.Syscalls = append(prof.Syscalls, errnoEntry(nil, r.Errno))
			}
			prof.Syscalls[i].Names = append(prof.Syscalls[i].Names, r.Syscall)
			continue
		}
		entries, err := conditionalEntries(r)
		if err != nil {
			return nil, err
		}
		prof.Syscalls = append(prof.Syscalls, entries...)
	}
	return prof, nil
}

func errnoEntry(names []string, errno syscall.Errno) ProfileSyscall {
	ret := uint(errno)
	return ProfileSyscall{Names: names, Action: actErrno, ErrnoRet: &ret}
}

// conditionalEntries renders r, whose call is refused if any of its tests
// holds, as one entry per test: within an entry the conditions are on one
// argument, and so alternatives.
func conditionalEntries(r rule) ([]ProfileSyscall, error) {
	var out []ProfileSyscall
	for i, t := range r.tests {
		if t.arg > 5 || len(t.vals) == 0 {
			return nil, fmt.Errorf("build seccomp profile: bad test on %s", r.Syscall)
		}
		mask := t.mask
		if mask == 0 {
			mask = 0xffffffff // the low 32 bits, as Program compares them
		}
		masked := func(m, v uint32) ProfileArg {
			return ProfileArg{Index: uint(t.arg), Value: uint64(m), ValueTwo: uint64(v), Op: opMasked}
		}
		var args []ProfileArg
		switch t.op {
		case opIn, opNotIn:
			for _, v := range t.vals {
				if v&^mask != 0 {
					// Program would never match it; neither may the profile.
					return nil, fmt.Errorf("build seccomp profile: %s: value %#x outside mask %#x", r.Syscall, v, mask)
				}
				args = append(args, masked(mask, v))
			}
		case opAnyBit:
			// "Any of these bits" is one condition per bit: the bit masked
			// equals itself.
			for set := t.vals[0] & mask; set != 0; set &= set - 1 {
				bit := uint32(1) << bits.TrailingZeros32(set)
				args = append(args, masked(bit, bit))
			}
		default:
			return nil, fmt.Errorf("build seccomp profile: unknown test on %s", r.Syscall)
		}
		if t.op != opNotIn {
			e := errnoEntry([]string{r.Syscall}, r.Errno)
			e.Args = args
			out = append(out, e)
			continue
		}
		// Allowed values first, then the call refused: the allowing entry
		// would skip any test after it, so it must come last; the tests
		// before it have refused already what they refuse (the first
		// matching entry decides).
		if i != len(r.tests)-1 {
			return nil, fmt.Errorf("build seccomp profile: %s: a not-in test must be the rule's last", r.Syscall)
		}
		out = append(out,
			ProfileSyscall{Names: []string{r.Syscall}, Action: actAllow, Args: args},
			errnoEntry([]string{r.Syscall}, r.Errno))
	}
	return out, nil
}
