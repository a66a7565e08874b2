package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Unbound sandboxes (issue 33). A namespace that went idle gave back its
// sandboxes and its workspace's mount (the server's tenants), so its next
// call would start a sandbox cold: bubblewrap, an interpreter and the
// runner's set-up, ten times a bare interpreter's spawn. A server that
// releases idle namespaces therefore keeps a few production sandboxes
// started ahead for no namespace (KeepUnbound): their /workspace is an
// empty directory and nothing is at /codecell/skills. A namespace whose
// pool is empty claims one: the host mounts the namespace's workspace
// (read-write) and skills (read-only) into the sandbox's own mount
// namespace, nosuid and nodev as bubblewrap's binds are, and its
// executions change to /workspace before the code runs (the exec frame's
// chdir: the fork server and the process it forked ahead sit in the empty
// directory beneath). From then on it is that namespace's like any other
// of its sandboxes, pooled under its target and killed when the namespace
// gives its sandboxes back; it never returns to the unbound ones, and no
// code runs in a sandbox before it is claimed. So a sandbox still never
// serves two namespaces, and an idle namespace still holds nothing.
//
// The mounts are made from a detached copy of each directory
// (open_tree(2)), given its flags (mount_setattr(2)) and moved
// (move_mount(2)) into the sandbox's mount namespace by a thread that
// joins it (setns(2)) and then goes back to codecell's (mounter): it needs
// CAP_SYS_ADMIN over the sandbox's user namespace, which codecell has
// when it runs as root (as workspace images need too), and Linux 5.12.
// Nothing is mounted on the host, so nothing is left behind when codecell
// is killed: the mounts end with the sandbox's namespace.
//
// Only targets with the Manager's own interpreter and no preloaded modules
// are served: an environment's interpreter is one namespace's, and a
// preloaded fork server would hold tens of megabytes for no one. The
// sandboxes have the shape of the last target that wanted one (skills or
// none); when that changes they are replaced.

// unboundPool is the Manager's sandboxes started for no namespace. Its
// fields are guarded by Manager.mu.
type unboundPool struct {
	size     int    // how many to keep ready (KeepUnbound); 0 none
	key      target // their shape (unboundKey), once known
	known    bool
	idle     []*zygote
	starting int
	waiting  int           // claims waiting for one that is starting
	ready    chan struct{} // closed and replaced when a start ends
	off      error         // why claims stopped (the host cannot mount into a sandbox); nil while they work
}

// KeepUnbound has the Manager keep n production sandboxes started for no
// namespace yet, for namespaces whose pools are empty (a server that
// releases idle namespaces); 0 keeps none. It does nothing at other
// levels, or when codecell does not run as root (see unbound.go). The
// first are started once an execution shows which shape they need.
func (m *Manager) KeepUnbound(n int) {
	if m.opts.Level != Production || os.Geteuid() != 0 {
		return
	}
	m.mu.Lock()
	m.unbound.size = max(n, 0)
	drop := m.trimUnboundLocked()
	m.mu.Unlock()
	m.killAll(drop)
	m.refillUnbound()
}

// trimUnboundLocked takes the unbound sandboxes past the pool's size out
// of it, for the caller to kill. m.mu is held.
func (m *Manager) trimUnboundLocked() []sandbox {
	u := &m.unbound
	var drop []sandbox
	for len(u.idle) > u.size {
		drop = append(drop, u.idle[0])
		u.idle = u.idle[1:]
	}
	return drop
}

// unbound says whether tg is the shape of an unbound sandbox rather than
// a namespace's target.
func (tg target) unbound() bool { return tg.workspace == "" }

// unboundKey is the shape an unbound sandbox must have to serve tg, and
// whether one can at all. Whatever of tg is not its workspace or skills
// directory stays in the key, so a target that differs in anything else
// (a field added later included) needs sandboxes of its own.
func (m *Manager) unboundKey(tg target) (target, bool) {
	if m.opts.Level != Production || tg.unbound() || tg.preload || tg.python != m.opts.Python || tg.readOnly != "" {
		return target{}, false
	}
	key := tg
	key.workspace, key.dir, key.skillsDir, key.epoch = "", 0, 0, 0
	if key.skills != "" {
		key.skills = SkillsMount // mounted when claimed; the runner is told of it at start
	}
	return key, true
}

