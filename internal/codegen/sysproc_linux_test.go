//go:build linux

package codegen

import (
	"os/exec"
	"syscall"
)

// isolate puts a test's python in its own process group, kills the group
// when the command's context ends and kills python if the test process
// dies.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
