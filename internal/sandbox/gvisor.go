package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/codecell/codecell/internal/cgroup"
	"github.com/codecell/codecell/internal/channel"
	"github.com/codecell/codecell/internal/proc"
	"github.com/codecell/codecell/internal/seccomp"
)

// gvisorStopWait bounds each step of ending a hardened sandbox: `runsc kill`,
// the exit of `runsc run` after it, and `runsc delete` when that is needed.
const gvisorStopWait = 3 * time.Second

// gvisor is one hardened sandbox: one gVisor container (`runsc run` on an
// OCI bundle) whose init is the runner in --forkserver mode, a fork server
// that serves executions one after another. gVisor cannot receive
// descriptors from the host once started, so the channel is the container's
// stdin and stdout, lent to one child at a time: the fork server forks each
// execution's process ahead of need and says "ready"; that child reads the
// exec frame and serves that one execution over stdin and stdout; once it
// has exited the fork server kills every other process in the container (it
// is the PID namespace's init), wipes /tmp and /dev/shm, reports "exited"
// and forks the next child. The fork server never runs code, so each execution still
// runs in a process no earlier execution touched.
//
// Two tokens per child keep what an execution leaves on the channel from
// the next one (see forkserver in the runner): the host writes the child's
// sync token right before its exec frame, and the child discards stdin up
// to it (stale answers to calls, bytes the code left); the fork server's
// "exited" frame carries a key chosen after the child was forked, which its
// code cannot know, so a process the code left behind cannot make the host
// believe the clean-up is done and hand it the next execution. Anything odd
// (a timeout or cancellation, a protocol fault, a report that is missing,
// forged or unclean, an OOM kill) discards the whole container.
//
// The code runs under the seccomp policy of production, rendered as the
// bundle's OCI profile (see gvisorSeccomp) and enforced by gVisor's sentry on
// the calls the code makes to it: gVisor is the kernel the code talks to, so
// that is where the policy means the same as under bubblewrap.
//
// The container sees an empty read-only root with /usr, a few files of /etc,
// codecell's runner and the workspace bound into it, a private /proc, gVisor's
// own /dev and /sys, and size-capped tmpfs /tmp and /dev/shm. It does not see
// the host's root (as `runsc do` would show it), the data dir, home or
// config.
//
// What this does not protect against: bugs in gVisor's sentry and gofer, and
// side channels. The limits are the rlimits the runner sets inside gVisor's
// kernel and, where the host gives codecell cgroups, a cgroup per sandbox
// that codecell makes and starts runsc run in (runsc itself runs with
// --ignore-cgroups): the sentry's memory, which backs the code's, is bounded
// there with the rest of the sandbox's processes (memory only: see startGVisor).
//
// What could outlive a process in gVisor's kernel other than files (System
// V IPC, POSIX message queues) the seccomp policy refuses. Under gVisor the
// code can signal the fork server, its init (Linux would not deliver the
// signal): that kills the container, which is then discarded; it can
// lower the fork server's rlimits (prlimit, same user), which the fork
// server finds after the execution and reports unclean.
//
// A gvisor is owned by the pool while idle and by one Exec while busy; kill
// may be called from any goroutine. What follows a result (reading the
// fork server's report, or the teardown) outlives the Exec, and is owned by
// the Manager: Close waits for it.
type gvisor struct {
	m      *Manager
	python string // the interpreter it runs
	id     string // container id, unique per sandbox
	root   string // runsc's state directory (--root)
	bundle string // the OCI bundle directory, removed by kill
	cmd    *exec.Cmd
	in     *os.File // the runner's stdin: frames to the code
	out    *os.File // the runner's stdout: frames from the code

	done chan struct{} // closed when runsc run has been waited for
	exit exitInfo      // how the container's init ended; set before done is closed

	// sync and key are the tokens of the fork server's current child, from
	// its "ready" frame. Only the sandbox's owner uses them.
	sync, key string

	forced   atomic.Bool // runsc run was killed, so it may have left state behind
	stopOnce sync.Once
	killOnce sync.Once

	// cg holds runsc run and what it starts (the sentry, whose memory
	// file backs the code's memory, and the gofer); nil where the host has
	// no cgroup for it.
	cg *cgroup.Group
	// egress is the sandbox's proxy and trust its trust store's file;
	// nil and "" without a network.
	egress *sandboxEgress
	trust  string
}

