//go:build !linux

package codegen

import "os/exec"

// isolate does nothing where process groups and Pdeathsig are not at hand:
// the context still kills python, and the checker ends when its standard
// input closes.
func isolate(cmd *exec.Cmd) {}
