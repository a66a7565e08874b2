package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/seccomp"
	"github.com/codecell/codecell/internal/workspace"
)

// The quota's limits in these tests: small, so that every pattern runs
// into them in a moment; the file size limit stays the default 256 MiB,
// far above the quota, as the issue that asked for a hard quota found it.
const (
	testQuota   = 8 << 20
	testEntries = 1000
)

// reachableDir is a t.TempDir that a sandbox running as nobody can reach.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o711)
	os.Chmod(dir, 0o711)
	return dir
}

// quotaServer is a server on a real sandbox manager at level, whose
// workspaces are images (the kernel enforces the quota) or plain
// directories (the watcher does); it skips where the host cannot.
func quotaServer(t *testing.T, level sandbox.Level, images workspace.ImageMode) (*mcp.ClientSession, *Server) {
	t.Helper()
	cs, s, _ := realServer(t, level, images, nil)
	return cs, s
}

// realServer is quotaServer with its manager, whose Options mod (if not
// nil) changes before the server is made.
func realServer(t *testing.T, level sandbox.Level, images workspace.ImageMode, mod func(*Options)) (*mcp.ClientSession, *Server, *sandbox.Manager) {
	t.Helper()
	if err := sandbox.Check(context.Background(), level, "/usr/bin/python3"); err != nil {
		t.Skipf("%s unavailable: %v", level, err)
	}
	prog, err := seccomp.Program()
	if err != nil {
		t.Fatal(err)
	}
	dataDir := reachableDir(t)
	t.Cleanup(func() { unmountAll(dataDir) })
	mgr, err := sandbox.New(sandbox.Options{Level: level, Python: "/usr/bin/python3", StateDir: reachableDir(t), Seccomp: prog, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	opts := workspace.VolumeOptions{Quota: testQuota, MaxEntries: testEntries, Images: images}
	if mgr.HostUser() == "nobody" {
		opts.Owner = sandbox.UID
	}
	if images != workspace.ImagesOff {
		if err := workspace.ProbeImages(t.TempDir()); err != nil {
			mgr.Close()
			t.Skipf("workspace images unavailable: %v", err)
		}
	}
	vols, err := workspace.NewVolumes(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the server's Close
		mgr.Close()
		vols.Close() // after the sandboxes: it unmounts
	})
	s, cs := newTestServer(t, func(o *Options) {
		o.Config.Sandbox.Isolation = string(level)
		o.Config.Sandbox.WorkspaceQuota, o.Config.Sandbox.WorkspaceEntries = testQuota, testEntries
		o.Config.PII.Mode = "off"
		o.Executor, o.Volumes, o.DataDir = mgr, vols, dataDir
		if mod != nil {
			mod(o)
		}
	})
	return cs, s, mgr
}

// unmountAll detaches the images left mounted beneath dir by a test that
// failed half way.
func unmountAll(dir string) {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			syscall.Unmount(f[4], syscall.MNT_DETACH)
		}
	}
}

func execute(t *testing.T, cs *mcp.ClientSession, code string, extra ...any) ExecuteCodeOutput {
	t.Helper()
	args := map[string]any{"code": code, "timeout_seconds": 60}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: args})
	if err != nil {
		t.Fatalf("execute_code: %v", err)
	}
	var out ExecuteCodeOutput
	structured(t, res, &out)
	return out
}

func usageNow(t *testing.T, cs *mcp.ClientSession) *WorkspaceUsage {
	t.Helper()
	var l ListWorkspaceFilesOutput
	mustCall(t, cs, "list_workspace_files", map[string]any{"pattern": "nothing-matches"}, &l)
	if l.Usage == nil {
		t.Fatal("list_workspace_files gives no usage")
	}
	return l.Usage
}

