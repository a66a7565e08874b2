package server

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/store"
)

// sessionServer is a server on a real development-level sandbox manager
// (sessions need a live interpreter) with a store, and a client on it.
func sessionServer(t *testing.T) (*Server, *store.Store, *mcp.ClientSession) {
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
	s, cs := newTestServer(t, func(o *Options) {
		o.Config.Sandbox.Isolation = "development"
		o.Executor, o.Store = mgr, st
	})
	return s, st, cs
}

// TestSessionsConcurrentStartAndRecords: calls that start one new id at once
// share one session, and the store holds a record of each live session
// from its start to its end.
func TestSessionsConcurrentStartAndRecords(t *testing.T) {
	s, st, cs := sessionServer(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	pids := make([]any, 4)
	var startedMu sync.Mutex
	started := 0
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
			if out.SessionStarted {
				startedMu.Lock()
				started++
				startedMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if started != 1 {
		t.Errorf("%d results say they started the session, want 1", started)
	}
	for _, p := range pids[1:] {
		if p != pids[0] {
			t.Fatalf("one new id started several interpreters: %v", pids)
		}
	}
	if list := s.sessions.list(context.Background(), DefaultNamespace); len(list) != 1 || list[0].Executions != 4 {
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

// TestSessionStartedIsSaid: a call that starts its session says so, in the
// structured result and first in the text, so that a mistyped id's NameError
// has its explanation next to it.
func TestSessionStartedIsSaid(t *testing.T) {
	_, _, cs := sessionServer(t)
	run := func(code, id string) (ExecuteCodeOutput, string) {
		res := runTool(t, cs, "execute_code", map[string]any{"code": code, "session_id": id})
		var out ExecuteCodeOutput
		structured(t, res, &out)
		return out, textOf(res)
	}
	notice := `[new session "work" started: names defined by earlier calls are not in it]`
	out, text := run("x = 41", "work")
	if !out.OK || !out.SessionStarted || !strings.HasPrefix(text, notice+"\n") {
		t.Fatalf("first call: %+v\n%s", out, text)
	}
	out, text = run("x + 1", "work")
	if !out.OK || out.SessionStarted || out.Result != 42.0 || strings.Contains(text, "new session") {
		t.Fatalf("second call: %+v\n%s", out, text)
	}
	out, text = run("x + 1", "wrok")
	if out.OK || out.Error.Type != "NameError" || !out.SessionStarted ||
		!strings.HasPrefix(text, `[new session "wrok" started`) || !strings.Contains(text, "NameError: name 'x' is not defined") {
		t.Fatalf("a mistyped id: %+v\n%s", out, text)
	}
	// A fresh process without a session says nothing of sessions.
	res := runTool(t, cs, "execute_code", map[string]any{"code": "1"})
	if strings.Contains(textOf(res), "session") {
		t.Fatalf("no session: %s", textOf(res))
	}
	var raw map[string]any
	structured(t, res, &raw)
	if _, ok := raw["session_started"]; ok {
		t.Fatalf("session_started without a session: %v", raw)
	}
}

// TestRenderedErrorKeepsTheHint: the text of a ModuleNotFoundError says how
// to install the module, as the structured error's message does (the
// traceback, written by Python, does not).
func TestRenderedErrorKeepsTheHint(t *testing.T) {
	_, _, cs := sessionServer(t)
	res := runTool(t, cs, "execute_code", map[string]any{"code": "import no_such_module_xyz"})
	var out ExecuteCodeOutput
	structured(t, res, &out)
	hint := "to install it, call install_dependencies with packages=['no_such_module_xyz']"
	if out.Error == nil || out.Error.Type != "ModuleNotFoundError" || !strings.Contains(out.Error.Message, hint) {
		t.Fatalf("structured error: %+v", out.Error)
	}
	text := textOf(res)
	if !strings.Contains(text, "ModuleNotFoundError: No module named 'no_such_module_xyz'\nhint: "+hint) {
		t.Fatalf("text lacks the hint:\n%s", text)
	}
}

// TestSyntaxErrorText: a SyntaxError reads as Python prints it, without a
// stray "hint: (<cell>, line 1)" line (issue #30); a shell or notebook
// line, which new users paste, says what to do instead.
func TestSyntaxErrorText(t *testing.T) {
	_, _, cs := sessionServer(t)
	res := runTool(t, cs, "execute_code", map[string]any{"code": "x = 1\ndef f(:\n    pass"})
	text := strings.TrimSuffix(textOf(res), "[isolation: development, no sandbox]\n")
	if !strings.HasSuffix(text, "  File \"<cell>\", line 2\n    def f(:\n          ^\nSyntaxError: invalid syntax\n") || strings.Contains(text, "hint") {
		t.Errorf("def f(: %q", text)
	}
	var out ExecuteCodeOutput
	structured(t, res, &out)
	if out.Error == nil || out.Error.Message != "invalid syntax (<cell>, line 2)" {
		t.Errorf("def f(: structured error %+v", out.Error)
	}
	text = strings.TrimSuffix(textOf(runTool(t, cs, "execute_code", map[string]any{"code": "!pip install pandas"})), "[isolation: development, no sandbox]\n")
	if !strings.HasSuffix(text, "SyntaxError: invalid syntax\nhint: codecell runs Python, not shell commands: to install packages, call install_dependencies with packages=['pandas'] (after configure_environment with type venv)\n") {
		t.Errorf("!pip install: %q", text)
	}
}

func TestRenderError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  sandbox.ExecError
		want string
	}{
		{"no traceback", sandbox.ExecError{Type: "Timeout", Message: "ran past 30s"}, "Timeout: ran past 30s\n"},
		{"message in the traceback", sandbox.ExecError{Type: "ValueError", Message: "bad", Traceback: "Traceback (most recent call last):\n  File \"<cell>\", line 1\nValueError: bad\n"},
			"Traceback (most recent call last):\n  File \"<cell>\", line 1\nValueError: bad\n"},
		{"a hint added to the message", sandbox.ExecError{Type: "ModuleNotFoundError", Message: "No module named 'x'; to install it, call ...", Traceback: "Traceback:\nModuleNotFoundError: No module named 'x'\n"},
			"Traceback:\nModuleNotFoundError: No module named 'x'\nhint: to install it, call ...\n"},
		{"a SyntaxError's location is in the traceback already", sandbox.ExecError{Type: "SyntaxError", Message: "invalid syntax (<cell>, line 1)", Traceback: "  File \"<cell>\", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n"},
			"  File \"<cell>\", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n"},
		{"a SyntaxError's hint", sandbox.ExecError{Type: "SyntaxError", Message: "invalid syntax (<cell>, line 1); codecell runs Python, not shell commands", Traceback: "SyntaxError: invalid syntax\n"},
			"SyntaxError: invalid syntax\nhint: codecell runs Python, not shell commands\n"},
		{"a hint after a colon", sandbox.ExecError{Type: "RuntimeError", Message: "can't start new thread: sandbox.pids = 64 is reached", Traceback: "Traceback:\nRuntimeError: can't start new thread\n"},
			"Traceback:\nRuntimeError: can't start new thread\nhint: sandbox.pids = 64 is reached\n"},
		{"a message unlike the traceback's", sandbox.ExecError{Type: "MemoryLimit", Message: "the code ran out of its memory limit", Traceback: "Traceback:\nMemoryError"},
			"Traceback:\nMemoryError\nMemoryLimit: the code ran out of its memory limit\n"},
	} {
		var b strings.Builder
		renderError(&b, &tc.err)
		if b.String() != tc.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, b.String(), tc.want)
		}
	}
}