// startGVisor starts a hardened sandbox for workspace and waits until its
// runner is ready for an exec frame.
func (m *Manager) startGVisor(ctx context.Context, tg target) (_ sandbox, err error) {
	workspace := tg.workspace
	started := false
	if _, err := os.Stat(RunscPath); err != nil {
		return nil, errNoRunsc()
	}
	begin := time.Now()
	base := filepath.Join(m.opts.StateDir, "gvisor")
	id, err := containerID()
	if err != nil {
		return nil, fmt.Errorf("start hardened sandbox: %w", err)
	}
	g := &gvisor{
		m:      m,
		python: tg.python,
		id:     id,
		root:   filepath.Join(base, "state"),
		bundle: filepath.Join(base, id),
		done:   make(chan struct{}),
	}
	if err := os.MkdirAll(g.root, 0o700); err != nil {
		return nil, fmt.Errorf("start hardened sandbox: %w", err)
	}
	profile, err := gvisorSeccomp()
	if err != nil {
		return nil, fmt.Errorf("start hardened sandbox: %w", err)
	}
	ro := hostBinds(etcFiles)
	for _, d := range m.readOnlyDirs(tg) {
		ro = append(ro, hostBind{Source: d, Dest: d, Dir: true})
	}
	runArgs := []string{"run", "--bundle", g.bundle, id}
	var trust string
	if tg.network != nil {
		if g.egress, err = m.egressFor(tg.network); err != nil {
			return nil, fmt.Errorf("start hardened sandbox: %w", err)
		}
		defer func() {
			if !started {
				g.egress.stop()
			}
		}()
		if len(tg.network.Trust) > 0 {
			trust = filepath.Join(base, id+".trust.pem")
			if err := os.WriteFile(trust, tg.network.Trust, 0o644); err != nil {
				return nil, fmt.Errorf("start hardened sandbox: %w", err)
			}
			g.trust = trust
		}
		// runsc run's own flag: the sandbox may connect to host sockets
		// bound into it, of which it has one.
		runArgs = append([]string{"--host-uds=open"}, runArgs...)
	}
	err = writeBundle(g.bundle, gvisorSpec{
		Network:    tg.network,
		EgressSock: g.egress.socket(),
		Trust:      trust,
		Rootfs:     filepath.Join(g.bundle, "rootfs"),
		Seccomp:    profile,
		Python:     tg.python,
		ReadOnly:   ro,
		Runtime:    m.runtime,
		Workspace:  workspace,
		Gen:        m.opts.GenDir,
		Skills:     tg.skills,
		TmpSize:    m.limits.TmpSize,
		OpenFiles:  m.limits.OpenFiles,
		Preload:    m.preloadArg(tg),
	})
	if err != nil {
		os.RemoveAll(g.bundle)
		return nil, fmt.Errorf("start hardened sandbox: %w", err)
	}

	inR, inW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(g.bundle)
		return nil, fmt.Errorf("start hardened sandbox: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		os.RemoveAll(g.bundle)
		return nil, fmt.Errorf("start hardened sandbox: %w", err)
	}
	g.in, g.out = inW, outR
	g.cmd = proc.Command(context.Background(), RunscPath, runscArgs(g.root, runArgs...)...)
	g.cmd.Stdin = inR
	g.cmd.Stdout = outW
	g.cmd.Stderr = m.stderrSink()
	g.cmd.Env = minimalEnv
	g.cmd.Dir = "/"
	// runsc run and its gofer share this group; the sandbox process runs in
	// a session of its own but dies with runsc run (it is started attached).
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	g.cmd.WaitDelay = time.Second
	if m.cgroups != nil {
		// No pids limit: the sentry's host threads and systrap's stub
		// processes do not follow the code's count (the sentry dies for
		// want of a thread long before the code meets sandbox.pids, which
		// gVisor's own RLIMIT_NPROC enforces).
		g.cg, err = m.cgroups.New(cgroup.Limits{Memory: m.limits.Memory + GVisorMemory})
	}
	if err == nil && g.cg != nil {
		err = g.cg.Start(g.cmd)
	} else if err == nil {
		err = g.cmd.Start()
	}
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		if g.cg != nil {
			g.cg.Close()
		}
		os.RemoveAll(g.bundle)
		return nil, fmt.Errorf("start hardened sandbox: %w", err)
	}
	go g.wait()

	// The reader ends when the first frame arrives or when kill closes out.
	ready := make(chan error, 1)
	go func() { ready <- g.readReady(channel.NewReader(outR, 0)) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err != nil {
			g.kill()
			return nil, fmt.Errorf("start hardened sandbox: it exited before it was ready (%v)%s", err, m.lastStderr())
		}
		m.log.Debug("hardened sandbox ready", "container", id, "duration", time.Since(begin))
		started = true
		return g, nil
	case <-timer.C:
		g.kill()
		return nil, fmt.Errorf("start hardened sandbox: not ready after %s%s", startTimeout, m.lastStderr())
	case <-ctx.Done():
		g.kill()
		return nil, ctx.Err()
	}
}

