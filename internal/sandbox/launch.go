package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/codecell/codecell/internal/cgroup"
)

// launcher starts the production sandboxes that have no workspace at
// start (unbound.go: those started ahead for no namespace, and those a
// namespace's workspace is mounted into once they are up, startBound)
// from a mount namespace of its own, made when the Manager is: a private
// copy of codecell's, which the workspace images mounted since do not
// reach.
//
// Why: bubblewrap copies the mount namespace it starts in, and reads the
// copy's mount table for each of its binds. codecell's holds every
// namespace's workspace image mounted, so each start cost more with each
// namespace in use: on this host 27 ms of CPU with 23 mounts, 73 ms with
// 1,000 (BenchmarkStart; BENCHMARKS.md, issue 33). These sandboxes need nothing mounted
// since: the interpreter, the generated package, the egress socket and
// the runner's files are all on filesystems mounted before codecell ran.
//
// The namespace is one thread's: a goroutine locked to it, which forks
// every sandbox the launcher starts. It ends once the Manager is closed
// and the last of those sandboxes is gone, not before: bubblewrap's
// parent-death signal follows the thread that forked it. Its mounts are
// private, so nothing mounted on the host later appears in it; the other
// way round, a filesystem the host unmounts meanwhile stays mounted in it
// (so busy) until then.
type launcher struct {
	reqs chan func()
	quit chan struct{} // closed once closing and nothing started runs
	done chan struct{} // closed once the thread is gone
	once sync.Once     // closes quit

	mu      sync.Mutex
	live    int // processes started and not reaped (exited)
	closing bool
	stuck   bool // the thread could not leave a cgroup (cgroup.Group.StartLocked): it starts nothing more
}

// newLauncher makes the launcher's thread and namespace; it needs
// CAP_SYS_ADMIN (codecell run as root).
func newLauncher() (*launcher, error) {
	l := &launcher{reqs: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error)
	onOwnThread(func() {
		// Never unlocked: the thread leaves with the goroutine, and with
		// it its namespace, rather than run other goroutines in it.
		err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS)
		if err == nil {
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		}
		ready <- err
		if err != nil {
			return
		}
		defer close(l.done)
		for {
			select {
			case f := <-l.reqs:
				f()
			case <-l.quit:
				return
			}
		}
	})
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("a mount namespace to start sandboxes from: %w", err)
	}
	return l, nil
}

// start starts cmd (in cg, when not nil) on the launcher's thread, so
// that the process is in the launcher's mount namespace. ran is false when
// the launcher cannot (closed, or its thread stuck in a cgroup): the
// caller starts cmd itself. When it ran and cmd started, the caller calls
// exited once the process is reaped.
func (l *launcher) start(cmd *exec.Cmd, cg *cgroup.Group) (ran bool, err error) {
	errc := make(chan error, 1)
	run := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closing || l.stuck {
			errc <- errNotLaunched
			return
		}
		var err error
		if cg != nil {
			// cgroup v1 moves the forking thread into the group: this one.
			l.stuck, err = cg.StartLocked(cmd)
		} else {
			err = cmd.Start()
		}
		if err == nil {
			l.live++
		}
		errc <- err
	}
	select {
	case l.reqs <- run:
		err = <-errc
	case <-l.done:
		err = errNotLaunched
	}
	if err == errNotLaunched {
		return false, nil
	}
	return true, err
}

var errNotLaunched = errors.New("not launched")

// exited says that a process start started was reaped.
func (l *launcher) exited() {
	l.mu.Lock()
	l.live--
	end := l.closing && l.live == 0
	l.mu.Unlock()
	if end {
		l.once.Do(func() { close(l.quit) })
	}
}

// close has the thread end once nothing it started runs.
func (l *launcher) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.closing = true
	end := l.live == 0
	l.mu.Unlock()
	if end {
		l.once.Do(func() { close(l.quit) })
	}
}

// onOwnThread runs f in a goroutine locked to a thread that is not the
// process's main thread, and never unlocked. f may change the thread's
// namespaces: they go with it. Not the main thread's, which /proc/self
// shows: codecell reads its mount table there (package workspace), and
// the main thread in another mount namespace would show another table.
func onOwnThread(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			return
		}
		// Hand f to another goroutine. While this one holds the main
		// thread locked, the runtime runs that one on another thread.
		handed := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(handed)
			f()
		}()
		<-handed
		runtime.UnlockOSThread()
	}()
}
