package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/codecell/codecell/internal/proc"
)

// Level is an isolation level.
type Level string

// The isolation levels.
const (
	Development Level = "development"
	Production  Level = "production"
	Hardened    Level = "hardened"
)

// Levels lists every level, weakest first.
var Levels = []Level{Development, Production, Hardened}

// ParseLevel checks a level name.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown isolation level %q (want development, production or hardened)", s)
}

// Tool paths. Variables so tests and packagers can point elsewhere.
var (
	BwrapPath = "/usr/bin/bwrap"
	RunscPath = runscPath()
)

// runscPath is where gVisor's own install (and `make runsc`) puts runsc,
// /usr/local/bin, if there is one there, else Debian's package's. Debian
// 12's runsc is from 2022 and runs the code on the ptrace platform; a
// current release runs it on systrap (on this project's machines, a
// quarter off the hardened p99 and a little less CPU; BENCHMARKS.md).
func runscPath() string {
	const local = "/usr/local/bin/runsc"
	if _, err := os.Stat(local); err == nil {
		return local
	}
	return "/usr/bin/runsc"
}

// errNoRunsc says that runsc is missing, and how to install it.
func errNoRunsc() error {
	return fmt.Errorf("%w: hardened needs gVisor's runsc at /usr/local/bin/runsc or /usr/bin/runsc, not found at %s"+
		" (install a current release, as `make runsc` does, or Debian's: apt-get install runsc)", ErrUnavailable, RunscPath)
}

// ErrUnavailable reports a level that cannot run on this host.
var ErrUnavailable = errors.New("isolation level unavailable")

// Check reports whether level can run on this host with the given Python, by
// actually starting the smallest sandbox of that level. The error says why not
// and what to install.
func Check(ctx context.Context, level Level, python string) error {
	if err := checkPython(python); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	switch level {
	case Development:
		return probe(ctx, proc.Command(ctx, python, "-I", "-S", "-c", "pass"), "python")
	case Production:
		if _, err := os.Stat(BwrapPath); err != nil {
			return fmt.Errorf("%w: production needs bubblewrap at %s (install it: apt-get install bubblewrap)", ErrUnavailable, BwrapPath)
		}
		args := []string{"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
			"--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
			"--proc", "/proc", "--dev", "/dev", "--", python, "-I", "-S", "-c", "pass"}
		cmd := proc.Command(ctx, BwrapPath, args...)
		cmd.SysProcAttr = sandboxAttr("nobody")
		cmd.Env = minimalEnv
		if err := probe(ctx, cmd, "bubblewrap"); err != nil {
			return fmt.Errorf("%w (user namespaces must be enabled: sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0)", err)
		}
		return nil
	case Hardened:
		if _, err := os.Stat(RunscPath); err != nil {
			return errNoRunsc()
		}
		return probeGVisor(ctx, python)
	}
	return fmt.Errorf("unknown isolation level %q", level)
}

func checkPython(python string) error {
	info, err := os.Stat(python)
	if err != nil {
		return fmt.Errorf("%w: python %s: %v (install it: apt-get install python3)", ErrUnavailable, python, err)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: python %s is not an executable file", ErrUnavailable, python)
	}
	return nil
}

func probe(ctx context.Context, cmd *exec.Cmd, what string) error {
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %s did not start in time", ErrUnavailable, what)
		}
		return fmt.Errorf("%w: %s failed to start a sandbox: %v: %s", ErrUnavailable, what, err, msg)
	}
	return nil
}