// claimUnbound gives tg an unbound sandbox with tg's workspace and skills
// mounted in it. With none ready it waits for one that is starting, when
// fewer claims wait than are starting (such a start ends sooner than a new
// one would). It returns nil when there is none for tg; the caller starts
// a sandbox cold. The one taken is replaced once the execution it serves
// is over (Exec calls refillUnbound), or after refillDelay if that is
// sooner: a start beside a trivial execution would take its CPU, and a
// long one should not keep the pool short.
func (m *Manager) claimUnbound(ctx context.Context, tg target) *zygote {
	key, ok := m.unboundKey(tg)
	if !ok {
		return nil
	}
	u := &m.unbound
	m.mu.Lock()
	if u.size == 0 || u.off != nil || m.closed {
		m.mu.Unlock()
		return nil
	}
	if !u.known || u.key != key {
		// The shape executions need changed (or is first known): the
		// next claims get it.
		var drop []sandbox
		for _, z := range u.idle {
			drop = append(drop, z)
		}
		u.idle, u.key, u.known = nil, key, true
		m.mu.Unlock()
		m.killAll(drop)
		m.refillUnbound()
		return nil
	}
	for {
		for len(u.idle) > 0 {
			z := u.idle[0]
			u.idle = u.idle[1:]
			if !z.alive() {
				m.mu.Unlock()
				m.killAll([]sandbox{z})
				m.mu.Lock()
				continue
			}
			m.mu.Unlock()
			if err := z.bind(tg); err != nil {
				z.kill()
				m.bindFailed(err)
				return nil
			}
			time.AfterFunc(refillDelay, m.refillUnbound)
			return z
		}
		if u.starting <= u.waiting || m.closed {
			m.mu.Unlock()
			return nil
		}
		u.waiting++
		ready := u.ready
		m.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
		}
		m.mu.Lock()
		u.waiting--
		if ctx.Err() != nil || u.key != key || u.off != nil {
			// Or the shape changed meanwhile: those ready are another's.
			m.mu.Unlock()
			return nil
		}
	}
}

// startBound starts a sandbox for tg as one for no namespace, from the
// launcher's mount namespace, and mounts tg's workspace and skills into it
// as a claim does: its start does not copy and read codecell's mount
// table, which holds every namespace's workspace mounted (see launcher).
// ok is false when tg cannot be started so (no launcher, a shape
// unboundKey refuses, mounting into a sandbox is off); the caller starts
// it as before. A sandbox that starts but cannot be mounted into is
// killed, and so is ok false.
func (m *Manager) startBound(ctx context.Context, tg target) (z *zygote, ok bool, err error) {
	key, can := m.unboundKey(tg)
	m.mu.Lock()
	off := m.unbound.off
	m.mu.Unlock()
	if m.launch == nil || !can || off != nil {
		return nil, false, nil
	}
	if z, err = m.startZygote(ctx, key); err != nil {
		return nil, true, err
	}
	if err := z.bind(tg); err != nil {
		z.kill()
		m.bindFailed(err)
		return nil, false, nil
	}
	return z, true, nil
}

// bindFailed notes that mounting into a sandbox failed: for good when the
// host cannot (no such system call, or no permission), which turns claims
// and startBound off; else only that sandbox is lost.
func (m *Manager) bindFailed(err error) {
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
		m.log.Warn("mount a workspace into a sandbox", "error", err)
		return
	}
	m.mu.Lock()
	u := &m.unbound
	first := u.off == nil
	u.off = err
	drop := u.idle
	u.idle = nil
	m.mu.Unlock()
	for _, z := range drop {
		z.kill()
	}
	if first {
		m.log.Warn("sandboxes are started with their workspace: this host cannot mount into a running sandbox", "error", err)
	}
}

// refillDelay is how long after a claim the sandbox taken is replaced at
// the latest (see claimUnbound).
const refillDelay = 100 * time.Millisecond

// refillUnbound starts unbound sandboxes in the background until the
// pool's size are ready or starting.
func (m *Manager) refillUnbound() {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := &m.unbound
	if m.closed || !u.known || u.off != nil {
		return
	}
	key := u.key
	for n := u.size - len(u.idle) - u.starting; n > 0; n-- {
		u.starting++
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*startTimeout)
			z, err := m.startZygote(ctx, key)
			cancel()
			m.mu.Lock()
			u.starting--
			keep := err == nil && !m.closed && u.key == key && u.off == nil && len(u.idle) < u.size
			if keep {
				u.idle = append(u.idle, z)
			}
			close(u.ready)
			u.ready = make(chan struct{})
			m.mu.Unlock()
			if err != nil {
				m.log.Warn("start a sandbox ahead of namespaces", "error", err)
				return
			}
			if !keep {
				z.kill()
			}
		}()
	}
}

