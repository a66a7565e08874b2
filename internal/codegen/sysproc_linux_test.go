//go:build linux

package codegen

import "syscall"

// sysProcAttr puts a test's python in its own process group and kills it if
// the test process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
