package proc_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/proc"
)

func TestCommandAttributes(t *testing.T) {
	cmd := proc.Command(context.Background(), "/bin/true")
	if a := cmd.SysProcAttr; a == nil || !a.Setpgid || a.Pdeathsig != syscall.SIGKILL {
		t.Errorf("SysProcAttr = %+v, want Setpgid and Pdeathsig SIGKILL", a)
	}
	if cmd.Cancel == nil {
		t.Error("Cancel is nil")
	}
	if cmd.WaitDelay <= 0 {
		t.Errorf("WaitDelay = %v, want > 0", cmd.WaitDelay)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
}

// TestCancelKillsGroup starts a shell whose child holds stdout open; on
// cancel, the whole group dies and Wait returns promptly.
func TestCancelKillsGroup(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := proc.Command(ctx, "/bin/sh", "-c", "sleep 60 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("child pid %q: %v", buf[:n], err)
	}
	if pgid, _ := syscall.Getpgid(child); pgid != cmd.Process.Pid {
		t.Errorf("child's group = %d, want the leader's pid %d", pgid, cmd.Process.Pid)
	}
	cancel()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after cancel")
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); strings.Contains(string(b), ") Z ") {
			break // a zombie awaiting its reaper is dead
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d outlived its group's cancel", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
