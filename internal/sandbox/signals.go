package sandbox

import (
	"syscall"

	"github.com/codecell/codecell/internal/proc"
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
	return proc.Tree(pid)[1:]
}

// syscallKillGroup kills a process group.
func syscallKillGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