// runscArgs puts the global flags every runsc invocation of codecell shares
// before a subcommand. cgroups are not configured: on hosts with cgroup v1 or
// without delegation runsc cannot manage them, and a killed runsc would leave
// them behind; the limits are rlimits inside the sandbox instead. Without
// --oci-seccomp runsc ignores the bundle's seccomp profile, with a warning.
func runscArgs(root string, sub ...string) []string {
	return append([]string{"--root", root, "--network=none", "--ignore-cgroups", "--oci-seccomp"}, sub...)
}

// gvisorSeccomp returns the seccomp profile of every hardened sandbox: the
// production filter's rules (seccomp.OCIProfile), less what gVisor cannot
// take as production does. It is shared and must not be modified.
//
// What runsc makes of it (checked against release 20221219, Debian's runsc):
// it compiles the profile with gVisor's own seccomp package, the first
// matching entry deciding, and the sentry runs the filter on every call of
// the code and its children. It ignores "architectures" (gVisor runs only the
// native ABI) and errnoRet: every refused call fails with EPERM. A name
// gVisor's syscall table lacks (process_madvise, pidfd_getfd, mount_setattr,
// quotactl_fd there) is skipped with a warning; gVisor answers such a call
// with ENOSYS, so it is refused all the same, and the entries stay so that a
// later gVisor implementing the call still has it refused. The numbers the
// production filter refuses for want of a name in its table (calls newer than
// it) cannot be named in a profile; gVisor answers those it does not
// implement with ENOSYS too.
var gvisorSeccomp = sync.OnceValues(func() (*seccomp.Profile, error) {
	p, err := seccomp.OCIProfile()
	if err != nil {
		return nil, fmt.Errorf("seccomp profile: %w", err)
	}
	// clone3 is left out. The filter refuses it with ENOSYS so that glibc
	// falls back to clone, whose flags a filter can read; runsc turns any
	// errno into EPERM, on which glibc does not fall back, and every new
	// thread and posix_spawn would fail. gVisor 20221219 has no clone3 (it
	// answers ENOSYS, as the filter would). A later gVisor that implements
	// clone3 lets it through, namespace flags included, to the sentry's
	// namespaces rather than the host's.
	kept := p.Syscalls[:0]
	for _, s := range p.Syscalls {
		s.Names = slices.DeleteFunc(s.Names, func(n string) bool { return n == "clone3" })
		if len(s.Names) > 0 {
			kept = append(kept, s)
		}
	}
	p.Syscalls = kept
	return p, nil
})

// runsc runs one short runsc subcommand (kill, delete) on this sandbox.
func (g *gvisor) runsc(sub ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), gvisorStopWait)
	defer cancel()
	cmd := proc.Command(ctx, RunscPath, runscArgs(g.root, sub...)...)
	cmd.Env = minimalEnv
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd.Run()
}

func containerID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "codecell-" + hex.EncodeToString(b[:]), nil
}

func (g *gvisor) wait() {
	g.cmd.Wait()
	g.exit = exitOf(g.cmd.ProcessState)
	close(g.done)
}

