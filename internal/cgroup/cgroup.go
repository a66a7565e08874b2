package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/codecell/codecell/internal/mountinfo"
)

// ErrUnavailable is the error of Host on a host where codecell cannot make
// cgroups; its message says why.
var ErrUnavailable = errors.New("no cgroup for the sandboxes")

// Limits bound one group. Zero fields mean no limit.
type Limits struct {
	Memory int64 // bytes the group's processes hold together (RAM; no swap beyond it)
	Pids   int   // processes and threads at once
}

// Hierarchy is where codecell makes its groups. It is safe for concurrent
// use.
type Hierarchy struct {
	v2 bool
	// dirs maps each controller in use to the directory groups are made
	// in. v2 has one tree for all of them, under the key "".
	dirs map[string]string
	// own maps each v1 controller to codecell's own cgroup in it, where the
	// thread that starts a group's first process goes back to.
	own    map[string]string
	swap   bool // the memory controller also bounds swap
	pids   bool // a pids controller is in use
	prefix string
	seq    atomic.Uint64
}

var (
	hostOnce sync.Once
	host     *Hierarchy
	hostErr  error
)

// Host finds, once per process, where codecell can make cgroups on this host
// and prepares it. The error wraps ErrUnavailable and says why not.
func Host() (*Hierarchy, error) {
	hostOnce.Do(func() {
		host, hostErr = open()
		if hostErr != nil {
			hostErr = fmt.Errorf("%w: %v", ErrUnavailable, hostErr)
		}
	})
	return host, hostErr
}

// String says which cgroups the groups are made in, for doctor and logs.
func (h *Hierarchy) String() string {
	if h.v2 {
		ctl := "memory"
		if h.pids {
			ctl += ", pids"
		}
		return fmt.Sprintf("cgroup v2 (%s) under %s", ctl, h.dirs[""])
	}
	s := "cgroup v1 memory"
	if h.swap {
		s += "+swap"
	}
	s += " under " + h.dirs["memory"]
	if h.pids {
		s += ", pids under " + h.dirs["pids"]
	}
	return s
}

func open() (*Hierarchy, error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	v2dir, v1dirs := locate(string(mountinfo), string(self))
	var why []string
	if v2dir != "" {
		h, err := openV2(v2dir)
		if err == nil {
			return h, nil
		}
		why = append(why, "cgroup v2: "+err.Error())
	} else {
		why = append(why, "cgroup v2: not mounted")
	}
	if v1dirs["memory"] != "" {
		h, err := openV1(v1dirs)
		if err == nil {
			return h, nil
		}
		why = append(why, "cgroup v1: "+err.Error())
	} else {
		why = append(why, "cgroup v1: no memory controller mounted")
	}
	return nil, errors.New(strings.Join(why, "; "))
}

