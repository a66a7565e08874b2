package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is one cgroup (in v1, one per controller in use) holding one
// sandbox's processes. Its methods are safe for concurrent use, but Start
// is called once.
type Group struct {
	h    *Hierarchy
	name string
	dirs map[string]string // controller ("" for v2) -> this group's directory
	fd   int               // v2: the group's directory, for CLONE_INTO_CGROUP; -1 otherwise
	// memory is the memory limit set last (0: none yet); SetLimits only
	// raises it.
	memory int64

	// events is the file that counts OOM kills (memory.events, or v1's
	// memory.oom_control), kept open: a sandbox reads it twice per
	// execution, and opening a cgroup file cost about 45 us each time.
	events *os.File

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
	finalOOM  atomic.Uint64 // OOMKills when Close began
}

// New makes a group with limits l. The caller starts its first process with
// Start and removes it with Close.
func (h *Hierarchy) New(l Limits) (*Group, error) {
	g := &Group{h: h, name: h.prefix + strconv.FormatUint(h.seq.Add(1), 10), dirs: map[string]string{}, fd: -1}
	for ctl, parent := range h.dirs {
		dir := filepath.Join(parent, g.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.Close()
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		g.dirs[ctl] = dir
	}
	if err := g.limit(l); err != nil {
		g.Close()
		return nil, err
	}
	if h.v2 {
		fd, err := unix.Open(g.dirs[""], unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("open cgroup: %w", err)
		}
		g.fd = fd
	}
	events := filepath.Join(g.dirs[""], "memory.events")
	if !h.v2 {
		events = filepath.Join(g.dirs["memory"], "memory.oom_control")
	}
	var err error
	if g.events, err = os.Open(events); err != nil {
		g.Close()
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	return g, nil
}

// SetLimits changes the group's limits, for what its first process turned
// out to need of its own (a fork server's preloaded modules).
func (g *Group) SetLimits(l Limits) error { return g.limit(l) }

func (g *Group) limit(l Limits) error {
	type setting struct{ ctl, file, value string }
	var set []setting
	mem := "max"
	if l.Memory > 0 {
		mem = strconv.FormatInt(l.Memory, 10)
	}
	pids := "max"
	if l.Pids > 0 {
		pids = strconv.Itoa(l.Pids)
	}
	if g.h.v2 {
		set = append(set, setting{"", "memory.max", mem})
		if g.h.pids {
			set = append(set, setting{"", "pids.max", pids})
		}
		// No swap beyond the limit, where the kernel accounts swap.
		if _, err := os.Stat(filepath.Join(g.dirs[""], "memory.swap.max")); err == nil {
			set = append(set, setting{"", "memory.swap.max", "0"})
		}
	} else {
		if l.Memory > 0 {
			ram := setting{"memory", "memory.limit_in_bytes", mem}
			set = append(set, ram)
			if g.h.swap {
				// RAM and swap together: the same limit means no swap.
				// The kernel keeps memsw at least the RAM limit, so a
				// limit that rises (SetLimits) raises memsw first.
				both := setting{"memory", "memory.memsw.limit_in_bytes", mem}
				if g.memory > 0 && l.Memory > g.memory {
					set = []setting{both, ram}
				} else {
					set = append(set, both)
				}
			}
		}
		if g.h.pids {
			set = append(set, setting{"pids", "pids.max", pids})
		}
	}
	for _, s := range set {
		if err := os.WriteFile(filepath.Join(g.dirs[s.ctl], s.file), []byte(s.value), 0); err != nil {
			return fmt.Errorf("set cgroup %s: %w", s.file, err)
		}
	}
	g.memory = l.Memory
	return nil
}

// Start starts cmd with its process inside the group from its first
// instruction, so every process it makes is inside too. cmd.SysProcAttr may
// be set; Start adds to it.
func (g *Group) Start(cmd *exec.Cmd) error {
	if g.h.v2 {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = g.fd
		return cmd.Start()
	}
	// cgroup v1 has no CLONE_INTO_CGROUP, but lets one thread move alone:
	// the thread that forks goes into the group, forks, and comes back.
	// It is locked to this goroutine meanwhile, so nothing else of codecell
	// runs on it (and memory is charged to the process's group, not the
	// thread's). Should it fail to come back, the child is killed and the
	// goroutine waits forever, locked: given back, the thread would run
	// other goroutines in the group; ended, it would take with it every
	// process forked from it before (their parent-death signal follows
	// the thread).
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		stuck, err := g.StartLocked(cmd)
		errc <- err
		if stuck {
			select {}
		}
		runtime.UnlockOSThread()
	}()
	return <-errc
}

// StartLocked is Start for a caller whose goroutine is locked to its
// thread (runtime.LockOSThread) and that must fork from that thread (its
// namespaces are the child's). With cgroup v1 the thread itself goes into
// the group and back; stuck says it could not come back, and is still in
// the group: the caller must not run anything more on it (nor let it end
// while the processes it started live, as their parent-death signal
// follows it).
func (g *Group) StartLocked(cmd *exec.Cmd) (stuck bool, err error) {
	if g.h.v2 {
		return false, g.Start(cmd)
	}
	tid := strconv.Itoa(unix.Gettid())
	err = g.moveThread(tid, g.dirs)
	if err == nil {
		err = cmd.Start()
	}
	if berr := g.moveThread(tid, g.h.own); berr != nil {
		if err == nil && cmd.Process != nil {
			cmd.Process.Kill()
			err = fmt.Errorf("leave cgroup: %w", berr)
		}
		return true, err
	}
	return false, err
}

func (g *Group) moveThread(tid string, dirs map[string]string) error {
	for ctl, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(tid), 0); err != nil {
			return fmt.Errorf("move thread into cgroup %s: %w", ctl, err)
		}
	}
	return nil
}

// OOMKills counts the processes of the group the kernel has killed for
// passing its memory limit. After Close it returns the count Close found;
// a nil Group (a sandbox without a cgroup) counts none.
func (g *Group) OOMKills() uint64 {
	if g == nil {
		return 0 // no cgroup: the kernel kills nothing for it
	}
	if g.closed.Load() {
		return g.finalOOM.Load()
	}
	return g.readOOMKills()
}

func (g *Group) readOOMKills() uint64 {
	if g.events == nil {
		return 0
	}
	var buf [512]byte // either file is a few short lines
	n, err := g.events.ReadAt(buf[:], 0)
	if n == 0 && err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(buf[:n]))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// Memory returns the bytes the group's processes hold now (page cache
// included).
func (g *Group) Memory() int64 {
	file := filepath.Join(g.dirs[""], "memory.current")
	if !g.h.v2 {
		file = filepath.Join(g.dirs["memory"], "memory.usage_in_bytes")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// closeWait bounds how long Close waits for the group's killed processes to
// leave it.
const closeWait = 5 * time.Second

// Close kills every process left in the group and removes it. Later calls
// return the first one's error.
func (g *Group) Close() error {
	g.closeOnce.Do(func() { g.closeErr = g.remove() })
	return g.closeErr
}

func (g *Group) remove() error {
	g.finalOOM.Store(g.readOOMKills())
	g.closed.Store(true)
	if g.fd >= 0 {
		unix.Close(g.fd)
	}
	if g.events != nil {
		g.events.Close()
	}
	deadline := time.Now().Add(closeWait)
	var errs []error
	for _, dir := range g.dirs {
		for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
			g.killAll(dir)
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
				break
			}
			time.Sleep(delay)
		}
	}
	return errors.Join(errs...)
}

// killAll sends SIGKILL to every process in the group directory dir.
func (g *Group) killAll(dir string) {
	if g.h.v2 && os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