// exitOf reads the container's exit from runsc run's: runsc exits with the
// init's status, or 128+n when a signal n ended it.
func exitOf(ps *os.ProcessState) exitInfo {
	if ps == nil {
		return exitInfo{}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Exited() {
		return exitInfo{} // runsc itself was killed: the code's status is unknown
	}
	st := ws.ExitStatus()
	if st > 128 && st <= 128+64 {
		return exitInfo{known: true, signal: st - 128}
	}
	return exitInfo{known: true, status: st}
}

func (g *gvisor) alive() bool {
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

// waitDone waits up to d for runsc run to end.
func (g *gvisor) waitDone(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.done:
		return true
	case <-t.C:
		return false
	}
}

// stop ends the container and waits, bounded, until runsc run has exited.
func (g *gvisor) stop() {
	g.stopOnce.Do(func() {
		if !g.alive() {
			return
		}
		// SIGKILL to the container's init (the runner) ends every process
		// in the sandbox; runsc run then removes the container's state and
		// exits by itself. This fails while the container is still being
		// created, hence the fallback.
		if g.runsc("kill", g.id, "KILL") == nil && g.waitDone(gvisorStopWait) {
			return
		}
		g.forced.Store(true)
		syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		g.waitDone(gvisorStopWait)
	})
}

// kill ends the sandbox, removes what runsc left of it and its bundle.
func (g *gvisor) kill() {
	g.killOnce.Do(func() {
		g.stop()
		g.in.Close()
		g.out.Close()
		if g.forced.Load() || len(g.stateFiles()) > 0 {
			g.runsc("delete", "--force", g.id)
			// runsc killed before it wrote a container's state leaves its
			// lock file, which delete does not remove (there is no
			// container). Nothing of runsc uses it once runsc run is gone.
			if !g.alive() {
				for _, f := range g.stateFiles() {
					os.Remove(f)
				}
			}
		}
		os.RemoveAll(g.bundle)
		if g.cg != nil {
			g.cg.Close()
		}
		if g.egress != nil {
			g.egress.stop()
			os.Remove(g.trust)
		}
	})
}

// GVisorMemory is what a hardened sandbox's cgroup allows on top of
// sandbox.memory: runsc run, the gofer, and the sentry's own memory beside
// the code's (an idle sandbox holds about 35 MiB).
const GVisorMemory = 128 << 20

// nullNetNS is the file in runsc's root directory (--root) where runsc
// releases since 2024 bind-mount the empty network namespace of their
// gofers (--network=none); it outlives the containers, and the directory
// cannot be removed until it is unmounted (EBUSY).
const nullNetNS = "null-netns"

// unmountNullNetNS unmounts root's nullNetNS (runsc runs that raced may
// have stacked mounts there, so until none is left) and removes the file
// under it. Where there is none (an older runsc, or none was made) it does
// nothing. A runsc that starts a container meanwhile holds the namespace
// open, or makes another.
func unmountNullNetNS(root string) {
	path := filepath.Join(root, nullNetNS)
	for range 64 {
		if syscall.Unmount(path, syscall.MNT_DETACH) != nil {
			break
		}
	}
	os.Remove(path)
}

// stateFiles lists what runsc keeps for the container under its root; runsc
// run removes it when it ends by itself.
func (g *gvisor) stateFiles() []string {
	entries, err := os.ReadDir(g.root)
	if err != nil {
		return nil
	}
	var files []string
	for _, e := range entries {
		if strings.Contains(e.Name(), g.id) {
			files = append(files, filepath.Join(g.root, e.Name()))
		}
	}
	return files
}

// readyFrame is the fork server's word that its next child waits for an
// exec frame; exitedFrame its report that the child exited and that nothing
// of the execution is left.
type (
	readyFrame struct {
		Sync string `json:"sync"`
		Key  string `json:"key"`
		// Preload is in the fork server's first ready frame only.
		Preload *PreloadReport `json:"preload"`
	}
	exitedFrame struct {
		Key    string `json:"key"`
		Clean  bool   `json:"clean"`
		Status *int   `json:"status"`
		Signal *int   `json:"signal"`
	}
)

// syncMark is what the host writes on the container's stdin right before
// an exec frame: the runner's SYNC and the child's sync token.
func syncMark(sync string) []byte { return []byte("\x00codecell-sync " + sync + "\n") }

// readReady reads the fork server's next frame, which must be "ready", and
// takes its tokens.
func (g *gvisor) readReady(fr *channel.Reader) error {
	m, err := fr.Read()
	if err != nil {
		return err
	}
	var r readyFrame
	if m.Type != channel.TypeReady {
		return fmt.Errorf("frame %q where ready was due", m.Type)
	}
	if err := m.Decode(&r); err != nil {
		return err
	}
	if len(r.Sync) < 32 || len(r.Key) < 32 {
		return errors.New("ready frame without its tokens")
	}
	g.sync, g.key = r.Sync, r.Key
	// Under gVisor the cgroup bounds memory only (see startGVisor).
	return g.m.preloaded(g.python, r.Preload, g.cg, cgroup.Limits{Memory: GVisorMemory})
}

// verify checks an "exited" frame against the current child's key.
func (g *gvisor) verify(m channel.Message) (*exitedFrame, error) {
	var e exitedFrame
	if err := m.Decode(&e); err != nil {
		return nil, err
	}
	if e.Key != g.key {
		return nil, errors.New("an exited frame without the fork server's key")
	}
	return &e, nil
}

func (e *exitedFrame) exitInfo() exitInfo {
	return ctlMsg{Status: e.Status, Signal: e.Signal}.exitInfo()
}

// run executes one request in the fork server's waiting child: the sync
// mark and the exec frame go on the container's stdin, frames come back on
// its stdout. The result is complete with the result frame (or, without
// one, the fork server's report of how the child ended); reading the
// report and the next child's ready frame, which decide whether the
// sandbox goes back to the pool, happen after run returns.
func (g *gvisor) run(ctx context.Context, req *Request, lim Limits, res *Result, release func(reusable bool)) {
	x := newExchange(lim, req)
	x.endAt = channel.TypeExited
	meter := g.egress.begin()
	defer g.egress.end(meter, res)
	oomBefore := g.cg.OOMKills()
	oom := func() bool { return g.cg.OOMKills() > oomBefore }
	defer func() {
		// The kernel kills the sentry (the sandbox's biggest process): the
		// code sees nothing, and runsc reports a killed container.
		if oom() && ctx.Err() == nil {
			res.OK = false
			res.Error = memoryLimitError(lim)
		}
	}()
	callCtx, cancelCalls := context.WithCancel(ctx)
	// Every answer to a call is written (or has failed) before the sandbox
	// can serve again: the next execution's frames must not interleave
	// with them on stdin.
	endCalls := func() {
		cancelCalls()
		x.wait()
	}
	defer endCalls()
	x.serveCalls(callCtx, req, g.in)
	exchanged := make(chan bool, 1)
	go func() {
		if _, err := g.in.Write(syncMark(g.sync)); err != nil {
			exchanged <- x.setFault(failure(ErrSandbox, "send code to sandbox: %v", err))
			return
		}
		exchanged <- x.run(g.out, g.in, execFrame{
			Type: channel.TypeExec, Code: req.Code, Context: req.Context, Args: req.Args, Filename: req.Filename,
			CodecellTools: req.CodecellTools,
			Limits:        lim.forRunner(Hardened, req.FileSize, false),
		})
	}()

	var fault bool
	done := g.done
	var grace <-chan time.Time
	for ended := false; !ended; {
		select {
		case fault = <-exchanged:
			ended = true
		case <-done:
			// Every process of the sandbox is gone once runsc run is, so
			// the output pipe ends as soon as it is drained; bound that
			// in case something unexpected still holds it open.
			done = nil
			grace = time.After(gvisorStopWait)
		case <-grace:
			g.out.Close()
			grace = nil
		case <-ctx.Done():
			res.Error = stopped(ctx, req.Timeout)
			g.stop()
			g.in.Close()
			g.out.Close()
			<-exchanged
			x.finish(res, g.exitInfo(), lim)
			release(false)
			return
		}
	}
	var exited *exitedFrame
	if !fault && x.ended != nil {
		var err error
		if exited, err = g.verify(*x.ended); err != nil {
			fault = x.broken("%v", err)
		}
	}
	switch {
	case fault:
		g.stop()
	case x.hasResult() || exited != nil:
		endCalls()
		exit := exitInfo{}
		if exited != nil && !x.hasResult() {
			exit = exited.exitInfo()
		}
		x.finish(res, exit, lim)
		g.m.goTracked(func() {
			release(g.next(exited) && !oom())
		})
		return
	default:
		// The channel ended without a result: the container's exit says why.
		select {
		case <-g.done:
		case <-ctx.Done():
			res.Error = stopped(ctx, req.Timeout)
			g.stop()
		}
	}
	x.finish(res, g.exitInfo(), lim)
	release(false)
}

// next waits, after an execution, for the fork server's report that the
// child exited and everything it left was killed and wiped (unless exited
// is that report, already read) and for the next child's ready frame. It
// reports whether the sandbox may serve another execution; if it may not,
// the caller kills it. Output frames before the report are dropped: the
// child's output forwarders may race its exit, and nothing after a result
// counts.
func (g *gvisor) next(exited *exitedFrame) bool {
	// A report that never comes (a child the code keeps alive after a
	// forged result, a framing the code broke) ends with the sandbox.
	timer := time.AfterFunc(releaseWait, g.kill)
	ok := g.awaitNext(exited)
	return timer.Stop() && ok && g.alive()
}

// awaitNext reads what next waits for.
func (g *gvisor) awaitNext(exited *exitedFrame) bool {
	fr := channel.NewReader(g.out, 0)
	for exited == nil {
		m, err := fr.Read()
		if err != nil {
			return false
		}
		switch m.Type {
		case channel.TypeOutput:
		case channel.TypeExited:
			if exited, err = g.verify(m); err != nil {
				g.m.log.Warn("hardened sandbox discarded", "container", g.id, "reason", err)
				return false
			}
		default:
			g.m.log.Warn("hardened sandbox discarded", "container", g.id, "reason", fmt.Sprintf("frame %q after the result", m.Type))
			return false
		}
	}
	if !exited.Clean {
		g.m.log.Warn("hardened sandbox discarded", "container", g.id, "reason", "the fork server could not clean up after an execution")
		return false
	}
	return g.readReady(fr) == nil
}

// goTracked runs f in a goroutine that Close waits for, as it waits for the
// pool's refills: a hardened sandbox's teardown after its result, so that
// nothing of it (runsc run removing its state, kill removing the bundle) is
// left running, or writing under StateDir, once Close has returned. Once
// Close has begun, f runs before goTracked returns instead.
//
// It joins m.wg under m.mu only while the Manager is open, as refill does,
// so that no Add can race with Close's Wait.
func (m *Manager) goTracked(f func()) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		f()
		return
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// exitInfo is how the container ended, if it has.
func (g *gvisor) exitInfo() exitInfo {
	select {
	case <-g.done:
		return g.exit
	default:
		return exitInfo{}
	}
}

// gvisorSpec is everything a hardened sandbox's OCI configuration depends on.
type gvisorSpec struct {
	Rootfs    string     // empty directory, the container's read-only root
	Python    string     // interpreter, visible through /usr or ReadOnly
	ReadOnly  []hostBind // host paths shown read-only (etc files, a Python outside /usr)
	Runtime   string     // directory with the runner, mounted at RuntimeMount
	Workspace string     // the workspace, mounted read-write at WorkspaceMount
	Gen       string     // the generated servers package, mounted at GenMount; "" for none
	Skills    string     // the namespace's skills, mounted at SkillsMount; "" for none
	TmpSize   int64
	OpenFiles int
	Args      []string // the container's command; nil means the runner in --forkserver mode
	Preload   []string // the runner's --preload argument, or nil
	// Seccomp is the policy gVisor enforces on the code; nil means none.
	Seccomp *seccomp.Profile
	// Network, when set, is the sandbox's way out: EgressSock (the
	// proxy's socket on the host) at EgressMount, the trust store (a
	// file in the bundle, Trust) at TrustMount, and their environment.
	Network    *Network
	EgressSock string
	Trust      string
}

// hostBind is a host path bound into the container.
type hostBind struct {
	Source string // host path, symlinks resolved
	Dest   string // path in the container
	Dir    bool
}

// hostBinds returns binds for those of paths that exist on the host, each at
// its own path. A symlink (/etc/localtime) is bound as what it points to.
func hostBinds(paths []string) []hostBind {
	var binds []hostBind
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		info, err := os.Stat(real)
		if err != nil {
			continue
		}
		binds = append(binds, hostBind{Source: real, Dest: p, Dir: info.IsDir()})
	}
	return binds
}

