package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Command is a program run once in a sandbox of its own, such as a package
// install into a namespace's environment. It gets the production policy
// (bubblewrap and the seccomp filter; a plain subprocess in development),
// sees only /usr, the etc files of etcFiles and the directories it names,
// and writes only to its Writable ones.
type Command struct {
	Args     []string // the program (an absolute path) and its arguments
	Writable []string // host directories shown read-write at their own path
	ReadOnly []string // host directories shown read-only at their own path
	Dir      string   // working directory; "" means /tmp
	Env      []string // the whole environment, KEY=VALUE
	Network  bool     // share the host's network (for a package index)
	Timeout  time.Duration
}

// CommandResult is how a Command ended.
type CommandResult struct {
	ExitCode int    // -1 when it was killed
	Output   string // stdout and stderr, the last 64 KiB
	TimedOut bool
}

const commandOutput = 64 << 10

// Run runs c to its end. Errors are for commands that could not start; a
// command that fails is a CommandResult with a non-zero ExitCode.
func (m *Manager) Run(ctx context.Context, c Command) (*CommandResult, error) {
	if len(c.Args) == 0 || !strings.HasPrefix(c.Args[0], "/") {
		return nil, errors.New("sandbox command: the program must be an absolute path")
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	dir := c.Dir
	if dir == "" {
		dir = "/tmp"
	}
	var cmd *exec.Cmd
	var extra []*os.File
	if m.opts.Level == Development {
		cmd = exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
		cmd.Dir = dir
		if dir == "/tmp" {
			cmd.Dir = os.TempDir()
		}
		cmd.Env = c.Env
		cmd.SysProcAttr = sandboxAttr("current")
	} else {
		for _, d := range append(append([]string{}, c.Writable...), c.ReadOnly...) {
			if m.HostUser() == "nobody" && !Reachable(d) {
				return nil, errUnreachable(d)
			}
		}
		args := []string{"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
			"--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
			"--uid", strconv.Itoa(sandboxUID), "--gid", strconv.Itoa(sandboxUID),
			"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
			"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"}
		if !c.Network {
			args = append(args, "--unshare-net")
		} else {
			args = append(args, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf", "--ro-bind-try", "/etc/hosts", "/etc/hosts")
		}
		for _, f := range etcFiles {
			args = append(args, "--ro-bind-try", f, f)
		}
		args = append(args, "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev",
			"--size", strconv.FormatInt(m.limits.TmpSize*4, 10), "--tmpfs", "/tmp")
		for _, d := range c.ReadOnly {
			args = append(args, "--ro-bind", d, d)
		}
		for _, d := range c.Writable {
			args = append(args, "--bind", d, d)
		}
		args = append(args, "--chdir", dir, "--clearenv")
		for _, kv := range c.Env {
			k, v, _ := strings.Cut(kv, "=")
			args = append(args, "--setenv", k, v)
		}
		seccompFile, err := pipeWith(m.opts.Seccomp)
		if err != nil {
			return nil, fmt.Errorf("seccomp pipe: %w", err)
		}
		extra = append(extra, seccompFile)
		args = append(args, "--seccomp", "3", "--")
		cmd = exec.CommandContext(ctx, BwrapPath, append(args, c.Args...)...)
		cmd.Env = minimalEnv
		cmd.Dir = "/"
		cmd.SysProcAttr = sandboxAttr(m.HostUser())
		cmd.ExtraFiles = extra
	}
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Start()
	for _, f := range extra {
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("start sandbox command: %w", err)
	}
	// A non-zero exit is a result, not an error: the exit code says it.
	if err := cmd.Wait(); err != nil && cmd.ProcessState == nil {
		return nil, fmt.Errorf("wait for sandbox command: %w", err)
	}
	res := &CommandResult{Output: out.String(), ExitCode: cmd.ProcessState.ExitCode(), TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded)}
	return res, nil
}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscallKillGroup(cmd.Process.Pid)
}

// tailBuffer keeps the last commandOutput bytes written to it.
type tailBuffer struct{ b bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b.Write(p)
	if t.b.Len() > 2*commandOutput {
		keep := append([]byte{}, t.b.Bytes()[t.b.Len()-commandOutput:]...)
		t.b.Reset()
		t.b.Write(keep)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	s := t.b.String()
	if len(s) > commandOutput {
		s = s[len(s)-commandOutput:]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