// TestSessionElsewhere: with replicas on one database, a call that starts a
// session whose id another replica's records hold says where the old one
// was, so that a reconnected client does not take the new interpreter for
// its old one.
func TestSessionElsewhere(t *testing.T) {
	mgr, err := sandbox.New(sandbox.Options{Level: sandbox.Development, Python: "/usr/bin/python3", StateDir: t.TempDir(), PoolSize: 1})
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { mgr.Close() })
	path := filepath.Join(t.TempDir(), "codecell.db")
	open := func(replica string) *store.Store {
		st, err := store.OpenWith(store.Options{Path: path, Replica: replica})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	other := open("r1")
	if err := other.TouchSession(context.Background(), DefaultNamespace, "s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	_, cs := newTestServer(t, func(o *Options) {
		o.Config.Sandbox.Isolation = "development"
		o.Executor, o.Store, o.Replica = mgr, open("r2"), "r2"
	})
	for _, tc := range []struct{ id, want string }{{"s1", "r1"}, {"s2", ""}} {
		res := runTool(t, cs, "execute_code", map[string]any{"code": "x = 1", "session_id": tc.id})
		var out ExecuteCodeOutput
		structured(t, res, &out)
		if !out.SessionStarted || out.SessionElsewhere != tc.want {
			t.Errorf("%s: started %v, elsewhere %q; want %q", tc.id, out.SessionStarted, out.SessionElsewhere, tc.want)
		}
		if said := strings.Contains(textOf(res), `last seen on replica "r1"`); said != (tc.want != "") {
			t.Errorf("%s: text %q", tc.id, textOf(res))
		}
	}
	// Once started here, later calls do not repeat it.
	res := runTool(t, cs, "execute_code", map[string]any{"code": "x", "session_id": "s1"})
	var out ExecuteCodeOutput
	structured(t, res, &out)
	if out.SessionStarted || out.SessionElsewhere != "" || out.Result != float64(1) {
		t.Errorf("second call: %+v", out)
	}
}