// locate finds codecell's own cgroup directories from /proc/self/mountinfo
// and /proc/self/cgroup: the v2 one ("" when there is none reachable) and
// each v1 controller's.
func locate(mountinfoText, self string) (v2 string, v1 map[string]string) {
	paths := map[string]string{} // controller ("" for v2) -> our path in that hierarchy
	for _, line := range strings.Split(self, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			paths[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	v1 = map[string]string{}
	mounts, _ := mountinfo.Parse(strings.NewReader(mountinfoText))
	for _, m := range mounts {
		root, point, fstype, super := m.Root, m.Point, m.FSType, m.Super
		switch fstype {
		case "cgroup2":
			if p, ok := paths[""]; ok && v2 == "" {
				if dir, ok := under(point, root, p); ok {
					v2 = dir
				}
			}
		case "cgroup":
			for _, opt := range strings.Split(super, ",") {
				if opt != "memory" && opt != "pids" {
					continue
				}
				if p, ok := paths[opt]; ok && v1[opt] == "" {
					if dir, ok := under(point, root, p); ok {
						v1[opt] = dir
					}
				}
			}
		}
	}
	return v2, v1
}

// under is the directory of cgroup path p in a hierarchy whose root is
// mounted at point; false when the mount does not show p.
func under(point, root, p string) (string, bool) {
	if root == "/" {
		return filepath.Join(point, p), true
	}
	if p == root {
		return point, true
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return filepath.Join(point, rest), true
	}
	return "", false
}

// supervisorLeaf is the cgroup v2 leaf codecell moves itself into, so that
// its own cgroup may hand controllers to the sandboxes' (v2 allows no
// process in a cgroup that does, but in the root).
const supervisorLeaf = "codecell-supervisor"

func openV2(dir string) (*Hierarchy, error) {
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	have := strings.Fields(string(ctl))
	if !slices.Contains(have, "memory") {
		return nil, fmt.Errorf("the memory controller is not available in %s (cgroup.controllers: %q); delegate it to codecell (systemd: Delegate=yes)", dir, strings.TrimSpace(string(ctl)))
	}
	want := "+memory"
	pids := slices.Contains(have, "pids")
	if pids {
		want += " +pids"
	}
	subtree := filepath.Join(dir, "cgroup.subtree_control")
	if err := os.WriteFile(subtree, []byte(want), 0); err != nil {
		if !errors.Is(err, syscall.EBUSY) {
			return nil, fmt.Errorf("enable controllers in %s: %w", dir, err)
		}
		// Processes in dir: if they are all codecell's, codecell moves
		// into a leaf of its own and tries again.
		procs, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if rerr != nil {
			return nil, rerr
		}
		me := strconv.Itoa(os.Getpid())
		for _, p := range strings.Fields(string(procs)) {
			if p != me {
				return nil, fmt.Errorf("%s holds processes other than codecell (%s); give codecell a cgroup of its own (systemd: Delegate=yes)", dir, p)
			}
		}
		leaf := filepath.Join(dir, supervisorLeaf)
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(me), 0); err != nil {
			return nil, fmt.Errorf("move codecell into %s: %w", leaf, err)
		}
		if err := os.WriteFile(subtree, []byte(want), 0); err != nil {
			return nil, fmt.Errorf("enable controllers in %s: %w", dir, err)
		}
	}
	h := &Hierarchy{v2: true, dirs: map[string]string{"": dir}, pids: pids}
	h.init()
	if err := h.probe(); err != nil {
		return nil, err
	}
	return h, nil
}

func openV1(dirs map[string]string) (*Hierarchy, error) {
	h := &Hierarchy{dirs: map[string]string{"memory": dirs["memory"]}, own: map[string]string{"memory": dirs["memory"]}}
	if _, err := os.Stat(filepath.Join(dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
		h.swap = true
	}
	if d := dirs["pids"]; d != "" {
		if _, err := os.Stat(filepath.Join(d, "tasks")); err == nil {
			h.dirs["pids"], h.own["pids"], h.pids = d, d, true
		}
	}
	h.init()
	if err := h.probe(); err != nil {
		if h.pids {
			// The pids hierarchy may be the one not writable: go on
			// without it.
			delete(h.dirs, "pids")
			delete(h.own, "pids")
			h.pids = false
			if h.probe() == nil {
				return h, nil
			}
		}
		return nil, err
	}
	return h, nil
}

func (h *Hierarchy) init() {
	h.prefix = fmt.Sprintf("codecell-%d-", os.Getpid())
	h.removeStale()
}

// probe makes and removes a group, to learn whether codecell may.
func (h *Hierarchy) probe() error {
	g, err := h.New(Limits{Memory: 64 << 20, Pids: 16})
	if err != nil {
		return err
	}
	return g.Close()
}

// removeStale removes the empty groups a codecell that is gone left behind.
func (h *Hierarchy) removeStale() {
	for _, dir := range h.dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), "codecell-")
			if !ok || !e.IsDir() {
				continue
			}
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
				continue
			}
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
