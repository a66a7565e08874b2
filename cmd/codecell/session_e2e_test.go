package main

import (
	"strings"
	"testing"
	"time"
)

// TestSessions drives sessions through the MCP server with production
// isolation: state persists, errors keep the session, os._exit ends it with
// a clear error and the id starts over, the cap and the idle expiry hold,
// and unknown or malformed ids are refused.
func TestSessions(t *testing.T) {
	requireProduction(t)
	cs := connectStdio(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "20s"},
		"sessions": {"maxPerNamespace": 2, "idleTimeout": "3s"}}`)

	run := func(session, code string) (bool, any, string, string) {
		t.Helper()
		res, out := call(t, cs, map[string]any{"code": code, "session_id": session})
		errType := ""
		if out.Error != nil {
			errType = out.Error.Type + ": " + out.Error.Message
		}
		if out.SessionID != session {
			t.Errorf("session_id in result = %q, want %q", out.SessionID, session)
		}
		_ = res
		return out.OK, out.Result, out.Stdout, errType
	}

	if ok, _, _, e := run("a", "import os\ncounter = 1\npid = os.getpid()"); !ok {
		t.Fatal(e)
	}
	if ok, r, _, e := run("a", "counter += 1\ncounter"); !ok || r != 2.0 {
		t.Fatalf("state did not persist: %v %v", r, e)
	}
	if ok, _, _, e := run("a", "undefined_name"); ok || !strings.HasPrefix(e, "NameError") {
		t.Fatalf("NameError expected, got %v", e)
	}
	if ok, r, _, e := run("a", "import os\n(counter, os.getpid() == pid)"); !ok || r.([]any)[0] != 2.0 || r.([]any)[1] != true {
		t.Fatalf("after an error: %v %v", r, e)
	}
	// A second session does not see the first one's globals.
	if ok, r, _, e := run("b", "'counter' in globals()"); !ok || r != false {
		t.Fatalf("session b sees a's globals: %v %v", r, e)
	}

	// The cap: a and b are open, a third is refused with a clear error.
	res, _ := callTool(t, cs, "execute_code", map[string]any{"code": "1", "session_id": "c"})
	if !res.IsError || !strings.Contains(textOf(res), "limit") {
		t.Fatalf("third session: %s", textOf(res))
	}
	_, list := callTool(t, cs, "list_sessions", map[string]any{})
	if n := len(list["sessions"].([]any)); n != 2 {
		t.Fatalf("list_sessions: %v", list)
	}
	if res, _ := callTool(t, cs, "close_session", map[string]any{"session_id": "b"}); res.IsError {
		t.Fatal(textOf(res))
	}
	if ok, _, _, e := run("c", "1"); !ok {
		t.Fatalf("c after closing b: %v", e)
	}

	// Code that kills its own interpreter: a clear error, then a new start.
	if ok, _, _, e := run("a", "import os\nos._exit(1)"); ok || !strings.Contains(e, "state is lost") {
		t.Fatalf("os._exit: %v", e)
	}
	if ok, r, _, e := run("a", "'counter' in globals()"); !ok || r != false {
		t.Fatalf("restarted session: %v %v", r, e)
	}

	// Bad and unknown ids.
	for _, id := range []string{"has space", "../x", strings.Repeat("x", 200)} {
		res, _ := callTool(t, cs, "execute_code", map[string]any{"code": "1", "session_id": id})
		if !res.IsError || !strings.Contains(textOf(res), "session_id") {
			t.Errorf("id %q: %s", id, textOf(res))
		}
	}
	res, _ = callTool(t, cs, "close_session", map[string]any{"session_id": "nope"})
	if !res.IsError || !strings.Contains(textOf(res), `no session "nope"`) {
		t.Fatalf("close unknown: %s", textOf(res))
	}

	// Idle expiry: after 3 s unused, the sessions are gone.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, list = callTool(t, cs, "list_sessions", map[string]any{})
		if len(list["sessions"].([]any)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions not expired: %v", list)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ok, r, _, e := run("c", "'counter' in globals()"); !ok || r != false {
		t.Fatalf("expired session: %v %v", r, e)
	}
}
