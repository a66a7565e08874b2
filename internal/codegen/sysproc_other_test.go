//go:build !linux

package codegen

import "syscall"

// sysProcAttr returns nil where Pdeathsig does not exist: the checker still
// ends when its standard input closes.
func sysProcAttr() *syscall.SysProcAttr { return nil }
