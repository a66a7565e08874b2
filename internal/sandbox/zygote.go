package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codecell/codecell/internal/cgroup"
	"github.com/codecell/codecell/internal/channel"
	"github.com/codecell/codecell/internal/proc"
	"github.com/codecell/codecell/internal/runner"
)

// zygote is a warm fork server: one sandbox (or, in development, one plain
// process) that forks a fresh child for each execution. It runs one
// execution at a time; it is owned by the pool while idle and by one Exec
// while busy.
type zygote struct {
	level Level
	cmd   *exec.Cmd
	ctl   *net.UnixConn
	msgs  chan ctlMsg   // from the zygote; closed when the control socket ends
	done  chan struct{} // closed when the process has been waited for
	once  sync.Once
	// cg holds every process of the sandbox (bubblewrap, the fork server,
	// each execution's); nil where the host has no cgroup for it.
	cg *cgroup.Group
	// egress is the sandbox's proxy; nil without a network.
	egress *sandboxEgress
	// chdir is the exec frame's Chdir: WorkspaceMount once a namespace
	// claimed the sandbox after it started (unbound.go), else "". Set
	// before the sandbox serves its first execution.
	chdir string
	// boundTo is the workspace a claim mounted in it; "" otherwise.
	boundTo string
}

// ctlMsg is a message on the control socket.
type ctlMsg struct {
	Type   string `json:"type"`
	Pid    int    `json:"pid"`
	Clean  bool   `json:"clean"`
	Status *int   `json:"status"`
	Signal *int   `json:"signal"`
	// Preload is the "ready" frame's report of what was preloaded.
	Preload *PreloadReport `json:"preload"`

	// channel is the descriptor a "child" message carries: the channel to a
	// process forked ahead of need, waiting for its exec frame.
	channel *os.File
}

// startTimeout bounds how long a sandbox may take to report ready.
const startTimeout = 20 * time.Second

// ForkServerMemory and forkServerPids are what a sandbox's cgroup allows on
// top of sandbox.memory and sandbox.pids for what is there before the code:
// bubblewrap and the fork server (an idle one holds about 15 MiB of its own;
// the rest is room for the page cache of what it imported).
const (
	ForkServerMemory = 32 << 20
	forkServerPids   = 8
)

