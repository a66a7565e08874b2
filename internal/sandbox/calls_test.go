package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoHandler answers "tool" calls with their arguments as structured
// content, after sleeping "sleep" seconds if asked; tool "fail" is a tool
// error.
type echoHandler struct{ calls atomic.Int32 }

func (h *echoHandler) HandleCall(ctx context.Context, method string, params json.RawMessage) (any, error) {
	h.calls.Add(1)
	var p struct {
		Server, Tool string
		Arguments    map[string]any
	}
	json.Unmarshal(params, &p)
	if method != "tool" {
		return nil, &CallError{Kind: "ValueError", Message: "unknown method " + method}
	}
	if p.Tool == "fail" {
		return nil, &CallError{Kind: "ToolError", Message: "it failed", Data: map[string]string{"server": p.Server, "tool": p.Tool}}
	}
	if s, ok := p.Arguments["sleep"].(float64); ok {
		select {
		case <-time.After(time.Duration(s * float64(time.Second))):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return map[string]any{"structured": p.Arguments}, nil
}

func TestCallsToHost(t *testing.T) {
	for _, level := range Levels {
		t.Run(string(level), func(t *testing.T) {
			m, ws := newTestManager(t, level, Limits{}, 1)
			run := func(code string, max int) (*Result, *echoHandler) {
				h := &echoHandler{}
				return m.Exec(context.Background(), Request{Workspace: ws, Code: code, Timeout: 30 * time.Second, Calls: h, MaxToolCalls: max}), h
			}
			r, _ := run("from codecell import _rpc\n_rpc.call('s', 't', {'x': [1, 'é']})", 0)
			if !r.OK || toJSON(r.Result) != `{"x":[1,"é"]}` {
				t.Fatalf("echo: %+v %v", r.Error, r.Result)
			}
			r, _ = run("from codecell import _rpc, ToolError\ntry:\n    _rpc.call('s', 'fail', {})\nexcept ToolError as e:\n    result = [e.server, e.tool, e.message]", 0)
			if !r.OK || toJSON(r.Result) != `["s","fail","it failed"]` {
				t.Fatalf("tool error: %+v %v", r.Error, r.Result)
			}
			// An uncaught tool error shows the user's line and servers.ToolError,
			// not codecell's frames.
			r, _ = run("from codecell import _rpc\ndef f():\n    _rpc.call('s', 'fail', {})\nf()", 0)
			if r.OK || r.Error.Type != "ToolError" {
				t.Fatalf("uncaught tool error: %+v", r.Error)
			}
			tb := r.Error.Traceback
			for _, want := range []string{"    f()\n", "    _rpc.call('s', 'fail', {})\n", "servers.ToolError: s.fail: it failed\n"} {
				if !strings.Contains(tb, want) {
					t.Errorf("traceback lacks %q:\n%s", want, tb)
				}
			}
			for _, bad := range []string{"_rpc.py", "codecell._rpc", "codecell_runner"} {
				if strings.Contains(tb, bad) {
					t.Errorf("traceback shows %q:\n%s", bad, tb)
				}
			}
			// Ten calls of 0.3 s from threads overlap: far less than 3 s.
			r, _ = run("import time\nfrom concurrent.futures import ThreadPoolExecutor\nfrom codecell import _rpc\nt0 = time.monotonic()\nwith ThreadPoolExecutor(10) as p:\n    list(p.map(lambda i: _rpc.call('s', 't', {'sleep': 0.3}), range(10)))\ntime.monotonic() - t0", 0)
			if !r.OK || r.Result.(float64) > 1.5 {
				t.Fatalf("concurrent calls: %+v %v", r.Error, r.Result)
			}
			r, h := run("from codecell import _rpc\nfor i in range(10):\n    _rpc.call('s', 't', {})", 4)
			if r.OK || r.Error.Type != ErrToolCallLimit || h.calls.Load() != 4 {
				t.Fatalf("limit: %+v, %d calls answered", r.Error, h.calls.Load())
			}
			// Without a handler the code gets a clear error, not a hang.
			r = m.Exec(context.Background(), Request{Workspace: ws, Code: "from codecell import _rpc\n_rpc.call('s', 't', {})", Timeout: 30 * time.Second})
			if r.OK || !strings.Contains(r.Error.Message, "cannot call the host") {
				t.Fatalf("no handler: %+v", r.Error)
			}
		})
	}
}
