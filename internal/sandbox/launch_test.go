package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStartsAwayFromMounts: production sandboxes start from the
// launcher's mount namespace, which what the host mounts once the Manager
// is made (other namespaces' workspaces) does not reach, and their
// workspace is mounted into them all the same.
func TestStartsAwayFromMounts(t *testing.T) {
	m, ws := launcherManager(t)
	other := reachableTempDir(t)
	if err := unix.Mount("tmpfs", other, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(other, unix.MNT_DETACH) })

	r := exec1(t, m, ws, "import os\nopen('made-inside', 'w').write('1')\nos.getcwd()", slack)
	if !r.OK || r.Result != WorkspaceMount {
		t.Fatalf("%+v %+v", r.Result, r.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, "made-inside")); err != nil {
		t.Fatalf("the file the code wrote is not in the workspace: %v", err)
	}
	// It comes back once its fork server has cleaned up.
	waitWarm(t, m, ws)
	tg := m.defaultTarget(ws)
	m.mu.Lock()
	z := m.idle[tg][0].(*zygote)
	m.mu.Unlock()
	if z.boundTo != ws {
		t.Fatalf("the sandbox was not started for no workspace and bound to %s (bound to %q)", ws, z.boundTo)
	}
	bw := strconv.Itoa(z.cmd.Process.Pid)
	table, err := os.ReadFile("/proc/" + bw + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(table), other) {
		t.Errorf("bubblewrap started in a namespace with the host's later mounts (%s):\n%s", other, table)
	}
	var own, its unix.Stat_t
	if unix.Stat("/proc/self/ns/mnt", &own) != nil || unix.Stat("/proc/"+bw+"/ns/mnt", &its) != nil || own.Ino == its.Ino {
		t.Errorf("bubblewrap started in codecell's own mount namespace")
	}
}

// TestOnOwnThreadNotMain: what onOwnThread runs is never on the process's
// main thread, whose namespaces /proc/self shows, however the runtime
// places the goroutine it starts.
func TestOnOwnThreadNotMain(t *testing.T) {
	pid := unix.Getpid()
	for range 300 {
		tid := make(chan int)
		onOwnThread(func() { tid <- unix.Gettid() })
		if <-tid == pid {
			t.Fatal("onOwnThread ran on the main thread")
		}
	}
}

// TestLauncherThreadOutlivesManager: the launcher's thread does not end
// with its Manager. A thread that ends kills what any goroutine forked
// from it before it was locked (a hardened sandbox's runsc, say: the
// fresh-clone CI saw one killed two seconds into its execution when
// another test's Manager closed).
func TestLauncherThreadOutlivesManager(t *testing.T) {
	m, _ := launcherManager(t)
	tid := m.launch.tid
	m.Close()
	time.Sleep(100 * time.Millisecond) // an ending thread is gone by then
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); err != nil {
		t.Fatalf("the launcher's thread ended with its Manager: %v", err)
	}
}

// TestStartsWithoutLauncher: once the launcher serves no more (closed, or
// its thread stuck in a cgroup), sandboxes start from codecell's own
// namespace and serve; once mounting into a sandbox is off (a host that
// cannot), they start with their workspace bound, as before the launcher.
func TestStartsWithoutLauncher(t *testing.T) {
	for _, how := range []string{"launcher closed", "mounting off"} {
		t.Run(how, func(t *testing.T) {
			m, ws := launcherManager(t)
			if how == "launcher closed" {
				m.launch.close()
				if ran, _ := m.launch.start(exec.Command("/bin/true"), nil); ran {
					t.Fatal("a closed launcher started a command")
				}
			} else {
				m.mu.Lock()
				m.unbound.off = unix.EPERM
				m.mu.Unlock()
			}
			if r := exec1(t, m, ws, "import os\nopen('x', 'w').write('1')\nos.getcwd()", slack); !r.OK || r.Result != WorkspaceMount {
				t.Fatalf("%+v %+v", r.Result, r.Error)
			}
			if _, err := os.Stat(filepath.Join(ws, "x")); err != nil {
				t.Fatal(err)
			}
			waitWarm(t, m, ws)
			tg := m.defaultTarget(ws)
			m.mu.Lock()
			z := m.idle[tg][0].(*zygote)
			m.mu.Unlock()
			if how == "mounting off" && z.boundTo != "" {
				t.Fatalf("the sandbox was mounted into (%s), not started with its workspace", z.boundTo)
			}
		})
	}
}

// launcherManager is a production Manager with a launcher (root only).
func launcherManager(t *testing.T) (*Manager, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the launcher needs root")
	}
	m, ws := newTestManager(t, Production, Limits{}, 1)
	if m.launch == nil {
		t.Fatal("no launcher")
	}
	return m, ws
}