// startZygote starts a fork server for workspace and waits until it is ready.
func (m *Manager) startZygote(ctx context.Context, tg target) (z *zygote, err error) {
	var eg *sandboxEgress
	workspace := tg.workspace
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	hostEnd := os.NewFile(uintptr(fds[0]), "ctl")
	childEnd := os.NewFile(uintptr(fds[1]), "ctl-child")
	conn, err := net.FileConn(hostEnd)
	hostEnd.Close()
	if err != nil {
		childEnd.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}

	var cmd *exec.Cmd
	var extra []*os.File
	switch m.opts.Level {
	case Development:
		cmd = proc.Command(context.Background(), tg.python, "-I", "-B", filepath.Join(m.runtime, "codecell_runner.py"),
			"--zygote", "3")
		cmd.Args = append(cmd.Args, m.preloadArg(tg)...)
		if m.opts.GenDir != "" {
			cmd.Args = append(cmd.Args, "--gen", m.opts.GenDir)
		}
		if tg.skills != "" {
			cmd.Args = append(cmd.Args, "--skills", tg.skills)
		}
		cmd.Dir = workspace
		cmd.Env = append([]string{}, minimalEnv...)
		cmd.Env = append(cmd.Env, "HOME="+workspace, "LANG=C.UTF-8", "PYTHONUNBUFFERED=1", "MPLBACKEND=Agg", "MALLOC_ARENA_MAX=2")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		extra = []*os.File{childEnd}
	case Production:
		if tg.network != nil {
			if eg, err = m.egressFor(tg.network); err != nil {
				childEnd.Close()
				conn.Close()
				return nil, err
			}
			// Until the zygote owns it: every failure below returns.
			defer func() {
				if z == nil {
					eg.stop()
				}
			}()
		}
		files, script := m.runnerFor(tg.python)
		rtFiles, rtSpec, err := memFiles(files, 7)
		if err != nil {
			childEnd.Close()
			conn.Close()
			return nil, fmt.Errorf("runner files: %w", err)
		}
		trustFD := 0
		if tg.network != nil && len(tg.network.Trust) > 0 {
			trust, _, err := memFiles([]runner.File{{Data: tg.network.Trust}}, 0)
			if err != nil {
				closeAll(rtFiles)
				childEnd.Close()
				conn.Close()
				return nil, fmt.Errorf("trust store: %w", err)
			}
			trustFD = 7 + len(rtFiles)
			rtFiles = append(rtFiles, trust...)
		}
		args := bwrapArgs(bwrapSpec{
			Python:       tg.python,
			ExtraRO:      m.readOnlyDirs(tg),
			CtlFD:        3,
			SeccompFD:    4,
			BootIDFD:     6,
			RuntimeFiles: rtSpec,
			Script:       script,
			Runtime:      m.runtime,
			Workspace:    workspace,
			Gen:          m.opts.GenDir,
			Skills:       tg.skills,
			Unbound:      tg.unbound(),
			TmpSize:      m.limits.TmpSize,
			Preload:      m.preloadArg(tg),
			Network:      tg.network,
			EgressSock:   eg.socket(),
			TrustFD:      trustFD,
		})
		seccompFile, err := pipeWith(m.opts.Seccomp)
		if err != nil {
			closeAll(rtFiles)
			childEnd.Close()
			conn.Close()
			return nil, fmt.Errorf("seccomp pipe: %w", err)
		}
		// The arguments go through a pipe (--args), so the sandbox's
		// /proc/1/cmdline does not show the host paths of its mounts.
		sep := slices.Index(args, "--")
		argsFile, err := pipeWith([]byte(strings.Join(args[:sep], "\x00") + "\x00"))
		if err != nil {
			closeAll(rtFiles)
			childEnd.Close()
			seccompFile.Close()
			conn.Close()
			return nil, fmt.Errorf("bubblewrap arguments pipe: %w", err)
		}
		bootIDFile, err := pipeWith(newBootID())
		if err != nil {
			closeAll(rtFiles)
			childEnd.Close()
			seccompFile.Close()
			argsFile.Close()
			conn.Close()
			return nil, fmt.Errorf("boot_id pipe: %w", err)
		}
		extra = append([]*os.File{childEnd, seccompFile, argsFile, bootIDFile}, rtFiles...)
		cmd = proc.Command(context.Background(), BwrapPath, append([]string{"--args", "5"}, args[sep:]...)...)
		cmd.Env = minimalEnv
		cmd.Dir = "/"
		cmd.SysProcAttr = sandboxAttr(m.HostUser())
	default:
		childEnd.Close()
		conn.Close()
		return nil, fmt.Errorf("level %s has no fork server", m.opts.Level)
	}
	cmd.ExtraFiles = extra
	cmd.Stdin = nil
	cmd.Stdout = nil
	cmd.Stderr = m.stderrSink()
	cmd.WaitDelay = time.Second
	var cg *cgroup.Group
	if m.opts.Level == Production && m.cgroups != nil {
		cg, err = m.cgroups.New(cgroup.Limits{Memory: m.limits.Memory + ForkServerMemory, Pids: m.limits.Pids + forkServerPids})
		if err != nil {
			for _, f := range extra {
				f.Close()
			}
			conn.Close()
			return nil, fmt.Errorf("start %s sandbox: %w", m.opts.Level, err)
		}
	}
	ran := false
	if tg.unbound() && m.launch != nil {
		ran, err = m.launch.start(cmd, cg) // see launcher
	}
	switch {
	case ran:
	case cg != nil:
		err = cg.Start(cmd)
	default:
		err = cmd.Start()
	}
	// Our copies of the child's descriptors must go now: the control socket
	// only reports EOF (a sandbox that died starting) once they are closed.
	for _, f := range extra {
		f.Close()
	}
	if err != nil {
		conn.Close()
		if cg != nil {
			cg.Close()
		}
		return nil, fmt.Errorf("start %s sandbox: %w", m.opts.Level, err)
	}
	z = &zygote{
		egress: eg,
		cg:     cg,
		level:  m.opts.Level,
		cmd:    cmd,
		ctl:    conn.(*net.UnixConn),
		msgs:   make(chan ctlMsg, 4),
		done:   make(chan struct{}),
	}
	go func() {
		cmd.Wait()
		close(z.done)
	}()
	go z.readControl()

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case msg, ok := <-z.msgs:
		if ok && msg.Type == channel.TypeReady {
			err := m.preloaded(tg.python, msg.Preload, cg, cgroup.Limits{Memory: ForkServerMemory, Pids: forkServerPids})
			if err != nil {
				z.kill()
				return nil, fmt.Errorf("start %s sandbox: %w", m.opts.Level, err)
			}
			return z, nil
		}
		z.kill()
		return nil, fmt.Errorf("start %s sandbox: it exited before it was ready%s", m.opts.Level, m.lastStderr())
	case <-timer.C:
		z.kill()
		return nil, fmt.Errorf("start %s sandbox: not ready after %s", m.opts.Level, startTimeout)
	case <-ctx.Done():
		z.kill()
		return nil, ctx.Err()
	}
}