// bind mounts tg's workspace and skills directory into the sandbox, which
// has run nothing, and has its executions start in the workspace.
func (z *zygote) bind(tg target) error {
	type mount struct {
		fd   int
		dest string
	}
	var mounts []mount
	defer func() {
		for _, mt := range mounts {
			unix.Close(mt.fd)
		}
	}()
	detached := func(src, dest string, attr uint64) error {
		// Recursive, as bubblewrap's binds are.
		fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("open_tree %s: %w", src, err)
		}
		mounts = append(mounts, mount{fd, dest})
		// Private: nothing mounted on the host later reaches the sandbox.
		ma := &unix.MountAttr{Attr_set: attr, Propagation: unix.MS_PRIVATE}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, ma); err != nil {
			return fmt.Errorf("mount_setattr %s: %w", src, err)
		}
		return nil
	}
	if err := detached(tg.workspace, WorkspaceMount, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
		return err
	}
	if tg.skills != "" {
		if err := detached(tg.skills, SkillsMount, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
			return err
		}
	}
	ns, err := z.mountNamespace()
	if err != nil {
		return err
	}
	defer ns.Close()
	err = inMountNamespace(ns, func() error {
		for _, mt := range mounts {
			if err := unix.MoveMount(mt.fd, "", unix.AT_FDCWD, mt.dest, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return fmt.Errorf("move_mount %s: %w", mt.dest, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	z.chdir, z.boundTo = WorkspaceMount, tg.workspace
	return nil
}

// mountNamespace opens the mount namespace of the sandbox's init (the fork
// server, bubblewrap's one child), checked to be another than codecell's.
func (z *zygote) mountNamespace() (*os.File, error) {
	if z.cmd.Process == nil || !z.alive() {
		return nil, errors.New("the sandbox is gone")
	}
	bw := strconv.Itoa(z.cmd.Process.Pid)
	children := "/proc/" + bw + "/task/" + bw + "/children"
	init := func() (string, error) {
		b, err := os.ReadFile(children)
		if err != nil {
			return "", err
		}
		f := strings.Fields(string(b))
		if len(f) != 1 {
			return "", fmt.Errorf("bubblewrap has %d children, not one", len(f))
		}
		return f[0], nil
	}
	pid, err := init()
	if err != nil {
		return nil, fmt.Errorf("the sandbox's init: %w", err)
	}
	ns, err := os.Open("/proc/" + pid + "/ns/mnt")
	if err != nil {
		return nil, fmt.Errorf("the sandbox's mount namespace: %w", err)
	}
	// The pid is still bubblewrap's child, and bubblewrap not reaped yet
	// (so its pid was not another's either): the namespace opened is the
	// sandbox's, not that of a process that took a pid freed meanwhile.
	// Bubblewrap forks one child, ever.
	again, err := init()
	var st, own unix.Stat_t
	if err == nil && (again != pid || !z.alive()) {
		err = errors.New("the sandbox's init changed")
	}
	if err == nil {
		err = unix.Fstat(int(ns.Fd()), &st)
	}
	if err == nil {
		err = unix.Stat("/proc/self/ns/mnt", &own)
	}
	if err == nil && st.Ino == own.Ino && st.Dev == own.Dev {
		err = errors.New("the sandbox's init shares codecell's mount namespace")
	}
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("the sandbox's mount namespace: %w", err)
	}
	return ns, nil
}

// mounter is the thread that joins sandboxes' mount namespaces
// (inMountNamespace): one goroutine locked to its thread for as long as
// the process lives. The thread is never let go and never ends. Let go,
// it would run other goroutines outside codecell's filesystem context
// (its working directory and root are its own, unshared); ended, it would
// take with it every sandbox a goroutine on it had started before it was
// locked, as bubblewrap's parent-death signal follows the thread that
// forked it, not the process.
var mounter struct {
	once sync.Once
	reqs chan mountRequest
	err  error // why there is none
}

type mountRequest struct {
	ns   *os.File
	f    func() error
	done chan error
}

// inMountNamespace runs f on the mounter's thread, joined to the mount
// namespace ns, then back in codecell's.
func inMountNamespace(ns *os.File, f func() error) error {
	mounter.once.Do(startMounter)
	if mounter.err != nil {
		return mounter.err
	}
	req := mountRequest{ns: ns, f: f, done: make(chan error, 1)}
	mounter.reqs <- req
	return <-req.done
}

func startMounter() {
	ready := make(chan error)
	reqs := make(chan mountRequest)
	onOwnThread(func() {
		own, err := os.Open("/proc/thread-self/ns/mnt")
		if err != nil {
			ready <- fmt.Errorf("codecell's mount namespace: %w", err)
			return
		}
		// A thread that shares its filesystem context (root, working
		// directory) with others cannot join a mount namespace.
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			own.Close()
			ready <- fmt.Errorf("unshare: %w", err)
			return
		}
		ready <- nil
		for req := range reqs {
			if err := unix.Setns(int(req.ns.Fd()), unix.CLONE_NEWNS); err != nil {
				req.done <- fmt.Errorf("setns: %w", err)
				continue
			}
			err := req.f()
			if berr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNS); berr != nil {
				// Stuck in the sandbox's namespace: no other sandbox is
				// mounted from here again.
				stuck := fmt.Errorf("back to codecell's mount namespace: %w", berr)
				req.done <- stuck
				for req := range reqs {
					req.done <- stuck
				}
			}
			req.done <- err
		}
	})
	mounter.err = <-ready
	mounter.reqs = reqs
}
