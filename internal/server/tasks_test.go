package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/store"
)

// rawClient speaks JSON-RPC to a server over its stdio transport, one line
// a message, as the clients of either generation do; notifications and
// server requests are kept apart from responses.
type rawClient struct {
	t    *testing.T
	w    io.Writer
	mu   sync.Mutex
	resp map[string]chan map[string]any
	reqs chan map[string]any // requests from the server (elicitation)
	next int
}

func newRawClient(t *testing.T, s *Server) *rawClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	go s.MCP().Run(ctx, s.StdioTransport(inR, outW))
	c := &rawClient{t: t, w: inW, resp: map[string]chan map[string]any{}, reqs: make(chan map[string]any, 16)}
	go func() {
		r := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			if _, isReq := m["method"]; isReq {
				if m["id"] != nil {
					c.reqs <- m
				}
				continue
			}
			c.mu.Lock()
			ch := c.resp[idKey(m["id"])]
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	return c
}

func idKey(id any) string { b, _ := json.Marshal(id); return string(b) }

// call sends a request and waits for its response (a guard against a hang,
// not a timing assertion).
func (c *rawClient) call(method string, params any) map[string]any {
	c.t.Helper()
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan map[string]any, 1)
	c.resp[idKey(id)] = ch
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	select {
	case m := <-ch:
		return m
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("no answer to %s", method)
		return nil
	}
}

func (c *rawClient) notify(method string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	c.w.Write(append(b, '\n'))
}

// modernMeta is a 2026-07-28 request's _meta, declaring the tasks
// extension and elicitation as asked.
func modernMeta(tasks, elicit bool) map[string]any {
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{tasksExtension: map[string]any{}}
	}
	if elicit {
		caps["elicitation"] = map[string]any{}
	}
	return map[string]any{metaProtocolVersion: "2026-07-28", metaClientCapabilities: caps,
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "t", "version": "1"}}
}

func result(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %v", m)
	}
	return r
}

// gatedExec runs until release is closed (or its context ends), printing
// one line first; its result says "done".
func gatedExec(release <-chan struct{}) execFunc {
	return func(ctx context.Context, req sandbox.Request) *sandbox.Result {
		if req.OnOutput != nil {
			req.OnOutput("stdout", []byte("step 1\n"))
		}
		select {
		case <-release:
			return &sandbox.Result{OK: true, Stdout: "step 1\n", Result: "done"}
		case <-ctx.Done():
			return &sandbox.Result{Error: &sandbox.ExecError{Type: "Killed", Message: "stopped"}}
		}
	}
}

func taskServer(t *testing.T, st *store.Store, exec execFunc) *Server {
	s, _ := newTestServer(t, func(o *Options) {
		o.Store = st
		o.Executor = exec
		o.Config.Sandbox.TaskAfter = 50 * time.Millisecond
	})
	return s
}

func openStore(t *testing.T, path, replica string) *store.Store {
	st, err := store.OpenWith(store.Options{Path: path, Replica: replica})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestTasksModern: a 2026 client that declares the tasks extension gets an
// execution past taskAfter as a task, whose status carries the output, and
// whose result is the call's; a short one answers as a call; a client
// without the extension waits for the result.
func TestTasksModern(t *testing.T) {
	release := make(chan struct{})
	st := openStore(t, filepath.Join(t.TempDir(), "c.db"), "")
	s := taskServer(t, st, gatedExec(release))
	c := newRawClient(t, s)
	created := result(t, c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "work()", "timeout_seconds": 1800}, "_meta": modernMeta(true, false)}))
	if created["resultType"] != "task" || created["status"] != "working" {
		t.Fatalf("not a task: %v", created)
	}
	id := created["taskId"].(string)
	get := func() map[string]any {
		return result(t, c.call("tasks/get", map[string]any{"taskId": id, "_meta": modernMeta(true, false)}))
	}
	waitFor(t, time.Minute, "the task's status shows its output", func() bool {
		msg, _ := get()["statusMessage"].(string)
		return strings.Contains(msg, "step 1")
	})
	close(release)
	var done map[string]any
	waitFor(t, time.Minute, "the task completes", func() bool {
		done = get()
		return done["status"] == "completed"
	})
	res := done["result"].(map[string]any)
	sc := res["structuredContent"].(map[string]any)
	if sc["result"] != "done" || sc["ok"] != true {
		t.Errorf("result %v", res)
	}
	if done["resultType"] != "complete" {
		t.Errorf("tasks/get resultType %v", done["resultType"])
	}

	// Without the extension, timeout_seconds past maxTimeout is refused,
	// and the call returns its result.
	over := c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "x", "timeout_seconds": 1800}, "_meta": modernMeta(false, false)})
	if r, _ := over["result"].(map[string]any); r == nil || r["isError"] != true {
		if over["error"] == nil {
			t.Errorf("timeout past maxTimeout without tasks was accepted: %v", over)
		}
	}
	plain := result(t, c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "x"}, "_meta": modernMeta(false, false)}))
	if plain["resultType"] == "task" {
		t.Errorf("a client without the extension got a task: %v", plain)
	}
}

