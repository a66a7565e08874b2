package server

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/store"
)

// sessionServer is a server on a real development-level sandbox manager
// (sessions need a live interpreter) with a store.
func sessionServer(t *testing.T) (*Server, *store.Store) {
	t.Helper()
	mgr, err := sandbox.New(sandbox.Options{Level: sandbox.Development, Python: "/usr/bin/python3", StateDir: t.TempDir(), PoolSize: 1})
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { mgr.Close() })
	st, err := store.Open(filepath.Join(t.TempDir(), "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := allTools(config.Default())
	cfg.Sandbox.Isolation = "development"
	s, err := New(Options{Config: cfg, Executor: mgr, Store: st, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, st
}

// TestSessionsConcurrentStartAndRecords: calls that start one new id at once
// share one session, and the store holds a record of each live session
// from its start to its end.
func TestSessionsConcurrentStartAndRecords(t *testing.T) {
	s, st := sessionServer(t)
	cs := connectClient(t, s)
	ctx := context.Background()
	var wg sync.WaitGroup
	pids := make([]any, 4)
	for i := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := runTool(t, cs, "execute_code", map[string]any{"code": "import os\nos.getpid()", "session_id": "p"})
			var out ExecuteCodeOutput
			structured(t, res, &out)
			if !out.OK {
				t.Errorf("exec %d: %+v", i, out.Error)
			}
			pids[i] = out.Result
		}()
	}
	wg.Wait()
	for _, p := range pids[1:] {
		if p != pids[0] {
			t.Fatalf("one new id started several interpreters: %v", pids)
		}
	}
	if list := s.sessions.list(DefaultNamespace); len(list) != 1 || list[0].Executions != 4 {
		t.Fatalf("sessions: %+v", list)
	}
	recs, err := st.ListSessions(ctx, DefaultNamespace)
	if err != nil || len(recs) != 1 || recs[0].ID != "p" {
		t.Fatalf("records of live sessions: %+v %v", recs, err)
	}
	if res := runTool(t, cs, "close_session", map[string]any{"session_id": "p"}); res.IsError {
		t.Fatal(textOf(res))
	}
	if recs, _ := st.ListSessions(ctx, DefaultNamespace); len(recs) != 0 {
		t.Fatalf("record left after close: %+v", recs)
	}
}
