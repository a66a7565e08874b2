package sandbox

import "syscall"

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