// pipeWith returns the read end of a pipe holding data, for bubblewrap's
// --seccomp and --args. Both are a few KiB, well under a pipe's buffer, so
// the write cannot block.
func pipeWith(data []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if _, err := w.Write(data); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// memFiles puts each file in a memory file of its own, read from its start,
// for bubblewrap's --file; the first is the child's descriptor first, the
// next first+1, and so on.
func memFiles(files []runner.File, first int) ([]*os.File, []bwrapFile, error) {
	var out []*os.File
	var spec []bwrapFile
	for i, f := range files {
		fd, err := unix.MemfdCreate("codecell-runner", unix.MFD_CLOEXEC)
		if err != nil {
			closeAll(out)
			return nil, nil, err
		}
		mf := os.NewFile(uintptr(fd), "runner-file")
		out = append(out, mf)
		if _, err := mf.Write(f.Data); err != nil {
			closeAll(out)
			return nil, nil, err
		}
		if _, err := mf.Seek(0, 0); err != nil {
			closeAll(out)
			return nil, nil, err
		}
		spec = append(spec, bwrapFile{Path: f.Path, FD: first + i})
	}
	return out, spec, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// HostUser says which host user the sandbox's user maps to: "nobody" when
// codecell runs as root (bubblewrap is then started as nobody, and runsc runs
// the code as uid 65534), else "current", the user codecell runs as. The
// sandbox's user never maps to host root: the kernel does not hold host root
// to RLIMIT_NPROC, and root-only files under /proc would be readable.
func (m *Manager) HostUser() string {
	if os.Geteuid() != 0 || m.opts.Level == Development {
		return "current"
	}
	return "nobody"
}

// errUnreachable explains why a root-run production sandbox cannot mount a
// directory: bubblewrap, started as nobody, resolves bind sources by path.
func errUnreachable(dir string) error {
	return fmt.Errorf("%w: as root, production isolation runs bubblewrap as nobody (uid 65534), which cannot reach %s: "+
		"every directory above it must be searchable by others (mode o+x); use a data dir such as /var/lib/codecell "+
		"(the default when codecell runs as root), or run codecell as an ordinary user", ErrUnavailable, dir)
}

// Reachable reports whether every directory above path is searchable by the
// sandbox's host user, nobody (through owner or other bits; groups are not
// considered). Directories that do not exist yet count as searchable:
// codecell creates them so.
func Reachable(path string) bool {
	const uid = sandboxUID
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		info, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) && dir != "/" {
			continue
		}
		if err != nil {
			return false
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return false
		}
		if !(info.Mode().Perm()&0o001 != 0 || (st.Uid == uid && info.Mode().Perm()&0o100 != 0)) {
			return false
		}
		if dir == "/" {
			return true
		}
	}
}

// sandboxAttr starts bubblewrap in its own process group, killed if codecell
// dies, as the host user HostUser names.
func sandboxAttr(hostUser string) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if hostUser == "nobody" {
		attr.Credential = &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID, Groups: []uint32{}}
	}
	return attr
}

