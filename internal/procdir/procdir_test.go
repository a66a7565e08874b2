package procdir

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for another codecell process: with
// PROCDIR_HELPER set it claims a directory under that parent, prints its
// path and holds it until its stdin closes or it is killed.
func TestMain(m *testing.M) {
	if parent := os.Getenv("PROCDIR_HELPER"); parent != "" {
		d, err := Claim(parent)
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(d.Path() + "\n")
		os.Stdin.Read(make([]byte, 1))
		d.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// otherProcess starts a process that holds a directory under parent, and
// returns it, the directory's path and its stdin, whose closing makes it
// release the directory and exit.
func otherProcess(t *testing.T, parent string) (*exec.Cmd, string, io.Closer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROCDIR_HELPER="+parent)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the other process claimed nothing: %v", err)
	}
	return cmd, strings.TrimSpace(line), stdin
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func names(t *testing.T, parent string) []string {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestLiveAndDead: a live process's directory survives another's Claim; once
// that process is killed (no clean-up of its own), the next Claim removes
// it. A clean Release removes the directory at once.
func TestLiveAndDead(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "proc")
	cmd, theirs, _ := otherProcess(t, parent)
	if filepath.Dir(theirs) != parent || !exists(filepath.Join(theirs, lockName)) {
		t.Fatalf("the other process's directory %s", theirs)
	}

	mine, err := Claim(parent)
	if err != nil {
		t.Fatal(err)
	}
	if mine.Path() == theirs || !strings.HasPrefix(filepath.Base(theirs), fmt.Sprintf("%d-", cmd.Process.Pid)) {
		t.Fatalf("mine %s, theirs %s (pid %d)", mine.Path(), theirs, cmd.Process.Pid)
	}
	if !exists(theirs) {
		t.Fatal("Claim removed the directory of a live process")
	}
	if info, err := os.Stat(mine.Path()); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("mode of %s: %v %v, want 0755 (a sandbox user reaches the mounts in it)", mine.Path(), info.Mode(), err)
	}

	cmd.Process.Kill()
	cmd.Wait()
	again, err := Claim(parent)
	if err != nil {
		t.Fatal(err)
	}
	if exists(theirs) {
		t.Error("Claim left the directory of a killed process")
	}
	if !exists(mine.Path()) {
		t.Error("Claim removed the directory this process holds")
	}

	for _, d := range []*Dir{mine, again} {
		if err := d.Release(); err != nil {
			t.Fatal(err)
		}
		if exists(d.Path()) {
			t.Errorf("%s is there after Release", d.Path())
		}
		if err := d.Release(); err != nil {
			t.Errorf("a second Release: %v", err)
		}
	}
	if got := names(t, parent); len(got) != 0 {
		t.Errorf("left under the parent: %q", got)
	}
}

// TestCleanExit: a process that releases its directory leaves nothing.
func TestCleanExit(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "proc")
	cmd, theirs, stdin := otherProcess(t, parent)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if exists(theirs) {
		t.Errorf("%s is there after its process released it and exited", theirs)
	}
}

// TestSweep: directories whose lock is free or missing go; one still being
// made stays until it is old enough to be abandoned; other files stay.
func TestSweep(t *testing.T) {
	parent := t.TempDir()
	mk := func(name string, lock bool) string {
		p := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(p, "gen"), 0o755); err != nil {
			t.Fatal(err)
		}
		if lock {
			if err := os.WriteFile(filepath.Join(p, lockName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	mk("1-dead", true)
	mk("2-nolock", false)
	young := mk(newPrefix+"young", true)
	old := mk(newPrefix+"old", false)
	long := time.Now().Add(-2 * abandonedAfter)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "stray-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := Claim(parent) // sweeps first
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	got := names(t, parent)
	want := []string{filepath.Base(held.Path()), filepath.Base(young), "stray-file"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("after the sweep: %q, want %q", got, want)
	}
	if n := Sweep(parent); n != 0 || !exists(held.Path()) {
		t.Errorf("a second sweep removed %d, and the held directory exists: %v", n, exists(held.Path()))
	}
}
