package proc

import (
	"bytes"
	"os"
	"strconv"
	"sync"
)

// Tree lists pid and its live descendants: from the kernel's lists of
// each thread's children (a few reads), or where it keeps none
// (CONFIG_PROC_CHILDREN), from the parent links of every process in /proc.
func Tree(pid int) []int {
	if out, ok := treeByChildren(pid); ok {
		return out
	}
	return treeByScan(pid)
}

// treeByChildren walks /proc/<pid>/task/<tid>/children down from pid; ok
// is false when the kernel has no such lists.
func treeByChildren(pid int) (out []int, ok bool) {
	if !haveChildren() {
		return nil, false
	}
	out = []int{pid}
	seen := map[int]bool{pid: true} // a pid reused meanwhile could make a cycle
	for i := 0; i < len(out); i++ {
		dir := "/proc/" + strconv.Itoa(out[i]) + "/task/"
		tasks, _ := os.ReadDir(dir)
		for _, t := range tasks {
			b, _ := os.ReadFile(dir + t.Name() + "/children")
			for f := range bytes.FieldsSeq(b) {
				if c, err := strconv.Atoi(string(f)); err == nil && !seen[c] {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out, true
}

// haveChildren says whether the kernel keeps children lists.
var haveChildren = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	return err == nil
})

// treeByScan finds pid's descendants from the parent links of every
// process (one read of each one's stat: a few milliseconds with hundreds of
// processes).
func treeByScan(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 2 || string(f[0]) == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		children[ppid] = append(children[ppid], p)
	}
	// The reads are not one snapshot: a pid reused meanwhile could make a
	// cycle of parent links, which seen keeps from looping.
	out := []int{pid}
	seen := map[int]bool{pid: true}
	for i := 0; i < len(out); i++ {
		for _, c := range children[out[i]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// PSS is the proportional set size of a process in bytes (its private
// memory plus its share of what it shares), from smaps_rollup; 0 when it
// is gone or cannot be read.
func PSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("Pss:")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// TreePSS is the PSS of pid and its descendants together, and how many
// processes they are.
func TreePSS(pid int) (pss int64, procs int) {
	for _, p := range Tree(pid) {
		pss += PSS(p)
		procs++
	}
	return pss, procs
}