func (z *zygote) readControl() {
	defer close(z.msgs)
	buf := make([]byte, 64<<10) // a "ready" frame lists the preload's failures
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := z.ctl.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		var msg ctlMsg
		if json.Unmarshal(buf[:n], &msg) != nil {
			return // a zygote that speaks garbage is treated as dead
		}
		if oobn > 0 {
			f, err := receivedFile(oob[:oobn])
			if err != nil {
				return
			}
			msg.channel = f
		}
		if (msg.Type == channel.TypeChild) != (msg.channel != nil) {
			if msg.channel != nil {
				msg.channel.Close()
			}
			return
		}
		z.msgs <- msg
	}
}

// receivedFile extracts the one descriptor of an SCM_RIGHTS message.
func receivedFile(oob []byte) (*os.File, error) {
	cmsgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, c := range cmsgs {
		got, err := unix.ParseUnixRights(&c)
		if err != nil {
			return nil, err
		}
		fds = append(fds, got...)
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("expected one descriptor, got %d", len(fds))
	}
	unix.CloseOnExec(fds[0])
	unix.SetNonblock(fds[0], true)
	return os.NewFile(uintptr(fds[0]), "chan"), nil
}

// kill ends the whole sandbox: bubblewrap's process group, and with it the
// PID namespace (its init, the fork server, dies with its parent, and every
// process in the namespace with its init). Development has no namespace: it kills every
// process below the zygote first (the execution's process leaves the
// zygote's group with setsid, so the group alone would not reach it), then
// the zygote's group. A process that got out from under the zygote is
// outside this reach, which is one reason development is not isolation.
func (z *zygote) kill() {
	z.once.Do(func() {
		if z.cmd.Process != nil {
			if z.level == Development {
				killDescendants(z.cmd.Process.Pid)
			}
			syscall.Kill(-z.cmd.Process.Pid, syscall.SIGKILL)
		}
		z.ctl.Close()
	})
	select {
	case <-z.done:
	case <-time.After(3 * time.Second):
	}
	if z.cg != nil {
		// Kills whatever of the sandbox is left and removes its cgroup.
		z.cg.Close()
	}
	if z.egress != nil {
		z.egress.stop()
	}
}

func (z *zygote) alive() bool {
	select {
	case <-z.done:
		return false
	default:
		return true
	}
}

// releaseWait bounds how long a zygote may take to report the clean-up of
// an execution whose result is already in; past it the zygote is discarded.
const releaseWait = 10 * time.Second

// run executes one request in the process the zygote forked ahead of need:
// the exec frame goes straight to it over its own channel, the first bytes
// carrying the two output pipes. The result is complete once the result
// frame and the end of both pipes are in; the zygote's clean-up report
// ("exited") then decides, in the background, whether it goes back to the
// pool.
func (z *zygote) run(ctx context.Context, req *Request, lim Limits, res *Result, release func(reusable bool)) {
	chanHost, err := z.connectChild(ctx, req, res)
	if err != nil {
		release(false)
		return
	}
	defer chanHost.Close()
	o := z.exchange(ctx, chanHost, req, lim, res, false)
	switch {
	case o.stopped || o.fault || o.zygoteGone || o.oom:
		release(false)
	case o.exited != nil:
		release(o.exited.Clean && z.alive())
	default:
		go func() {
			msg := z.awaitExited(context.Background())
			release(msg != nil && msg.Clean && z.alive())
		}()
	}
}

// connectChild opens the channel of the zygote's next pre-forked process.
// On failure it has set res.Error.
func (z *zygote) connectChild(ctx context.Context, req *Request, res *Result) (*net.UnixConn, error) {
	chanFile, err := z.awaitChild(ctx)
	if err != nil {
		if ctx.Err() != nil {
			res.Error = stopped(ctx, req.Timeout)
		} else {
			res.Error = failure(ErrSandbox, "the sandbox is gone: %v", err)
		}
		return nil, err
	}
	conn, err := net.FileConn(chanFile)
	chanFile.Close()
	if err != nil {
		res.Error = failure(ErrSandbox, "channel: %v", err)
		return nil, err
	}
	return conn.(*net.UnixConn), nil
}

// inlineFrame bounds the exec frames sent whole with their output pipes:
// well under a Unix socket's buffer, so that the send does not wait.
const inlineFrame = 32 << 10

