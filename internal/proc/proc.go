package proc

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// WaitDelay is the WaitDelay of a Cmd from [Command]: how long Wait waits,
// once the process has exited or ctx is done, for its output pipes to close
// before closing them itself. Without it, a grandchild that holds a pipe
// open keeps Wait from returning.
const WaitDelay = time.Second

// Command returns exec.CommandContext(ctx, name, arg...) set up so that the
// process
//   - runs in a process group of its own (Setpgid), whose id is its pid;
//   - is sent SIGKILL if the thread that started it dies (Pdeathsig), as it
//     does when codecell dies;
//   - is ended with its whole process group, by SIGKILL, when ctx is done
//     (Cancel);
//   - cannot keep Wait waiting on its pipes for longer than [WaitDelay].
//
// A caller may change these fields after Command returns, and must then
// say why beside the change. One that replaces SysProcAttr keeps Setpgid, or
// Cancel kills no group. A process that should live as long as something
// other than a context (an MCP server behind mcp.CommandTransport, a
// long-lived sandbox) is made with context.Background(); Cancel then never
// runs, and whoever owns it ends it.
//
// Pdeathsig follows the thread, not the process: Go may end a thread that a
// goroutine locked and did not unlock, and with it the child. codecell does
// not start processes from such goroutines.
func Command(ctx context.Context, name string, arg ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, arg...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return KillGroup(cmd) }
	cmd.WaitDelay = WaitDelay
	return cmd
}

// KillGroup sends SIGKILL to the process group of a started cmd, which
// [Command] made its leader.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