// writePatterns are the ways code can try to fill its workspace past the
// quota; each tries to write far past it.
var writePatterns = []struct {
	name string
	code string
}{
	{"one big file", `
with open('big', 'wb') as f:
    for _ in range(64):
        f.write(b'x' * 2**20)
`},
	{"many small files", `
for i in range(100000):
    with open('f%d' % i, 'wb') as f:
        f.write(b'x' * 4096)
`},
	{"directories", `
import os
for i in range(100000):
    os.mkdir('d%d' % i)
`},
	{"symlinks", `
import os
for i in range(100000):
    os.symlink('t' * (1 + i % 3000), 'l%d' % i)
`},
	{"path longer than PATH_MAX", `
import os
fd = os.open('.', os.O_RDONLY)
depth = 0
while depth * 201 <= 4096 + 400:
    name = '%03d' % depth + 'd' * 197
    os.mkdir(name, dir_fd=fd)
    fd2 = os.open(name, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = fd2
    depth += 1
for i in range(1000):
    f = os.open('f%d' % i, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
    for _ in range(16):
        os.write(f, b'x' * 2**16)
    os.close(f)
`},
	{"file unlinked while open", `
import os
f = open('ghost', 'wb')
os.unlink('ghost')
for _ in range(64):
    f.write(b'x' * 2**20)
    f.flush()
`},
	// A plain directory's index cannot see these (they have no name), so
	// there only the quota left bounds each, and their space comes back
	// when the execution's processes end; an image counts them.
	{"files unlinked while open", `
import os
files = []
for i in range(64):
    f = open('ghost%d' % i, 'wb')
    os.unlink('ghost%d' % i)
    files.append(f)
    f.write(b'x' * 2**20)
    f.flush()
`},
}

// cleanCode empties the workspace, long paths included.
const cleanCode = `
import os, shutil
for name in os.listdir('.'):
    if os.path.isdir(name) and not os.path.islink(name):
        shutil.rmtree(name)
    else:
        os.unlink(name)
print(len(os.listdir('.')))
`

// TestQuotaPatterns: whatever the write pattern, the quota holds: in an
// image the write past it fails in the code with an OSError (ENOSPC, or
// EFBIG at the file size the quota left) and the workspace never passes
// it; in a plain directory the write past it fails the same way or the
// execution is stopped with WorkspaceQuota and what it wrote past the
// quota removed. After each, the workspace reports its usage, and the next
// execution runs and writes.
func TestQuotaPatterns(t *testing.T) {
	if testing.Short() {
		t.Skip("fills workspaces in real sandboxes")
	}
	for _, mode := range []struct {
		name   string
		level  sandbox.Level
		images workspace.ImageMode
	}{
		{"image", sandbox.Production, workspace.ImagesOn},
		{"directory", sandbox.Production, workspace.ImagesOff},
		{"image under gVisor", sandbox.Hardened, workspace.ImagesOn},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cs, _ := quotaServer(t, mode.level, mode.images)
			for _, p := range writePatterns {
				t.Run(p.name, func(t *testing.T) {
					start := time.Now()
					out := execute(t, cs, p.code)
					u := usageNow(t, cs)
					if out.OK || out.Error == nil {
						if mode.images == workspace.ImagesOff && p.name == "files unlinked while open" && u.Bytes < testQuota {
							t.Logf("%s: not seen in a plain directory, as documented; released after: %+v", p.name, u)
							execute(t, cs, cleanCode)
							return
						}
						t.Fatalf("the code wrote past the quota unhindered: %+v", out)
					}
					t.Logf("%s in %s: %s: %+v: %.300s", p.name, time.Since(start).Round(time.Millisecond), out.Error.Type, u, out.Error.Message)
					switch {
					case out.Error.Type == "OSError":
						if !strings.Contains(out.Error.Message, "[Errno 28]") && !strings.Contains(out.Error.Message, "[Errno 27]") {
							t.Errorf("an OSError that is not ENOSPC or EFBIG: %s", out.Error.Message)
						}
						if !strings.Contains(out.Error.Message, "quota") && !strings.Contains(p.name, "unlinked") {
							t.Errorf("the error does not name the quota: %s", out.Error.Message)
						}
					case out.Error.Type == ErrWorkspaceQuota && mode.images == workspace.ImagesOff:
						if !strings.Contains(out.Error.Message, "limits") || !strings.Contains(out.Error.Message, "undone") {
							t.Errorf("the error does not say what happened: %s", out.Error.Message)
						}
					default:
						t.Fatalf("error %s: %s", out.Error.Type, out.Error.Message)
					}
					// Hard: never past the quota in an image; in a directory,
					// what was written past it is gone once the execution ends.
					if u.Bytes > testQuota || u.Entries > testEntries+16 {
						t.Errorf("the workspace holds %d bytes and %d entries: past the quota", u.Bytes, u.Entries)
					}
					if mode.images == workspace.ImagesOn && u.Enforcement != "kernel" || mode.images == workspace.ImagesOff && u.Enforcement != "watcher" {
						t.Errorf("enforcement %q", u.Enforcement)
					}
					// The namespace works: the next execution runs, and
					// once room is made, writes.
					if next := execute(t, cs, "print('next')"); !next.OK || next.Stdout != "next\n" {
						t.Fatalf("the next execution: %+v", next)
					}
					if c := execute(t, cs, cleanCode); !c.OK || c.Stdout != "0\n" {
						t.Fatalf("emptying the workspace: %+v", c)
					}
					w := execute(t, cs, "open('after.txt', 'w').write('ok')")
					if !w.OK || len(w.Files) != 1 || w.Files[0] != "after.txt" {
						t.Fatalf("a write after: %+v", w)
					}
					execute(t, cs, cleanCode)
				})
			}
		})
	}
}