// outcome is how one exchange with an execution's process ended.
type outcome struct {
	stopped    bool    // the context ended it (timeout, cancellation, quota); the sandbox was killed
	fault      bool    // the code broke the protocol or a host-enforced limit; the sandbox was killed
	zygoteGone bool    // the fork server died; the sandbox was killed
	exited     *ctlMsg // the zygote's report that the process ended, if it came
	result     bool    // the result frame arrived
	oom        bool    // the kernel killed a process of the sandbox for passing its cgroup's memory limit
}

// sessionGrace is how long a session's execution waits, after its result,
// for the output pipes to end. In a session the process lives on, so a
// pipe still open then is held by something the code left running in the
// background; its later output is dropped.
const sessionGrace = 200 * time.Millisecond

// exchange sends req on the channel to an execution's process and collects
// its output and result into res. In a session the process outlives the
// exchange, which ends with the result frame (and the pipes, bounded by
// sessionGrace); otherwise it ends when the process and its pipes have.
func (z *zygote) exchange(ctx context.Context, chanHost *net.UnixConn, req *Request, lim Limits, res *Result, session bool) outcome {
	meter := z.egress.begin()
	defer z.egress.end(meter, res)
	x := newExchange(lim, req)
	oomBefore := z.cg.OOMKills()
	var pipes [4]*os.File // stdout r, w; stderr r, w
	var err error
	for i := 0; i < 4; i += 2 {
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			for _, f := range pipes {
				if f != nil {
					f.Close()
				}
			}
			res.Error = failure(ErrSandbox, "output pipe: %v", err)
			z.kill()
			return outcome{fault: true}
		}
	}
	outR, errR := pipes[0], pipes[2]
	defer outR.Close()
	defer errR.Close()
	frame, err := channel.Encode(execFrame{
		Type: channel.TypeExec, Code: req.Code, Context: req.Context, Args: req.Args, Filename: req.Filename,
		CodecellTools: req.CodecellTools,
		Session:       session, Limits: lim.forRunner(z.level, req.FileSize, session),
		Chdir: z.chdir,
	})
	sent := 0
	if err == nil {
		// The whole frame in one message where it is small, so that the
		// process reads its code on the wake-up that brings it the pipes;
		// a larger frame's rest follows from the channel's goroutine, which
		// may wait for the process to read.
		head := frame
		if len(head) > inlineFrame {
			head = frame[:4]
		}
		sent, _, err = chanHost.WriteMsgUnix(head, unix.UnixRights(int(pipes[1].Fd()), int(pipes[3].Fd())), nil)
	}
	pipes[1].Close()
	pipes[3].Close()
	if err != nil {
		res.Error = failure(ErrSandbox, "send code to sandbox: %v", err)
		z.kill()
		return outcome{fault: true}
	}

	// The code's calls to the host live as long as this execution.
	callCtx, cancelCalls := context.WithCancel(ctx)
	defer func() {
		cancelCalls()
		x.wait()
	}()
	x.serveCalls(callCtx, req, chanHost)

	// Three readers: the channel and the two pipes. Each reports whether it
	// stopped on a fault.
	readers := make(chan bool, 3)
	chanDone := make(chan bool, 1)
	go func() {
		// Only what is left: a process that had its whole frame may have
		// finished and closed its end by now, and a write of nothing to a
		// closed socket fails too (EPIPE), which read as a process that
		// died before its code.
		if rest := frame[sent:]; len(rest) > 0 {
			if _, err := chanHost.Write(rest); err != nil {
				// The code's process died before it read its code; the
				// exit status says why.
				chanDone <- false
				return
			}
		}
		chanDone <- x.read(chanHost)
	}()
	go func() { readers <- x.readPipe(outR, "stdout") }()
	go func() { readers <- x.readPipe(errR, "stderr") }()
	stopReaders := func() {
		chanHost.Close()
		outR.Close()
		errR.Close()
	}

	var o outcome
	var exit exitInfo
	var grace <-chan time.Time
	msgs := z.msgs // nil once this execution's report is in
	for pending := 3; pending > 0; {
		select {
		case fault := <-chanDone:
			pending--
			if fault {
				o.fault = true
				z.kill()
				stopReaders()
			} else if session && x.hasResult() {
				grace = time.After(sessionGrace)
			}
		case fault := <-readers:
			pending--
			if fault {
				o.fault = true
				z.kill()
				stopReaders()
			}
		case <-grace:
			outR.Close()
			errR.Close()
		case msg, ok := <-msgs:
			if !ok {
				// The zygote died (killed by the code, or by the kernel):
				// end whatever is left of the sandbox.
				o.zygoteGone = true
				msgs = nil // closed: do not spin on it
				z.kill()
				stopReaders()
				continue
			}
			if msg.Type == channel.TypeExited {
				o.exited = &msg
				// Every process of the execution is dead now; whatever
				// still holds a pipe open is gone, so the readers end.
				// The next message is the next child's: leave it queued.
				msgs = nil
			}
		case <-ctx.Done():
			res.Error = stopped(ctx, req.Timeout)
			z.kill()
			stopReaders()
			for ; pending > 0; pending-- {
				select {
				case <-readers:
				case <-chanDone:
				}
			}
			x.finish(res, exit, lim)
			o.stopped = true
			return o
		}
	}
	if o.exited != nil {
		exit = o.exited.exitInfo()
	} else if !o.zygoteGone && !x.hasResult() && x.fault == nil {
		// No result: the exit status says why, so wait for it.
		o.exited = z.awaitExited(ctx)
		if o.exited != nil {
			exit = o.exited.exitInfo()
		}
	}
	x.finish(res, exit, lim)
	o.result = x.hasResult()
	o.fault = o.fault || x.fault != nil
	if z.cg.OOMKills() > oomBefore {
		// Whatever the code saw of it (a child killed, a broken
		// channel, the fork server gone), the cause is the limit.
		o.oom = true
		res.OK = false
		res.Error = memoryLimitError(lim)
	}
	return o
}