// The subset of the OCI runtime specification that runsc needs here.
type (
	ociSpec struct {
		Version  string     `json:"ociVersion"`
		Process  ociProcess `json:"process"`
		Root     ociRoot    `json:"root"`
		Hostname string     `json:"hostname"`
		Mounts   []ociMount `json:"mounts"`
		Linux    ociLinux   `json:"linux"`
	}
	ociProcess struct {
		Terminal        bool        `json:"terminal"`
		User            ociUser     `json:"user"`
		Args            []string    `json:"args"`
		Env             []string    `json:"env"`
		Cwd             string      `json:"cwd"`
		Capabilities    ociCaps     `json:"capabilities"`
		Rlimits         []ociRlimit `json:"rlimits"`
		NoNewPrivileges bool        `json:"noNewPrivileges"`
	}
	ociUser struct {
		UID            uint32   `json:"uid"`
		GID            uint32   `json:"gid"`
		AdditionalGids []uint32 `json:"additionalGids"`
	}
	ociCaps struct {
		Bounding    []string `json:"bounding"`
		Effective   []string `json:"effective"`
		Inheritable []string `json:"inheritable"`
		Permitted   []string `json:"permitted"`
		Ambient     []string `json:"ambient"`
	}
	ociRlimit struct {
		Type string `json:"type"`
		Hard uint64 `json:"hard"`
		Soft uint64 `json:"soft"`
	}
	ociRoot struct {
		Path     string `json:"path"`
		Readonly bool   `json:"readonly"`
	}
	ociMount struct {
		Destination string   `json:"destination"`
		Type        string   `json:"type"`
		Source      string   `json:"source"`
		Options     []string `json:"options,omitempty"`
	}
	ociLinux struct {
		Namespaces []ociNamespace   `json:"namespaces"`
		Seccomp    *seccomp.Profile `json:"seccomp,omitempty"`
	}
	ociNamespace struct {
		Type string `json:"type"`
	}
)

