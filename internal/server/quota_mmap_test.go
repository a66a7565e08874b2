package server

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/workspace"
)

// mapSparse makes six sparse files of 6 MiB (36 MiB in all, against the
// 8 MiB quota) and keeps them mapped shared in the session's globals; no
// byte is stored yet, so they take almost nothing.
const mapSparse = `
import mmap, os
maps = []
for i in range(6):
    fd = os.open('%s%d' % (prefix, i), os.O_CREAT | os.O_RDWR, 0o644)
    os.ftruncate(fd, 6 << 20)
    maps.append(mmap.mmap(fd, 6 << 20, mmap.MAP_SHARED))
    os.close(fd)

def store():
    for m in maps:
        for off in range(0, len(m), 4096):
            m[off] = 1
`

// diskUsage is what the entries beneath dir take on disk, as du counts.
func diskUsage(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return nil
	})
	return n
}

// checkDiskUsage checks that list_workspace_files says what the disk does,
// and that both are under the quota.
func checkDiskUsage(t *testing.T, s *Server, u *WorkspaceUsage) {
	t.Helper()
	disk := diskUsage(t, s.Workspace(DefaultNamespace))
	if u.Bytes != disk || disk > testQuota {
		t.Errorf("list_workspace_files says %d bytes, the disk %d; quota %d", u.Bytes, disk, testQuota)
	}
}

// TestQuotaMappedStores (issue #28, item 11): in a plain directory, a
// session that stores through shared mappings into sparse files, which no
// inotify event reports, is the one stopped with WorkspaceQuota: its
// stores are punched out again and the session ends. Stores a session's
// thread makes between executions are undone before the next one begins,
// which, in another session, runs unhindered. Either way the usage listed
// is what the disk holds.
func TestQuotaMappedStores(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a workspace in a real sandbox")
	}
	cs, s := quotaServer(t, sandbox.Production, workspace.ImagesOff)

	out := execute(t, cs, "prefix = 'run'\n"+mapSparse, "session_id", "mapper")
	if !out.OK {
		t.Fatalf("mapping: %+v", out.Error)
	}
	if u := usageNow(t, cs); u.Bytes > 1<<20 {
		t.Fatalf("sparse files take %d bytes before any store", u.Bytes)
	}
	out = execute(t, cs, "store()\nprint('stored')", "session_id", "mapper")
	if out.OK || out.Error == nil || out.Error.Type != ErrWorkspaceQuota {
		t.Fatalf("36 MiB stored through mappings past an 8 MiB quota: %+v %+v (disk %d bytes)", out, out.Error, diskUsage(t, s.Workspace(DefaultNamespace)))
	}
	if !strings.Contains(out.Error.Message, "undone") || !strings.Contains(out.Error.Message, "state is lost") {
		t.Errorf("the error does not say what happened: %s", out.Error.Message)
	}
	t.Logf("the storing session: %s", out.Error.Message)
	checkDiskUsage(t, s, usageNow(t, cs))
	if next := execute(t, cs, "'maps' in globals()", "session_id", "mapper"); !next.OK || next.Result != false {
		t.Errorf("the session after its breach: %+v %+v", next, next.Error)
	}
	innocent := execute(t, cs, "open('innocent.txt', 'w').write('ok')", "session_id", "other")
	if !innocent.OK {
		t.Fatalf("an innocent execution after: %+v", innocent.Error)
	}
	checkDiskUsage(t, s, usageNow(t, cs))

	// Between executions: a thread of the session stores once its
	// execution has ended.
	// (The file size limit is what the quota leaves when an execution
	// begins: the workspace is emptied first.)
	if c := execute(t, cs, cleanCode); !c.OK {
		t.Fatalf("emptying the workspace: %+v", c.Error)
	}
	out = execute(t, cs, "prefix = 'idle'\n"+mapSparse+`
import threading, time
def later():
    time.sleep(1)
    store()
    open('stored', 'w').close()
threading.Thread(target=later, daemon=True).start()
`, "session_id", "threaded")
	if !out.OK {
		t.Fatalf("mapping: %+v", out.Error)
	}
	// Once it is done (it says so with a file), so that no store comes
	// after the next execution began: those would be that one's.
	waitFor(t, 30*time.Second, "the thread did not store", func() bool {
		_, err := os.Stat(filepath.Join(s.Workspace(DefaultNamespace), "stored"))
		return err == nil
	})
	if disk := diskUsage(t, s.Workspace(DefaultNamespace)); disk <= testQuota {
		t.Fatalf("the thread's stores take %d bytes, under the quota", disk)
	}
	innocent = execute(t, cs, "open('innocent2.txt', 'w').write('ok')\nprint('ran')", "session_id", "bystander")
	if !innocent.OK || innocent.Stdout != "ran\n" {
		t.Fatalf("an innocent execution was blamed for another session's stores: %+v %+v", innocent, innocent.Error)
	}
	checkDiskUsage(t, s, usageNow(t, cs))
}