// TestTasksLegacy: a 2025 client that asks for a task gets one at once;
// tasks/result waits for its end; tasks/cancel kills it; tasks/list lists
// the namespace's tasks; an unknown id is an invalid-params error.
func TestTasksLegacy(t *testing.T) {
	release := make(chan struct{})
	st := openStore(t, filepath.Join(t.TempDir(), "c.db"), "")
	s := taskServer(t, st, gatedExec(release))
	c := newRawClient(t, s)
	init := result(t, c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}}))
	if caps := init["capabilities"].(map[string]any); caps["tasks"] == nil {
		t.Errorf("no tasks capability: %v", caps)
	}
	c.notify("notifications/initialized")
	tools := result(t, c.call("tools/list", map[string]any{}))["tools"].([]any)
	for _, tl := range tools {
		tm := tl.(map[string]any)
		if taskTools[tm["name"].(string)] && tm["execution"] == nil {
			t.Errorf("%s says nothing of tasks", tm["name"])
		}
	}
	created := result(t, c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "work()"}, "task": map[string]any{"ttl": 60000}}))
	task := created["task"].(map[string]any)
	id := task["taskId"].(string)
	got := make(chan map[string]any, 1)
	go func() { got <- c.call("tasks/result", map[string]any{"taskId": id}) }()
	close(release)
	res := result(t, <-got)
	if sc := res["structuredContent"].(map[string]any); sc["result"] != "done" {
		t.Errorf("tasks/result %v", res)
	}
	if meta := res["_meta"].(map[string]any); meta[metaRelatedTask] == nil {
		t.Errorf("tasks/result lacks the related-task _meta: %v", meta)
	}

	// Cancel: the execution is killed, the task reads cancelled.
	hold := make(chan struct{})
	defer close(hold)
	s.exec = gatedExec(hold)
	id2 := result(t, c.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "work()"}, "task": map[string]any{}}))["task"].(map[string]any)["taskId"].(string)
	result(t, c.call("tasks/cancel", map[string]any{"taskId": id2}))
	waitFor(t, time.Minute, "the cancelled task reads cancelled", func() bool {
		return result(t, c.call("tasks/get", map[string]any{"taskId": id2}))["status"] == "cancelled"
	})
	list := result(t, c.call("tasks/list", map[string]any{}))["tasks"].([]any)
	if len(list) != 2 {
		t.Errorf("tasks/list has %d tasks, want 2", len(list))
	}
	bad := c.call("tasks/get", map[string]any{"taskId": "nope"})
	if e, _ := bad["error"].(map[string]any); e == nil || e["code"].(float64) != -32602 {
		t.Errorf("unknown task: %v", bad)
	}
}

