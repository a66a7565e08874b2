package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func sessionExec(t *testing.T, s *Session, ws, code string) *Result {
	t.Helper()
	return s.Exec(context.Background(), Request{Workspace: ws, Code: code, Timeout: slack})
}

func TestSession(t *testing.T) {
	for _, level := range []Level{Development, Production} {
		t.Run(string(level), func(t *testing.T) {
			m, ws := newTestManager(t, level, Limits{}, 1)
			s, err := m.OpenSession(context.Background(), Request{Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			r := sessionExec(t, s, ws, "import os\nx = 41\ndef inc(v):\n    return v + 1\npid = os.getpid()\nresult = 'set'")
			if !r.OK || r.Result != "set" {
				t.Fatalf("first: %+v %+v", r, r.Error)
			}
			// Globals persist; a result left by the last cell does not count
			// again, the last expression does.
			r = sessionExec(t, s, ws, "print('x is', x)\ninc(x)")
			if !r.OK || r.Stdout != "x is 41\n" || !equalJSON(r.Result, 42.0) {
				t.Fatalf("second: ok=%v stdout=%q result=%v err=%+v", r.OK, r.Stdout, r.Result, r.Error)
			}
			// A cell that sets result again, even to the same object, returns it.
			r = sessionExec(t, s, ws, "result = result")
			if !r.OK || r.Result != "set" {
				t.Fatalf("result set again: %+v %+v", r.Result, r.Error)
			}
			r = sessionExec(t, s, ws, "import os\nos.getpid() == pid")
			if r.Result != true {
				t.Fatalf("not the same interpreter: %+v %+v", r.Result, r.Error)
			}
			// An error leaves the session alive.
			r = sessionExec(t, s, ws, "raise ValueError('boom')")
			if r.Error == nil || r.Error.Type != "ValueError" || !s.Alive() {
				t.Fatalf("error: %+v alive=%v", r.Error, s.Alive())
			}
			// Output goes to each execution's own pipes, stdout and stderr.
			r = sessionExec(t, s, ws, "import sys\nprint('out')\nprint('err', file=sys.stderr)\nx")
			if r.Stdout != "out\n" || r.Stderr != "err\n" || !equalJSON(r.Result, 41.0) {
				t.Fatalf("output: %q %q %v", r.Stdout, r.Stderr, r.Result)
			}

			// Killing its own interpreter ends the session with a clear error.
			r = sessionExec(t, s, ws, "import os\nos._exit(1)")
			if r.Error == nil || r.Error.Type != "SystemExit" || !strings.Contains(r.Error.Message, "state is lost") {
				t.Fatalf("os._exit: %+v", r.Error)
			}
			if s.Alive() {
				t.Fatal("session alive after its interpreter exited")
			}
			r = sessionExec(t, s, ws, "1")
			if r.Error == nil || !strings.Contains(r.Error.Message, ErrSessionEnded.Error()) {
				t.Fatalf("after end: %+v", r.Error)
			}
			// The manager still serves executions.
			if r := exec1(t, m, ws, "1+1", slack); !r.OK {
				t.Fatalf("manager after session: %+v", r.Error)
			}
		})
	}
}

func TestSessionTimeoutEndsIt(t *testing.T) {
	m, ws := newTestManager(t, Production, Limits{}, 0)
	s, err := m.OpenSession(context.Background(), Request{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := sessionExec(t, s, ws, "v = 1"); !r.OK {
		t.Fatal(r.Error)
	}
	r := s.Exec(context.Background(), Request{Workspace: ws, Code: "while True: pass", Timeout: time.Second})
	if r.Error == nil || r.Error.Type != ErrTimeout || !strings.Contains(r.Error.Message, "state is lost") {
		t.Fatalf("timeout: %+v", r.Error)
	}
	if s.Alive() {
		t.Fatal("alive after timeout")
	}
}

func TestSessionToolCallsAndNextExec(t *testing.T) {
	// Once the code has called the host, the runner's reply reader owns the
	// channel; the next exec frame must still reach the session.
	m, ws := newTestManager(t, Production, Limits{}, 0)
	s, err := m.OpenSession(context.Background(), Request{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := &echoHandler{}
	for i := 0; i < 3; i++ {
		r := s.Exec(context.Background(), Request{Workspace: ws, Timeout: slack, Calls: h,
			Code: "from codecell import _rpc\nn = globals().get('n', 0) + 1\n_rpc.request('tool', {'server': 's', 'tool': 't', 'arguments': {'n': n}})['structured']['n']"})
		if !r.OK || !equalJSON(r.Result, float64(i+1)) {
			t.Fatalf("exec %d: %+v %+v", i, r.Result, r.Error)
		}
	}
}

func TestSessionSerializesExecutions(t *testing.T) {
	m, ws := newTestManager(t, Development, Limits{}, 0)
	s, err := m.OpenSession(context.Background(), Request{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessionExec(t, s, ws, "log = []")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := sessionExec(t, s, ws, "import time\nlog.append('start')\ntime.sleep(0.05)\nlog.append('end')"); !r.OK {
				t.Error(r.Error)
			}
		}()
	}
	wg.Wait()
	r := sessionExec(t, s, ws, "log")
	b, _ := json.Marshal(r.Result)
	if string(b) != `["start","end","start","end","start","end","start","end"]` {
		t.Fatalf("interleaved: %s", b)
	}
}

func TestSessionHardenedRefused(t *testing.T) {
	m, err := New(Options{Level: Hardened, Python: python, StateDir: t.TempDir()})
	if err != nil {
		t.Skip(err)
	}
	defer m.Close()
	_, err = m.OpenSession(context.Background(), Request{Workspace: reachableTempDir(t)})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
}