// ociConfig builds the OCI configuration of a hardened sandbox. It is a pure
// function so the policy can be read and tested as data, like bwrapArgs.
func ociConfig(s gvisorSpec) ociSpec {
	bind := func(src, dst string, rw bool) ociMount {
		mode := "ro"
		if rw {
			mode = "rw"
		}
		return ociMount{Destination: dst, Type: "bind", Source: src, Options: []string{"rbind", mode, "nosuid", "nodev"}}
	}
	tmpfs := func(dst string) ociMount {
		return ociMount{Destination: dst, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"nosuid", "nodev", "mode=1777", "size=" + strconv.FormatInt(s.TmpSize, 10)}}
	}
	mounts := []ociMount{bind("/usr", "/usr", false)}
	mounts = append(mounts,
		ociMount{Destination: "/proc", Type: "proc", Source: "proc"},
		tmpfs("/tmp"),
		tmpfs("/dev/shm"),
		bind(s.Runtime, RuntimeMount, false),
		bind(s.Workspace, WorkspaceMount, true),
	)
	if s.Gen != "" {
		mounts = append(mounts, bind(s.Gen, GenMount, false))
	}
	if s.Skills != "" {
		mounts = append(mounts, bind(s.Skills, SkillsMount, false))
	}
	// After /tmp: a directory under /tmp (tests) must not be hidden by it.
	for _, b := range s.ReadOnly {
		mounts = append(mounts, bind(b.Source, b.Dest, false))
	}
	env := make([]string, 0, len(sandboxEnv))
	for _, kv := range sandboxEnv {
		env = append(env, kv[0]+"="+kv[1])
	}
	if s.Network != nil {
		// gVisor's own network stack, with only loopback (--network=none);
		// the socket, reached with --host-uds=open, is the way out.
		mounts = append(mounts, bind(s.EgressSock, EgressMount, true))
		if s.Trust != "" {
			mounts = append(mounts, bind(s.Trust, TrustMount, false))
		}
		for _, kv := range networkEnv(s.Network) {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	args := s.Args
	if args == nil {
		args = []string{s.Python, "-I", "-B", RuntimeMount + "/codecell_runner.py", "--forkserver", "--scratch", "/tmp:/dev/shm"}
		args = append(args, s.Preload...)
		if s.Skills != "" {
			args = append(args, "--skills", SkillsMount)
		}
		if s.Gen != "" {
			args = append(args, "--gen", GenMount)
		}
	}
	none := []string{}
	files := uint64(s.OpenFiles)
	return ociSpec{
		Version: "1.0.2",
		Process: ociProcess{
			User: ociUser{UID: sandboxUID, GID: sandboxUID, AdditionalGids: []uint32{}},
			Args: args,
			Env:  env,
			Cwd:  WorkspaceMount,
			Capabilities: ociCaps{
				Bounding: none, Effective: none, Inheritable: none, Permitted: none, Ambient: none,
			},
			Rlimits: []ociRlimit{
				{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
				{Type: "RLIMIT_NOFILE", Hard: files, Soft: files},
			},
			NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: s.Rootfs, Readonly: true},
		Hostname: "codecell",
		Mounts:   mounts,
		Linux: ociLinux{
			Namespaces: []ociNamespace{
				{Type: "pid"}, {Type: "network"}, {Type: "ipc"}, {Type: "uts"}, {Type: "mount"},
			},
			Seccomp: s.Seccomp,
		},
	}
}

// writeBundle creates an OCI bundle for s in dir: config.json and the empty
// root with a mount point for every mount, so runsc never has to create one
// (the root is read-only to the container, not to runsc's gofer).
func writeBundle(dir string, s gvisorSpec) error {
	spec := ociConfig(s)
	if err := os.MkdirAll(s.Rootfs, 0o755); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	// The container's / is this directory, with its mode: the sandbox user
	// must be able to search it whatever the umask.
	if err := os.Chmod(s.Rootfs, 0o755); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	for _, l := range [][2]string{{"usr/bin", "bin"}, {"usr/sbin", "sbin"}, {"usr/lib", "lib"}, {"usr/lib64", "lib64"}} {
		if err := os.Symlink(l[0], filepath.Join(s.Rootfs, l[1])); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	files := map[string]bool{EgressMount: true, TrustMount: true}
	for _, b := range s.ReadOnly {
		files[b.Dest] = !b.Dir
	}
	for _, mnt := range spec.Mounts {
		p := filepath.Join(s.Rootfs, mnt.Destination)
		if files[mnt.Destination] {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return fmt.Errorf("bundle: %w", err)
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o644)
			if err != nil {
				return fmt.Errorf("bundle: %w", err)
			}
			f.Close()
			continue
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(s.Rootfs, "dev"), 0o755); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	data, err := json.MarshalIndent(spec, "", "\t")
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return nil
}

// probeGVisor starts the smallest hardened sandbox the way Manager does (an
// OCI bundle under runsc run) with python, for Check.
func probeGVisor(ctx context.Context, python string) error {
	dir, err := os.MkdirTemp("", "codecell-gvisor-check-")
	if err != nil {
		return fmt.Errorf("%w: gVisor (runsc): %v", ErrUnavailable, err)
	}
	defer func() {
		unmountNullNetNS(filepath.Join(dir, "state"))
		os.RemoveAll(dir)
	}()
	for _, d := range []string{"state", "runtime", "workspace"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("%w: gVisor (runsc): %v", ErrUnavailable, err)
		}
	}
	ro := hostBinds(etcFiles)
	if real, err := filepath.EvalSymlinks(python); err == nil && !strings.HasPrefix(real, "/usr/") {
		prefix := filepath.Dir(filepath.Dir(real))
		ro = append(ro, hostBind{Source: prefix, Dest: prefix, Dir: true})
	}
	spec := gvisorSpec{
		Rootfs:    filepath.Join(dir, "bundle", "rootfs"),
		Python:    python,
		ReadOnly:  ro,
		Runtime:   filepath.Join(dir, "runtime"),
		Workspace: filepath.Join(dir, "workspace"),
		TmpSize:   1 << 20,
		OpenFiles: 64,
		Args:      []string{python, "-I", "-S", "-c", "pass"},
	}
	// With the profile, so that a runsc which refuses it fails the check
	// rather than every execution.
	if spec.Seccomp, err = gvisorSeccomp(); err != nil {
		return fmt.Errorf("%w: gVisor (runsc): %v", ErrUnavailable, err)
	}
	if err := writeBundle(filepath.Join(dir, "bundle"), spec); err != nil {
		return fmt.Errorf("%w: gVisor (runsc): %v", ErrUnavailable, err)
	}
	id, err := containerID()
	if err != nil {
		return fmt.Errorf("%w: gVisor (runsc): %v", ErrUnavailable, err)
	}
	root := filepath.Join(dir, "state")
	cmd := proc.Command(ctx, RunscPath, runscArgs(root, "run", "--bundle", filepath.Join(dir, "bundle"), id)...)
	cmd.Env = minimalEnv
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Should the probe be cancelled, the sandbox dies with runsc run (it
	// is started attached) and its state with the temporary directory.
	return probe(ctx, cmd, "gVisor (runsc)")
}