// TestQuotaBreachKeepsNamespace: in a plain directory, an execution that
// passes the quota ends with an error naming it, what it wrote past the
// quota is removed (what it wrote before stays), and the namespace goes on:
// the next execution runs and writes, get_execution_stats and
// list_workspace_files say where the workspace stands; a session that
// passed it ends, and its id starts a new one.
func TestQuotaBreachKeepsNamespace(t *testing.T) {
	cs, s := quotaServer(t, sandbox.Production, workspace.ImagesOff)
	out := execute(t, cs, "open('before.txt', 'w').write('kept')")
	if !out.OK {
		t.Fatalf("first: %+v", out.Error)
	}
	out = execute(t, cs, `
with open('early.bin', 'wb') as f:
    f.write(b'e' * 2**20)
for i in range(100000):
    with open('f%05d' % i, 'wb') as f:
        f.write(b'x' * 8192)
`)
	if out.OK || out.Error.Type != ErrWorkspaceQuota || !strings.Contains(out.Error.Message, "entries it created removed") {
		t.Fatalf("the breach: %+v", out.Error)
	}
	u := usageNow(t, cs)
	if u.Bytes > testQuota {
		t.Fatalf("after the breach the workspace holds %d bytes, quota %d", u.Bytes, testQuota)
	}
	for _, p := range []string{"before.txt", "early.bin"} {
		if _, err := os.Stat(filepath.Join(s.Workspace(DefaultNamespace), p)); err != nil {
			t.Errorf("%s, written before the quota was passed, is gone: %v", p, err)
		}
	}
	next := execute(t, cs, "import os\nfor n in os.listdir('.'):\n    n.startswith('f') and os.unlink(n)\nopen('after.txt', 'w').write('ok')\nprint(sorted(os.listdir('.')))")
	if !next.OK || next.Stdout != "['after.txt', 'before.txt', 'early.bin']\n" {
		t.Fatalf("the next execution: %+v %+v", next, next.Error)
	}

	// A session: the breach ends it, its id starts a new interpreter.
	execute(t, cs, "x = 1", "session_id", "s")
	out = execute(t, cs, "for i in range(100000):\n    open('s%05d' % i, 'wb').write(b'x' * 8192)", "session_id", "s")
	if out.OK || out.Error.Type != ErrWorkspaceQuota || !strings.Contains(out.Error.Message, "state is lost") {
		t.Fatalf("the breach in a session: %+v", out.Error)
	}
	out = execute(t, cs, "import os\n[os.unlink(n) for n in os.listdir('.') if n.startswith('s')]\n'x' in globals()", "session_id", "s")
	if !out.OK || out.Result != false {
		t.Fatalf("the session after: %+v %+v", out, out.Error)
	}

	if u := usageNow(t, cs); u.Quota != testQuota || u.MaxEntries != testEntries || u.Bytes <= 0 || u.Bytes > testQuota {
		t.Errorf("usage %+v", u)
	}
	var l ListWorkspaceFilesOutput
	text := mustCall(t, cs, "list_workspace_files", map[string]any{}, &l)
	if !strings.Contains(text, fmt.Sprintf("of %s", "8.00 MiB")) {
		t.Errorf("list_workspace_files does not say the quota: %q", text)
	}
}