// memoryLimitError is the error of an execution during which the kernel
// killed a process of its sandbox for passing the cgroup's memory limit.
func memoryLimitError(lim Limits) *ExecError {
	return failure(ErrMemoryLimit, "the execution's processes together went past the sandbox's memory limit "+
		"of %d MiB (sandbox.memory, which bounds all of a sandbox's processes together) and the kernel killed one of them", lim.Memory>>20)
}

// awaitChild waits for the channel of the zygote's next pre-forked process.
// A report of a process that ended unused while it waited is skipped.
func (z *zygote) awaitChild(ctx context.Context) (*os.File, error) {
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	for {
		select {
		case msg, ok := <-z.msgs:
			if !ok {
				return nil, errors.New("the fork server exited")
			}
			if msg.Type == channel.TypeChild {
				return msg.channel, nil
			}
		case <-timer.C:
			return nil, fmt.Errorf("no process ready after %s", startTimeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// awaitExited waits for the zygote's clean-up report of the current
// execution; nil means the zygote died or took too long.
func (z *zygote) awaitExited(ctx context.Context) *ctlMsg {
	timer := time.NewTimer(releaseWait)
	defer timer.Stop()
	for {
		select {
		case msg, ok := <-z.msgs:
			if !ok {
				return nil
			}
			if msg.Type == channel.TypeExited {
				return &msg
			}
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

func (m ctlMsg) exitInfo() exitInfo {
	e := exitInfo{known: true}
	if m.Signal != nil {
		e.signal = *m.Signal
	}
	if m.Status != nil {
		e.status = *m.Status
	}
	return e
}

// stopped is the error of an execution ended by its context: Timeout when
// its own deadline passed, Killed when it was cancelled.
func stopped(ctx context.Context, timeout time.Duration) *ExecError {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return failure(ErrTimeout, "the code ran longer than its %s timeout and was stopped", timeout)
	}
	return failure(ErrKilled, "the execution was cancelled: %v", context.Cause(ctx))
}

// memory is what the sandbox's processes hold (their PSS together), for
// the warm bound (warm.go).
func (z *zygote) memory() int64 {
	if z.cmd.Process == nil {
		return 0
	}
	pss, _ := proc.TreePSS(z.cmd.Process.Pid)
	return pss
}
