package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestOCIProfileGolden pins the rendered profile, so that a change to it is
// seen in review as JSON; go test -run OCIProfileGolden -update rewrites it.
func TestOCIProfileGolden(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			prof, err := buildProfile(goarch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(prof, "", "\t")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "oci_profile_"+goarch+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("profile differs from %s (run with -update if the change is intended):\n%s", path, got)
			}
		})
	}
}

func TestOCIProfile(t *testing.T) {
	if runtime.GOOS != "linux" || platforms[runtime.GOARCH].info == nil {
		if _, err := OCIProfile(); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("OCIProfile() on %s/%s: err = %v, want ErrUnsupported", runtime.GOOS, runtime.GOARCH, err)
		}
		t.Skipf("no profile for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	prof, err := OCIProfile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildProfile("riscv64"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("buildProfile(riscv64): err = %v, want ErrUnsupported", err)
	}

	// entries returns the entries naming name, in order.
	entries := func(name string) []ProfileSyscall {
		var out []ProfileSyscall
		for _, s := range prof.Syscalls {
			if slices.Contains(s.Names, name) {
				out = append(out, s)
			}
		}
		return out
	}
	arg := func(i uint, mask, val uint64) ProfileArg {
		return ProfileArg{Index: i, Value: mask, ValueTwo: val, Op: "SCMP_CMP_MASKED_EQ"}
	}
	eperm, enosys := uint(1), uint(38)
	tests := []struct {
		name string
		want []ProfileSyscall
	}{
		{"clone", []ProfileSyscall{{Names: []string{"clone"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm, Args: []ProfileArg{
			arg(0, cloneNewNS, cloneNewNS), arg(0, cloneNewCgroup, cloneNewCgroup), arg(0, cloneNewUTS, cloneNewUTS),
			arg(0, cloneNewIPC, cloneNewIPC), arg(0, cloneNewUser, cloneNewUser), arg(0, cloneNewPID, cloneNewPID),
			arg(0, cloneNewNet, cloneNewNet),
		}}}},
		{"socket", []ProfileSyscall{
			{Names: []string{"socket"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm, Args: []ProfileArg{
				arg(1, sockTypeMask, sockRaw), arg(1, sockTypeMask, sockPacket)}},
			{Names: []string{"socket"}, Action: "SCMP_ACT_ALLOW", Args: []ProfileArg{
				arg(0, 0xffffffff, afUnix), arg(0, 0xffffffff, afInet), arg(0, 0xffffffff, afInet6)}},
			{Names: []string{"socket"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm},
		}},
		{"socketpair", []ProfileSyscall{
			{Names: []string{"socketpair"}, Action: "SCMP_ACT_ALLOW", Args: []ProfileArg{arg(0, 0xffffffff, afUnix)}},
			{Names: []string{"socketpair"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm},
		}},
		{"ioctl", []ProfileSyscall{{Names: []string{"ioctl"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm, Args: []ProfileArg{
			arg(1, 0xffffffff, tiocsti), arg(1, 0xffffffff, tioclinux)}}}},
		{"personality", []ProfileSyscall{
			{Names: []string{"personality"}, Action: "SCMP_ACT_ALLOW", Args: []ProfileArg{
				arg(0, 0xffffffff, perLinux), arg(0, 0xffffffff, personalityGet)}},
			{Names: []string{"personality"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm},
		}},
		{"clone3", []ProfileSyscall{{Names: []string{"clone3"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &enosys}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g, w := toJSON(t, entries(tt.name)), toJSON(t, tt.want); g != w {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}

	t.Run("header", func(t *testing.T) {
		want := map[string]string{"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"}[runtime.GOARCH]
		if prof.DefaultAction != "SCMP_ACT_ALLOW" || !slices.Equal(prof.Architectures, []string{want}) {
			t.Errorf("defaultAction %q, architectures %v", prof.DefaultAction, prof.Architectures)
		}
	})
	t.Run("every rule, once", func(t *testing.T) {
		named := map[string]int{}
		for _, s := range prof.Syscalls {
			for _, n := range s.Names {
				named[n]++
			}
		}
		for _, r := range rules() {
			want := max(len(r.tests), 1) // an entry per test
			for _, tt := range r.tests {
				if tt.op == opNotIn {
					want++ // allowed values, then refused
				}
			}
			if _, ok := platforms[runtime.GOARCH].info.SyscallNames[r.Syscall]; !ok {
				want = 0
			}
			if named[r.Syscall] != want {
				t.Errorf("%s named in %d entries, want %d", r.Syscall, named[r.Syscall], want)
			}
		}
		if len(named) != len(Rules())-len(missingHere()) {
			t.Errorf("profile names %d calls, rules %d", len(named), len(Rules()))
		}
	})
	t.Run("one argument per entry, masked", func(t *testing.T) {
		// So that the OR-on-one-argument, AND-across-arguments reading of
		// runc and runsc cannot turn alternatives into a conjunction.
		for _, s := range prof.Syscalls {
			for _, a := range s.Args {
				if a.Index != s.Args[0].Index || a.Op != "SCMP_CMP_MASKED_EQ" || a.Value>>32 != 0 {
					t.Errorf("entry %+v: arg %+v", s.Names, a)
				}
			}
		}
	})
	t.Run("caller's copy", func(t *testing.T) {
		prof.Syscalls[0].Names[0] = "changed"
		again, err := OCIProfile()
		if err != nil {
			t.Fatal(err)
		}
		if again.Syscalls[0].Names[0] == "changed" {
			t.Error("OCIProfile() returns shared storage")
		}
	})
}

func missingHere() []string {
	var out []string
	for _, r := range Rules() {
		if _, ok := platforms[runtime.GOARCH].info.SyscallNames[r.Syscall]; !ok {
			out = append(out, r.Syscall)
		}
	}
	return out
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// evalProfile decides c under prof the way runsc does (runsc/specutils/
// seccomp): the first entry that names the call and whose conditions hold
// decides; conditions on one argument are alternatives, on different
// arguments all must hold. It returns the action in the encoding of the
// filter's returns.
func evalProfile(t *testing.T, prof *Profile, name string, args [6]uint64) uint32 {
	t.Helper()
	for _, s := range prof.Syscalls {
		if !slices.Contains(s.Names, name) {
			continue
		}
		perArg := map[uint]int{}
		for _, a := range s.Args {
			perArg[a.Index]++
		}
		alternatives := false
		for _, n := range perArg {
			alternatives = alternatives || n > 1
		}
		match := len(s.Args) == 0 || !alternatives
		for _, a := range s.Args {
			if a.Op != "SCMP_CMP_MASKED_EQ" {
				t.Fatalf("%s: op %s", name, a.Op)
			}
			holds := args[a.Index]&a.Value == a.ValueTwo
			if alternatives {
				match = match || holds
			} else {
				match = match && holds
			}
		}
		if !match {
			continue
		}
		switch s.Action {
		case "SCMP_ACT_ALLOW":
			return retAllow
		case "SCMP_ACT_ERRNO":
			return retErrno | uint32(*s.ErrnoRet)
		default:
			t.Fatalf("%s: action %s", name, s.Action)
		}
	}
	return retAllow // the default action, checked by TestOCIProfile
}

// TestOCIProfileMatchesProgram checks that the profile and the filter decide
// alike on every native call, with arguments built from the values the rules
// test, high bits and random bits.
func TestOCIProfileMatchesProgram(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			p := platforms[goarch]
			prog, err := build(goarch)
			if err != nil {
				t.Fatal(err)
			}
			prof, err := buildProfile(goarch)
			if err != nil {
				t.Fatal(err)
			}
			if prof.DefaultAction != "SCMP_ACT_ALLOW" {
				t.Fatalf("defaultAction %s", prof.DefaultAction)
			}
			// Interesting values: every value, mask and bit a rule tests,
			// with and without extra low bits and high bits.
			seeds := []uint64{0, 1, 2, 0xffffffff, 1 << 32, 1<<64 - 1, 17 /* SIGCHLD */, 0x3d0f00 /* pthread */}
			for _, r := range rules() {
				for _, tst := range r.tests {
					seeds = append(seeds, uint64(tst.mask))
					for _, v := range tst.vals {
						for b := v; b != 0; b &= b - 1 {
							seeds = append(seeds, uint64(b&-b))
						}
						seeds = append(seeds, uint64(v), uint64(v|0x800), uint64(v|0x80000))
					}
				}
			}
			var values []uint64
			for _, s := range seeds {
				values = append(values, s, s|1<<32, s|0xdead<<40)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 40 {
				values = append(values, rng.Uint64(), rng.Uint64()&0xffffffff)
			}

			checked := 0
			for nr, name := range p.info.SyscallNumbers {
				check := func(args [6]uint64) {
					t.Helper()
					want, err := run(prog, call{nr: uint32(nr), arch: uint32(p.info.ID), args: args})
					if err != nil {
						t.Fatal(err)
					}
					if got := evalProfile(t, prof, name, args); got != want {
						t.Errorf("%s%v: profile %#x, filter %#x", name, args, got, want)
					}
					checked++
				}
				check([6]uint64{})
				if !slices.ContainsFunc(rules(), func(r rule) bool { return r.Syscall == name && len(r.tests) > 0 }) {
					continue
				}
				for _, a := range values {
					for _, b := range values {
						check([6]uint64{a, b})
					}
				}
			}
			t.Logf("%d calls decided alike", checked)
		})
	}
}
