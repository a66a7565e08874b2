package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	tests := []struct {
		name      string
		mountinfo string
		self      string
		v2        string
		v1        map[string]string
	}{
		{
			name: "v1 with a unified tree of no controllers",
			mountinfo: `35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`,
			self: `9:name=systemd:/
8:pids:/
4:memory:/process_api/abc
1:cpu,cpuacct:/
0::/`,
			v2: "/sys/fs/cgroup/unified",
			v1: map[string]string{"memory": "/sys/fs/cgroup/memory/process_api/abc", "pids": "/sys/fs/cgroup/pids"},
		},
		{
			name:      "v2 delegated to a service",
			mountinfo: `30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot`,
			self:      "0::/system.slice/codecell.service\n",
			v2:        "/sys/fs/cgroup/system.slice/codecell.service",
			v1:        map[string]string{},
		},
		{
			name:      "a container's cgroup namespace: the mount's root is a subtree",
			mountinfo: `30 23 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw`,
			self:      "0::/kubepods/pod1/c1\n",
			v2:        "/sys/fs/cgroup/c1",
			v1:        map[string]string{},
		},
		{
			name:      "our cgroup is outside what is mounted",
			mountinfo: `30 23 0:26 /other /sys/fs/cgroup rw - cgroup2 cgroup2 rw`,
			self:      "0::/mine\n",
			v1:        map[string]string{},
		},
		{
			name:      "an escaped mount point",
			mountinfo: `30 23 0:26 / /mnt/cg\040two rw - cgroup2 cgroup2 rw`,
			self:      "0::/\n",
			v2:        "/mnt/cg two",
			v1:        map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v2, v1 := locate(tt.mountinfo, tt.self)
			if v2 != tt.v2 {
				t.Errorf("v2 = %q, want %q", v2, tt.v2)
			}
			if len(v1) != len(tt.v1) {
				t.Errorf("v1 = %v, want %v", v1, tt.v1)
			}
			for k, want := range tt.v1 {
				if v1[k] != want {
					t.Errorf("v1[%s] = %q, want %q", k, v1[k], want)
				}
			}
		})
	}
}

// hostOrSkip returns the host's hierarchy, or skips where it has none for
// codecell (no controller, not root, a shared v2 cgroup).
func hostOrSkip(t *testing.T) *Hierarchy {
	t.Helper()
	h, err := Host()
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Host: error %v does not wrap ErrUnavailable", err)
		}
		t.Skipf("no cgroup on this host: %v", err)
	}
	return h
}

// TestGroupBoundsProcessesTogether: four processes of 48 MiB each, every one
// well under a 96 MiB limit alone, cannot all hold their memory at once in
// one group: the kernel kills one, and OOMKills counts it.
func TestGroupBoundsProcessesTogether(t *testing.T) {
	h := hostOrSkip(t)
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("no %s", py)
	}
	g, err := h.New(Limits{Memory: 96 << 20, Pids: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	before := selfCgroups(t)
	// Each child answers a ping once it holds its memory; a child the
	// kernel killed answers with the end of its pipe.
	script := `
import os, time
kids = []
for i in range(4):
    ping_r, ping_w = os.pipe()
    pong_r, pong_w = os.pipe()
    if os.fork() == 0:
        os.close(ping_w); os.close(pong_r)
        os.close(1)  # the parent's stdout is what the test waits on
        block = b"x" * (48 << 20)  # written, so resident
        while os.read(ping_r, 1):
            os.write(pong_w, b"1")
        os._exit(0)
    os.close(ping_r); os.close(pong_w)
    kids.append((ping_w, pong_r))
for ping_w, pong_r in kids:
    try:
        os.write(ping_w, b"?")
    except BrokenPipeError:
        pass
    if os.read(pong_r, 1) != b"1":
        print("one was killed", flush=True)
        raise SystemExit(0)
print("all held", flush=True)
`
	cmd := exec.Command(py, "-I", "-c", script)
	out, err := startAndWait(g, cmd)
	if strings.Contains(out, "all held") {
		t.Fatalf("four processes of 48 MiB held their memory together under a 96 MiB group limit (err %v)", err)
	}
	if n := g.OOMKills(); n == 0 {
		t.Errorf("OOMKills = 0 after the group passed its limit (output %q, err %v)", out, err)
	}
	if after := selfCgroups(t); after != before {
		t.Errorf("the test's threads' cgroups changed: before\n%s\nafter\n%s", before, after)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, dir := range g.dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Close (%v)", dir, err)
		}
	}
}

// startAndWait starts cmd in g and waits for it; when one child is killed
// the others stay, so Close ends them after the parent is gone.
func startAndWait(g *Group, cmd *exec.Cmd) (string, error) {
	var out strings.Builder
	cmd.Stdout = &out
	if err := g.Start(cmd); err != nil {
		return "", err
	}
	err := cmd.Wait()
	return out.String(), err
}

// TestGroupUnderLimit: a process under the limit runs to its end, and a
// group's processes are all inside it.
func TestGroupUnderLimit(t *testing.T) {
	h := hostOrSkip(t)
	g, err := h.New(Limits{Memory: 256 << 20, Pids: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/cgroup; (cat /proc/self/cgroup)")
	out, err := startAndWait(g, cmd)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if n := strings.Count(out, g.name); n < 2 {
		t.Errorf("the process and its child are not both in %s:\n%s", g.name, out)
	}
	if g.OOMKills() != 0 {
		t.Errorf("OOMKills = %d for a process under the limit", g.OOMKills())
	}
	if g.Memory() < 0 {
		t.Errorf("Memory = %d", g.Memory())
	}
}

// TestCloseKillsWhatIsLeft: Close ends processes still in the group.
func TestCloseKillsWhatIsLeft(t *testing.T) {
	h := hostOrSkip(t)
	g, err := h.New(Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "sleep 1000 & sleep 1000")
	if err := g.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the group's process was not killed")
	}
	for _, dir := range g.dirs {
		if _, err := os.Stat(filepath.Join(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Close", dir)
		}
	}
}

// selfCgroups is every thread's cgroups of this process, as one string
// (each thread's, sorted away by being identical).
func selfCgroups(t *testing.T) string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var all []string
	for _, task := range tasks {
		data, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "cgroup"))
		if err != nil {
			continue // the thread ended
		}
		if !seen[string(data)] {
			seen[string(data)] = true
			all = append(all, string(data))
		}
	}
	return strings.Join(all, "--\n")
}

// TestNilGroupCountsNoKills: a sandbox without a cgroup asks a nil Group.
func TestNilGroupCountsNoKills(t *testing.T) {
	var g *Group
	if n := g.OOMKills(); n != 0 {
		t.Errorf("nil group: %d kills", n)
	}
}

// TestSetLimitsRaises: a group's limits rise after its first process
// started (a fork server's preload), on v1 too, where memory+swap must
// never be below memory, and fall back again.
func TestSetLimitsRaises(t *testing.T) {
	h := hostOrSkip(t)
	g, err := h.New(Limits{Memory: 64 << 20, Pids: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, mem := range []int64{256 << 20, 512 << 20, 128 << 20} {
		if err := g.SetLimits(Limits{Memory: mem, Pids: 32}); err != nil {
			t.Fatalf("to %d MiB: %v", mem>>20, err)
		}
		file := filepath.Join(g.dirs[""], "memory.max")
		if !h.v2 {
			file = filepath.Join(g.dirs["memory"], "memory.limit_in_bytes")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != strconv.FormatInt(mem, 10) {
			t.Errorf("%s is %s, want %d", file, got, mem)
		}
	}
}