// TestTasksAcrossReplicas: replicas sharing a database answer tasks/get
// for each other's tasks, a cancellation asked on one reaches the run on
// the other, another namespace's task id is unknown, and a task whose
// replica stopped reads as failed, with the reason.
func TestTasksAcrossReplicas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	hold := make(chan struct{})
	defer close(hold)
	a := taskServer(t, openStore(t, path, "a"), gatedExec(hold))
	b := taskServer(t, openStore(t, path, "b"), gatedExec(hold))
	ca := newRawClient(t, a)
	created := result(t, ca.call("tools/call", map[string]any{"name": "execute_code",
		"arguments": map[string]any{"code": "work()"}, "_meta": modernMeta(true, false)}))
	id := created["taskId"].(string)
	ctx := context.Background()
	ask := func(s *Server, ns, method string) map[string]any {
		var m map[string]any
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": map[string]any{"taskId": id}})
		json.Unmarshal(s.HandleTaskMessage(ctx, ns, msg), &m)
		return m
	}
	if r := result(t, ask(b, DefaultNamespace, "tasks/get")); r["status"] != "working" {
		t.Errorf("replica b reads %v", r)
	}
	if e := ask(b, "someone-else", "tasks/get")["error"]; e == nil {
		t.Error("another namespace reads the task")
	}
	for _, m := range []string{"tasks/cancel", "tasks/update", "tasks/result"} {
		if e := ask(b, "someone-else", m)["error"]; e == nil {
			t.Errorf("another namespace's %s reaches the task", m)
		}
	}
	result(t, ask(b, DefaultNamespace, "tasks/cancel"))
	waitFor(t, time.Minute, "a cancellation asked on b stops the run on a", func() bool {
		return result(t, ask(b, DefaultNamespace, "tasks/get"))["status"] == "cancelled"
	})

	// A replica that died: its task's heartbeat stops.
	st := openStore(t, path, "gone")
	old := time.Now().Add(-time.Hour)
	if err := st.CreateTask(ctx, store.Task{ID: "dead-task", Namespace: DefaultNamespace, Tool: "execute_code",
		Generation: gen2026, Status: store.TaskWorking, CreatedAt: old, TTL: 3 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	id = "dead-task"
	r := result(t, ask(b, DefaultNamespace, "tasks/get"))
	if r["status"] != "failed" || !strings.Contains(r["statusMessage"].(string), `replica "gone"`) || r["error"] == nil {
		t.Errorf("a dead replica's task reads %v", r)
	}
	// And the replica, restarted, ends its own.
	if n, err := st.FailReplicaTasks(ctx, "restarted", time.Now()); err != nil || n != 1 {
		t.Errorf("FailReplicaTasks: %d, %v", n, err)
	}
}

// TestTasksBound: a namespace runs at most maxLiveTasks tasks at once; a
// 2025 call past that fails saying so, and once they end, tasks start
// again.
func TestTasksBound(t *testing.T) {
	hold := make(chan struct{})
	st := openStore(t, filepath.Join(t.TempDir(), "c.db"), "")
	s := taskServer(t, st, gatedExec(hold))
	// Admission (admit.go) would refuse the executions past its bounds
	// first: here they all run.
	s.admit.limit, s.admit.perNS = 2*maxLiveTasks, 2*maxLiveTasks
	c := newRawClient(t, s)
	result(t, c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}}))
	c.notify("notifications/initialized")
	start := func() map[string]any {
		return c.call("tools/call", map[string]any{"name": "execute_code",
			"arguments": map[string]any{"code": "work()"}, "task": map[string]any{}})
	}
	for i := range maxLiveTasks {
		if r := start(); r["result"] == nil {
			t.Fatalf("task %d: %v", i, r)
		}
	}
	over := start()
	if e, _ := over["error"].(map[string]any); e == nil || !strings.Contains(e["message"].(string), "tasks already") {
		t.Errorf("task %d: %v", maxLiveTasks+1, over)
	}
	close(hold)
	waitFor(t, time.Minute, "the tasks end", func() bool { return s.tasks.liveIn(DefaultNamespace) == 0 })
	if r := start(); r["result"] == nil {
		t.Errorf("after the tasks ended: %v", r)
	}
}
