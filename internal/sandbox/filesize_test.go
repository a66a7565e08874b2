package sandbox

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// fileSizeCode writes n KiB to a workspace file and says how far it got.
func fileSizeCode(kb int) string {
	return fmt.Sprintf("import os\nn = 0\ntry:\n    with open('f', 'wb') as f:\n        for _ in range(%d):\n"+
		"            f.write(b'x' * 1024)\n            f.flush()\n            n += 1\nexcept OSError as e:\n"+
		"    print(e.errno)\nprint(n)\n", kb)
}

// TestFileSizeFromRequest: an execution writes no file larger than its
// request's FileSize (what is left of the workspace's quota), with EFBIG; in
// a session it is the soft limit, so a later execution may have more.
func TestFileSizeFromRequest(t *testing.T) {
	for _, level := range []Level{Development, Production, Hardened} {
		t.Run(string(level), func(t *testing.T) {
			m, ws := newTestManager(t, level, Limits{FileSize: 4 * mib}, 0)
			run := func(exec func(Request) *Result, fileSize int64, kb int, want string) {
				t.Helper()
				r := exec(Request{Workspace: ws, Code: fileSizeCode(kb), Timeout: 30 * time.Second, FileSize: fileSize})
				if !r.OK || r.Stdout != want {
					t.Fatalf("FileSize %d, writing %d KiB: ok=%v stdout %q, want %q (%+v)", fileSize, kb, r.OK, r.Stdout, want, r.Error)
				}
			}
			exec := func(req Request) *Result { return m.Exec(context.Background(), req) }
			run(exec, 64*kib, 100, "27\n64\n")
			run(exec, 0, 100, "100\n")     // the Manager's limit
			run(exec, 8*mib, 100, "100\n") // above the Manager's: the Manager's
			run(exec, 8*mib, 5000, "27\n4096\n")
			if level == Hardened {
				return // no sessions
			}
			s, err := m.OpenSession(context.Background(), Request{Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sexec := func(req Request) *Result { return s.Exec(context.Background(), req) }
			run(sexec, 64*kib, 100, "27\n64\n")
			run(sexec, 200*kib, 100, "100\n") // more left now: the soft limit goes up again
			run(sexec, 0, 5000, "27\n4096\n")
		})
	}
}
