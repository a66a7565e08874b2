package proc

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestTree: the kernel's children lists and a scan of every process's
// parent find the same descendants, grandchildren included.
func TestTree(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 60 & (sleep 60 & wait) & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, p := range treeByScan(cmd.Process.Pid) {
			syscall.Kill(p, syscall.SIGKILL)
		}
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	var scan []int
	for deadline := time.Now().Add(10 * time.Second); len(scan) < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tree did not grow to 4 processes: %v", scan)
		}
		scan = treeByScan(pid)
	}
	walk, ok := treeByChildren(pid)
	if !ok {
		t.Skip("this kernel keeps no children lists")
	}
	slices.Sort(scan)
	slices.Sort(walk)
	if !slices.Equal(scan, walk) {
		t.Fatalf("children lists give %v, the scan %v", walk, scan)
	}
	if got := Tree(pid); len(got) != 4 || got[0] != pid {
		t.Fatalf("Tree = %v", got)
	}
}

// BenchmarkTree: a sandbox's tree found from the children lists, against
// a scan of every process (what a sandbox's first measure reads).
func BenchmarkTree(b *testing.B) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 60 & (sleep 60 & wait) & wait")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, p := range treeByScan(cmd.Process.Pid) {
			syscall.Kill(p, syscall.SIGKILL)
		}
		cmd.Wait()
	}()
	time.Sleep(100 * time.Millisecond)
	b.Run("children", func(b *testing.B) {
		for b.Loop() {
			treeByChildren(cmd.Process.Pid)
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			treeByScan(cmd.Process.Pid)
		}
	})
}
