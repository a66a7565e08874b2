package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codecell/codecell/internal/egress"
	"github.com/codecell/codecell/internal/proc"
	"github.com/codecell/codecell/internal/runner"
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
	// Egress are the "host:port" pairs the command may reach, through an
	// HTTP proxy (package egress) and nothing else: the command has no
	// network of its own. With any, the placeholder ProxyArg in Args
	// becomes the proxy's URL, which HTTP_PROXY and HTTPS_PROXY also name.
	Egress  []string
	Timeout time.Duration
}

// ProxyArg is what Command.Args say where the proxy's URL goes, e.g.
// "--proxy", ProxyArg.
const ProxyArg = "{codecell-proxy}"

// egressMount is where a command finds the proxy's socket.
const egressMount = "/run/codecell/egress.sock"

// egressForwarder runs in the command's sandbox: it serves the runner's
// relay (codecell/_relay.py) on the sandbox's own loopback (the only
// interface it has) and runs the command with the proxy's URL.
var egressForwarder = runner.RelaySource + `
import os, subprocess, sys
proxy = "http://127.0.0.1:%d" % serve(sys.argv[1])
args = sys.argv[3:]
env = dict(os.environ, HTTP_PROXY=proxy, HTTPS_PROXY=proxy, http_proxy=proxy, https_proxy=proxy, NO_PROXY="", no_proxy="")
sys.exit(subprocess.call([a.replace("` + ProxyArg + `", proxy) for a in args], env=env))
`

// CommandResult is how a Command ended.
type CommandResult struct {
	ExitCode int    // -1 when it was killed
	Output   string // stdout and stderr, the last 64 KiB
	TimedOut bool
	// Refused says why the egress proxy refused what the command asked of
	// it (egress.Proxy.Refusals), which the command's own output may not.
	Refused []string
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
	var egressSock string
	var proxy *egress.Proxy
	if len(c.Egress) > 0 {
		pol, err := egress.ForHosts(c.Egress)
		if err != nil {
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
		sock, p, stop, err := m.startEgress(ctx, pol)
		proxy = p
		if err != nil {
			return nil, err
		}
		defer stop()
		egressSock = sock
		inside := egressMount
		if m.opts.Level == Development {
			inside = sock
		}
		c.Args = append([]string{m.opts.Python, "-I", "-S", "-c", egressForwarder, inside, "--"}, c.Args...)
	}
	dir := c.Dir
	if dir == "" {
		dir = "/tmp"
	}
	var cmd *exec.Cmd
	var extra []*os.File
	if m.opts.Level == Development {
		cmd = proc.Command(ctx, c.Args[0], c.Args[1:]...)
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
		// No network of its own, ever: what it may reach, it reaches
		// through the egress proxy, whose socket is all it is given.
		args = append(args, "--unshare-net")
		if egressSock != "" {
			args = append(args, "--bind", egressSock, egressMount)
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
		cmd = proc.Command(ctx, BwrapPath, append(args, c.Args...)...)
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
	if proxy != nil {
		res.Refused = proxy.Refusals()
	}
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

// startEgress serves an egress proxy for pol on a Unix socket in a
// directory of its own, which the sandbox's user can reach, until stop.
func (m *Manager) startEgress(ctx context.Context, pol *egress.Policy) (sock string, p *egress.Proxy, stop func(), err error) {
	dir, err := os.MkdirTemp("", "codecell-egress-")
	if err != nil {
		return "", nil, nil, fmt.Errorf("egress proxy: %w", err)
	}
	// Searchable by the sandbox's user (nobody when run as root), not
	// listable by anyone but codecell.
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return "", nil, nil, fmt.Errorf("egress proxy: %w", err)
	}
	// The directory's name shows in /tmp, which anyone on the host can
	// list; the socket's, random, does not, and with it the proxy (and the
	// headers it adds) is reachable only by whoever was given the path.
	var name [16]byte
	rand.Read(name[:])
	sock = filepath.Join(dir, hex.EncodeToString(name[:])+".sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, nil, fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return "", nil, nil, fmt.Errorf("egress proxy: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	p = &egress.Proxy{Policy: pol, Log: m.log}
	go func() {
		defer close(done)
		p.Serve(ctx, ln)
	}()
	return sock, p, func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}, nil
}
