package sandbox

import (
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
// every sandbox the launcher starts, and which is never let go nor ended
// (onOwnThread). Its mounts are private, so nothing mounted on the host
// later appears in it; the other way round, a filesystem the host unmounts
// meanwhile stays mounted in it (so busy) for as long as the process
// lives.
type launcher struct {
	reqs chan launchRequest
	quit chan struct{} // closed by close
	done chan struct{} // closed once the thread serves no more
	tid  int           // the thread's
	once sync.Once     // closes quit
}

// launchRequest is a command to start on the launcher's thread, in cg
// when not nil; the start's error comes back on done.
type launchRequest struct {
	cmd  *exec.Cmd
	cg   *cgroup.Group
	done chan error
}

// newLauncher makes the launcher's thread and namespace; it needs
// CAP_SYS_ADMIN (codecell run as root).
func newLauncher() (*launcher, error) {
	l := &launcher{reqs: make(chan launchRequest), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error)
	onOwnThread(func() {
		l.tid = unix.Gettid()
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
			case req := <-l.reqs:
				if req.cg == nil {
					req.done <- req.cmd.Start()
					continue
				}
				// cgroup v1 moves the forking thread into the group:
				// this one. Stuck in it, it serves no more.
				stuck, err := req.cg.StartLocked(req.cmd)
				req.done <- err
				if stuck {
					return
				}
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
// the launcher serves no more (closed, or its thread stuck in a cgroup):
// the caller starts cmd itself.
func (l *launcher) start(cmd *exec.Cmd, cg *cgroup.Group) (ran bool, err error) {
	req := launchRequest{cmd: cmd, cg: cg, done: make(chan error, 1)}
	select {
	case l.reqs <- req:
		return true, <-req.done
	case <-l.done:
		return false, nil
	}
}

// close stops the launcher: what it started goes on, and what is started
// after is started by the caller.
func (l *launcher) close() {
	if l != nil {
		l.once.Do(func() { close(l.quit) })
		<-l.done
	}
}

// onOwnThread runs f in a goroutine locked to a thread that is not the
// process's main thread, which, once f returns, is never let go nor
// ended: the goroutine waits forever. f may change the thread's
// namespaces, which would reach other goroutines were the thread given
// back; and a thread that ends takes with it every process forked from it
// before, by any goroutine it ran (bubblewrap's and runsc's parent-death
// signal follows the thread, not the process). Not the main thread, which
// /proc/self shows: the main thread in another mount namespace would show
// another mount table to whoever reads it there.
func onOwnThread(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			select {}
		}
		// Hand f to another goroutine. While this one holds the main
		// thread locked, the runtime runs that one on another thread.
		handed := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(handed)
			f()
			select {}
		}()
		<-handed
		runtime.UnlockOSThread()
	}()
}
