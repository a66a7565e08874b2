package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// echoHandler answers "tool" calls with their arguments as structured
// content; tool "fail" is a tool error. A call with the argument
// "together": n is answered only once n such calls are in the handler at
// the same time (or when its execution ends).
type echoHandler struct {
	calls    atomic.Int32
	together atomic.Int32
	metOnce  sync.Once
	met      chan struct{} // closed when "together" calls have all arrived
}

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
	if n, ok := p.Arguments["together"].(float64); ok {
		h.metOnce.Do(func() { h.met = make(chan struct{}) })
		if h.together.Add(1) == int32(n) {
			close(h.met)
		}
		select {
		case <-h.met:
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
				return m.Exec(context.Background(), Request{Workspace: ws, Code: code, Timeout: slack, Calls: h, MaxToolCalls: max}), h
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
			// Ten calls from threads are handled at once: none is answered
			// before all ten are in the handler, so were they handled one at
			// a time the first would wait for the timeout. No clock decides.
			r, _ = run("from concurrent.futures import ThreadPoolExecutor\nfrom codecell import _rpc\nwith ThreadPoolExecutor(10) as p:\n    result = len(list(p.map(lambda i: _rpc.call('s', 't', {'together': 10}), range(10))))", 0)
			if !r.OK || !equalJSON(r.Result, 10) {
				t.Fatalf("concurrent calls: %+v %v", r.Error, r.Result)
			}
			r, h := run("from codecell import _rpc\nfor i in range(10):\n    _rpc.call('s', 't', {})", 4)
			if r.OK || r.Error.Type != ErrToolCallLimit || h.calls.Load() != 4 {
				t.Fatalf("limit: %+v, %d calls answered", r.Error, h.calls.Load())
			}
			// A call whose arguments are over the channel's frame bound
			// fails alone, as an exception the code catches, and the
			// channel goes on (issue #30: it ended the execution with
			// "the code broke the sandbox channel").
			r, _ = run("from codecell import _rpc\ntry:\n    _rpc.call('s', 't', {'x': 'a' * (9 << 20)})\nexcept ValueError as e:\n    caught = str(e)\nresult = [caught, _rpc.call('s', 't', {'after': 1})]", 0)
			if got, _ := r.Result.([]any); !r.OK || len(got) != 2 || !strings.Contains(fmt.Sprint(got[0]), "over the limit") || toJSON(got[1]) != `{"after":1}` {
				t.Fatalf("a call over the frame bound: %+v %.300v", r.Error, r.Result)
			}
			// Without a handler the code gets a clear error, not a hang.
			r = m.Exec(context.Background(), Request{Workspace: ws, Code: "from codecell import _rpc\n_rpc.call('s', 't', {})", Timeout: slack})
			if r.OK || !strings.Contains(r.Error.Message, "cannot call the host") {
				t.Fatalf("no handler: %+v", r.Error)
			}
		})
	}
}

// textHandler answers every tool call with its argument "text" as a tool's
// text content, as the server's replyOf shapes it.
type textHandler struct{}

func (textHandler) HandleCall(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p struct {
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
	}
	json.Unmarshal(params, &p)
	return map[string]any{"structured": nil, "content": []map[string]any{{"type": "text", "text": p.Arguments.Text}}}, nil
}

// TestToolTextDecoding: a tool's text comes back to the code as JSON when
// it parses as JSON, else as the text itself (whichever thread reads the
// answer: the caller itself, or the reader thread when calls overlap).
func TestToolTextDecoding(t *testing.T) {
	m, ws := newTestManager(t, Development, Limits{}, 1)
	code := `
from concurrent.futures import ThreadPoolExecutor
from codecell import _rpc
texts = ["x", "", " [1, 2]", "\n{\"a\": 1}", "-1.5", "true", "tru", "null", "NaN", "Infinity", "nope", "\"q\"", "[1,", "é", "\ufeff1"]
one = [_rpc.call("s", "t", {"text": s}) for s in texts]
with ThreadPoolExecutor(4) as pool:
    many = list(pool.map(lambda s: _rpc.call("s", "t", {"text": s}), texts * 4))
assert many == one * 4, (one, many)
[repr(v) for v in one]
`
	r := m.Exec(context.Background(), Request{Workspace: ws, Code: code, Timeout: slack, Calls: textHandler{}})
	if !r.OK {
		t.Fatalf("%+v", r.Error)
	}
	want := `["'x'","''","[1, 2]","{'a': 1}","-1.5","True","'tru'","None","nan","inf","'nope'","'q'","'[1,'","'é'","'\\ufeff1'"]`
	if got := toJSON(r.Result); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
