package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/seccomp"
)

// TestWorkspaceQuota: code that fills its workspace with many files, each
// under the file size limit, is stopped near the quota; the next execution
// is refused until files are deleted.
func TestWorkspaceQuota(t *testing.T) {
	if err := Check(context.Background(), Production, python); err != nil {
		t.Skipf("production unavailable: %v", err)
	}
	prog, err := seccomp.Program()
	if err != nil {
		t.Fatal(err)
	}
	const quota = 16 << 20
	m, err := New(Options{Level: Production, Python: python, StateDir: reachableTempDir(t), Seccomp: prog,
		Limits: Limits{FileSize: 1 << 20}, WorkspaceQuota: quota})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ws := filepath.Join(reachableTempDir(t), "ws")
	code := "i = 0\nwhile True:\n    with open('f%d' % i, 'wb') as f:\n        f.write(b'x' * (1 << 20))\n    i += 1\n"
	r := m.Exec(context.Background(), Request{Workspace: ws, Code: code, Timeout: 60 * time.Second})
	if r.OK || r.Error.Type != ErrKilled || !strings.Contains(r.Error.Message, "quota") {
		t.Fatalf("filling the workspace: %+v", r.Error)
	}
	used := usage(ws)
	t.Logf("stopped with %d MiB in a %d MiB workspace quota after %s", used>>20, quota>>20, r.Duration)
	// Between two looks, and while the sandbox is killed, the code writes
	// what the disk takes in that time (about 100 MiB here); without the
	// quota it would write until its 60 s timeout.
	if used > 1<<30 {
		t.Fatalf("the workspace grew to %d bytes", used)
	}
	r = m.Exec(context.Background(), Request{Workspace: ws, Code: "print(1)", Timeout: slack})
	if r.OK || !strings.Contains(r.Error.Message, "over its quota") {
		t.Fatalf("an execution in a full workspace: %+v", r.Error)
	}
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		os.Remove(filepath.Join(ws, e.Name()))
	}
	if r := m.Exec(context.Background(), Request{Workspace: ws, Code: "print(1)", Timeout: slack}); !r.OK {
		t.Fatalf("after deleting files: %+v", r.Error)
	}
}
