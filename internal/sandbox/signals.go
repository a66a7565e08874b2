package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

const (
	sigXCPU = int(syscall.SIGXCPU)
	sigXFSZ = int(syscall.SIGXFSZ)
)

var signalNames = map[int]string{
	int(syscall.SIGKILL): "SIGKILL",
	int(syscall.SIGSEGV): "SIGSEGV",
	int(syscall.SIGABRT): "SIGABRT",
	int(syscall.SIGBUS):  "SIGBUS",
	int(syscall.SIGTERM): "SIGTERM",
	int(syscall.SIGSYS):  "SIGSYS",
	int(syscall.SIGXCPU): "SIGXCPU",
	int(syscall.SIGXFSZ): "SIGXFSZ",
}

// killDescendants SIGKILLs every live process below pid, in rounds until a
// scan of /proc finds none, so that children forked during one round die in
// the next. Development needs it: there is no PID namespace to end at once.
// The zygote is a child subreaper, so orphans stay below it while it lives.
func killDescendants(pid int) {
	for range 100 {
		below := descendantsOf(pid)
		if len(below) == 0 {
			return
		}
		for _, p := range below {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// descendantsOf lists the live (not zombie) processes below pid, from the
// parent links in /proc.
func descendantsOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := make(map[int]int, len(entries))
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[p] = pp
		}
	}
	var below []int
	for p := range parent {
		for q, hops := parent[p], 0; q > 1 && hops < 1000; q, hops = parent[q], hops+1 {
			if q == pid {
				below = append(below, p)
				break
			}
		}
	}
	return below
}

// syscallKillGroup kills a process group.
func syscallKillGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
