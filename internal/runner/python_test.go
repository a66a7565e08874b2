//go:build linux

package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// python is the interpreter the runner's Python unit tests run with.
const python = "/usr/bin/python3"

// TestPythonUnits runs the unit tests of the runner's pure functions
// (python/tests, not embedded in the runner) with python -m unittest.
func TestPythonUnits(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s is not available (%v): the runner's Python tests cannot run", python, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// -I: no user site or PYTHON* variables; -B: no __pycache__ in the
	// source tree.
	cmd := exec.CommandContext(ctx, python, "-I", "-B", "-m", "unittest", "discover", "-s", "python/tests", "-t", "python/tests")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("python -m unittest: %v\n%s", err, out.String())
	}
	if testing.Verbose() {
		t.Logf("%s", out.String())
	}
}
