package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/store"
)

// Executions as MCP tasks. A call to one of taskTools runs as a run
// (runs.go) that becomes a task when
//
//   - a 2025-11-25 client asked for one (the request's task parameter,
//     which the transports move to _meta[metaTaskRequest]): at once;
//   - a 2026-07-28 client declared the io.modelcontextprotocol/tasks
//     extension: once the execution has run sandbox.taskAfter, or at its
//     first approval request, whichever comes first. A short execution
//     answers as always.
//
// A task is recorded in the store before its handle is returned, so that
// tasks/get on any replica sharing the database finds it. The replica that
// runs it (own) writes its status, latest output and outcome there, and
// keeps a heartbeat: a task whose heartbeat stopped reads as failed. The
// tasks/* methods are not the SDK's; the transports hand them to
// HandleTaskMessage.

// tasksExtension is the 2026-07-28 tasks extension's identifier.
const tasksExtension = "io.modelcontextprotocol/tasks"

// metaTaskRequest is the _meta key the transports move a 2025 request's
// task parameter to: the SDK keeps _meta but not parameters it does not
// know.
const metaTaskRequest = "codecell/task"

// metaRelatedTask is the 2025 key that ties a message to its task.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

const (
	// taskHeartbeat is how often the running replica writes a task's
	// status and reads what clients asked of it on other replicas.
	taskHeartbeat = time.Second
	// taskStale is how old a running task's heartbeat may get before it
	// reads as failed: far more than a heartbeat, so that a loaded
	// machine's late write is not a death.
	taskStale = 30 * time.Second
	// taskPoll is the polling interval codecell suggests.
	taskPoll = time.Second
	// taskKeep is how long a task's outcome is kept past its longest run.
	taskKeep = time.Hour
	// maxListedTasks bounds tasks/list.
	maxListedTasks = 100
	// maxLiveTasks bounds the tasks one namespace runs at once on a
	// replica: a call returns at once as a task, so without a bound one
	// client could start executions without end.
	maxLiveTasks = 32
	// taskSweep is how often expired task records are deleted.
	taskSweep = 10 * time.Minute
)

// taskGen names a task's protocol generation.
const (
	gen2025 = "2025"
	gen2026 = "2026"
)

// tasks are the tasks this replica runs, and the runs that wait for a
// client's retry with an answer (multi round-trip requests).
type tasks struct {
	s *Server

	mu        sync.Mutex
	live      map[string]*liveTask // by task id
	parked    map[string]*parkedRun
	lastSweep time.Time
}

type liveTask struct {
	id  string
	run *run
	// update nudges the owner: a tasks/update or tasks/cancel on this
	// replica, or a status change of a 2025 approval.
	update chan struct{}
}

type parkedRun struct {
	run *run
	ask *ask
}

func newTasks(s *Server) *tasks {
	return &tasks{s: s, live: map[string]*liveTask{}, parked: map[string]*parkedRun{}}
}

// taskMiddleware runs the calls of taskTools as runs that may become tasks
// (see the top of this file), and adds the 2025 tasks capability to what
// the server declares. It is the outermost middleware: a task's result
// has passed the gate like any answer.
func (s *Server) taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && s.store != nil {
				return &initializeWithTasks{ir}, nil
			}
			return res, err
		case "tools/list":
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil && s.store != nil {
				return &toolsWithTaskSupport{lr}, nil
			}
			return res, err
		case "tools/call":
		default:
			return next(ctx, method, req)
		}
		ct, ok := req.(*mcp.CallToolRequest)
		if !ok || ct.Params == nil || !taskTools[ct.Params.Name] {
			return next(ctx, method, req)
		}
		ns := namespaceOf(ct)
		if state := ct.Params.RequestState; state != "" {
			return s.resumeParked(ctx, ct, ns, state)
		}
		if !s.mayOutlive(ct) {
			// Most calls: nothing can make them a task or a question
			// for the client, and they run as they always have.
			return next(ctx, method, req)
		}
		r := s.startRun(ctx, next, method, req, ns, ct.Params.Name)
		return s.awaitRun(ctx, ct, r)
	}
}

// mayOutlive says req's call may become a task or put a question to its
// client in its result: a 2025 client asked for a task, or a 2026 client
// takes tasks or input requests. Only such a call runs as a run.
func (s *Server) mayOutlive(req *mcp.CallToolRequest) bool {
	if !isModern(req) {
		return s.store != nil && wantsLegacyTask(req)
	}
	viaTask, viaRetry := canAsk(req)
	return (viaTask && s.store != nil) || viaRetry
}

// wantsLegacyTask says a 2025 client asked for req to run as a task.
func wantsLegacyTask(req *mcp.CallToolRequest) bool {
	_, ok := req.Params.Meta[metaTaskRequest]
	return ok && !isModern(req)
}

// awaitRun waits for r on req's behalf: for its result, or until it must
// become a task or ask the client a question (see the top of this file
// and approvals.go).
func (s *Server) awaitRun(ctx context.Context, req *mcp.CallToolRequest, r *run) (mcp.Result, error) {
	viaTask, viaRetry := canAsk(req)
	modern := isModern(req)
	viaTask = viaTask && modern && s.store != nil
	viaRetry = viaRetry && modern
	if wantsLegacyTask(req) && s.store != nil {
		return s.tasks.adopt(ctx, r, gen2025, nil)
	}
	var after <-chan time.Time
	if viaTask {
		t := time.NewTimer(s.cfg.Sandbox.TaskAfter)
		defer t.Stop()
		after = t.C
	}
	for {
		select {
		case <-r.done:
			return r.res, r.err
		case <-after:
			return s.tasks.adopt(ctx, r, gen2026, nil)
		case a := <-r.asks:
			switch {
			case viaTask:
				return s.tasks.adopt(ctx, r, gen2026, a)
			case viaRetry:
				return s.tasks.park(r, a), nil
			default:
				a.refuse(errNoWayToAsk)
			}
		case <-ctx.Done():
			// The client cancelled the request, or went away: its
			// execution ends with it, as a call's always has.
			r.stop()
			<-r.done
			return nil, ctx.Err()
		}
	}
}

// park keeps r, waiting on a, for the client's retry, and returns the
// input_required result that asks the client a's question.
func (t *tasks) park(r *run, a *ask) mcp.Result {
	state := newID()
	t.mu.Lock()
	t.parked[state] = &parkedRun{run: r, ask: a}
	t.mu.Unlock()
	// A client that never retries leaves the run to its approval timeout;
	// once it is done nothing waits for it.
	go func() {
		<-r.done
		time.AfterFunc(time.Minute, func() {
			t.mu.Lock()
			delete(t.parked, state)
			t.mu.Unlock()
		})
	}()
	return &inputRequired{&mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{a.key: a.params},
		RequestState:  state,
	}}
}

// resumeParked answers the question a parked run waits on with the retry's
// input response, and waits for the run again.
func (s *Server) resumeParked(ctx context.Context, req *mcp.CallToolRequest, ns, state string) (mcp.Result, error) {
	s.tasks.mu.Lock()
	p, ok := s.tasks.parked[state]
	if ok && p.run.ns == ns {
		delete(s.tasks.parked, state)
	}
	s.tasks.mu.Unlock()
	if !ok || p.run.ns != ns {
		return nil, fieldError("requestState", "no execution here waits for this answer: it ended (an unanswered approval is refused after policy.approvalTimeout), or this retry reached another replica; run the code again")
	}
	resp, _ := req.Params.InputResponses[p.ask.key].(*mcp.ElicitResult)
	if resp == nil {
		p.ask.refuse(fmt.Errorf("the client's retry did not answer input request %q", p.ask.key))
	} else {
		p.ask.reply(resp)
	}
	return s.awaitRun(ctx, req, p.run)
}

// adopt makes r a task of generation gen, recorded before its handle is
// returned; pending is a question r already waits on, or nil.
func (t *tasks) adopt(ctx context.Context, r *run, gen string, pending *ask) (mcp.Result, error) {
	now := time.Now()
	if t.liveIn(r.ns) >= maxLiveTasks {
		if gen == gen2025 {
			r.stop()
			<-r.done
			return nil, fmt.Errorf("this namespace runs %d tasks already, the most it may; wait for one to end (tasks/get) or cancel one", maxLiveTasks)
		}
		// A 2026 call waits for its result as a call without tasks does.
		if pending != nil {
			pending.refuse(fmt.Errorf("this namespace runs %d tasks already, the most it may", maxLiveTasks))
		}
		<-r.done
		return r.res, r.err
	}
	t.sweep(now)
	id := newID()
	row := store.Task{ID: id, Namespace: r.ns, Tool: r.tool, Generation: gen, Status: store.TaskWorking,
		CreatedAt: now, TTL: t.ttl()}
	asked := map[string]*ask{}
	if pending != nil {
		asked[pending.key] = pending
		reqs, err := inputRequests(asked)
		if err != nil {
			pending.refuse(err)
			delete(asked, pending.key)
		} else {
			row.Status, row.InputRequests = store.TaskInputRequired, reqs
		}
	}
	if err := t.s.store.CreateTask(context.WithoutCancel(ctx), row); err != nil {
		// Without a record there is no handle to give: the call waits
		// for its result as a call without tasks does.
		t.s.log.Error("task: record", "error", err)
		if pending != nil {
			pending.refuse(errors.New("the task could not be recorded"))
		}
		<-r.done
		return r.res, r.err
	}
	r.mu.Lock()
	r.task = id
	r.mu.Unlock()
	lt := &liveTask{id: id, run: r, update: make(chan struct{}, 1)}
	t.mu.Lock()
	t.live[id] = lt
	t.mu.Unlock()
	t.s.log.Info("task", "id", id, "status", row.Status, "tool", r.tool, "namespace", r.ns, "generation", gen)
	t.s.metrics.TaskStatus(row.Status)
	go t.own(lt, asked)
	if gen == gen2025 {
		return &legacyTaskCreated{Task: legacyTask(row)}, nil
	}
	return &taskCreated{task: modernTask(row, false)}, nil
}

// liveIn counts the tasks this replica runs for ns.
func (t *tasks) liveIn(ns string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, lt := range t.live {
		if lt.run.ns == ns {
			n++
		}
	}
	return n
}

// sweep deletes the records whose ttl passed, every taskSweep at most.
func (t *tasks) sweep(now time.Time) {
	t.mu.Lock()
	due := now.Sub(t.lastSweep) >= taskSweep
	if due {
		t.lastSweep = now
	}
	t.mu.Unlock()
	if due {
		go func() {
			if err := t.s.store.DeleteExpiredTasks(context.Background(), now); err != nil {
				t.s.log.Warn("task: sweep", "error", err)
			}
		}()
	}
}

// ttl is how long a task's record is kept from its creation.
func (t *tasks) ttl() time.Duration { return t.s.cfg.Sandbox.TaskTimeout + taskKeep }

// inputRequests is the input_required status's requests: the questions
// asked, keyed by their ids (their messages passed the gate in approve).
func inputRequests(asked map[string]*ask) (json.RawMessage, error) {
	m := mcp.InputRequestMap{}
	for key, a := range asked {
		m[key] = a.params
	}
	return json.Marshal(m)
}

// own runs on the replica that runs lt until lt's run ends: it writes the
// task's status, output and outcome, takes the answers to its questions and
// its cancellation, and keeps its heartbeat.
func (t *tasks) own(lt *liveTask, asked map[string]*ask) {
	ctx := context.Background()
	r := lt.run
	defer func() {
		t.mu.Lock()
		delete(t.live, lt.id)
		t.mu.Unlock()
	}()
	tick := time.NewTicker(taskHeartbeat)
	defer tick.Stop()
	status := store.TaskWorking
	if len(asked) > 0 {
		status = store.TaskInputRequired
	}
	lastMsg := ""
	write := func(u store.TaskUpdate) {
		if err := t.s.store.UpdateTask(ctx, lt.id, u, time.Now()); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.s.log.Warn("task: update", "id", lt.id, "error", err)
		}
		if u.Status != "" && u.Status != status {
			status = u.Status
			t.s.log.Info("task", "id", lt.id, "status", status, "namespace", r.ns)
			t.s.metrics.TaskStatus(status)
		}
	}
	// poll reads what clients asked of the task, here or on another
	// replica: answers and a cancellation.
	poll := func() {
		answers, cancel, err := t.s.store.TakeTaskInputResponses(ctx, lt.id)
		if err != nil {
			t.s.log.Warn("task: read input", "id", lt.id, "error", err)
			return
		}
		if cancel && !r.wasCancelled() {
			r.stop()
		}
		for key, raw := range answers {
			a, ok := asked[key]
			if !ok {
				continue // not outstanding: ignored, as the extension asks
			}
			var res mcp.ElicitResult
			if err := json.Unmarshal(raw, &res); err != nil || res.Action == "" {
				a.refuse(fmt.Errorf("the answer to %s is not an elicitation result", key))
			} else {
				a.reply(&res)
			}
			delete(asked, key)
		}
	}
	for {
		select {
		case <-r.done:
			t.finish(lt, write)
			return
		case a := <-r.asks:
			asked[a.key] = a
			reqs, err := inputRequests(asked)
			if err != nil {
				a.refuse(err)
				delete(asked, a.key)
				continue
			}
			write(store.TaskUpdate{Status: store.TaskInputRequired, InputRequests: reqs})
		case <-lt.update:
			poll()
		case <-tick.C:
			poll()
		}
		if r.finished() {
			continue
		}
		// The status after what changed: asks still open, a 2025 ask on
		// the session, or working with the latest output.
		u := store.TaskUpdate{}
		switch {
		case len(asked) > 0:
			if status != store.TaskInputRequired {
				u.Status = store.TaskInputRequired
			}
		case r.isWaiting():
			u.Status = store.TaskInputRequired
		default:
			if status != store.TaskWorking {
				u.Status, u.ClearInput = store.TaskWorking, true
			}
		}
		if msg, err := t.s.gate.Text(ctx, r.ns, r.tail.message()); err == nil && msg != lastMsg {
			u.StatusMessage, lastMsg = &msg, msg
		}
		write(u)
	}
}

// finish records the outcome of lt's run: the result it would have
// returned, the error, or that a client cancelled it.
func (t *tasks) finish(lt *liveTask, write func(store.TaskUpdate)) {
	r := lt.run
	switch {
	case r.wasCancelled():
		msg := "cancelled by the client"
		write(store.TaskUpdate{Status: store.TaskCancelled, StatusMessage: &msg, ClearInput: true})
	case r.err != nil:
		write(failedUpdate(r.err.Error()))
	default:
		out, err := json.Marshal(r.res)
		if err != nil {
			write(failedUpdate("the result could not be encoded: " + err.Error()))
			return
		}
		msg := "done"
		if ct, ok := r.res.(*mcp.CallToolResult); ok && ct.IsError {
			msg = "done, with an error"
		}
		write(store.TaskUpdate{Status: store.TaskCompleted, StatusMessage: &msg, Outcome: out, ClearInput: true})
	}
}

// nudge wakes the owner of task id, if this replica runs it.
func (t *tasks) nudge(id string) {
	t.mu.Lock()
	lt := t.live[id]
	t.mu.Unlock()
	if lt != nil {
		select {
		case lt.update <- struct{}{}:
		default:
		}
	}
}

// stopAll ends the tasks this replica runs, at shutdown: each is cancelled
// and recorded as failed, so that no client polls it for ever.
func (t *tasks) stopAll(reason string) {
	t.mu.Lock()
	live := make([]*liveTask, 0, len(t.live))
	for _, lt := range t.live {
		live = append(live, lt)
	}
	t.mu.Unlock()
	for _, lt := range live {
		t.s.store.UpdateTask(context.Background(), lt.id, failedUpdate(reason), time.Now())
		lt.run.cancel()
	}
}

// failedUpdate ends a task as failed for reason.
func failedUpdate(reason string) store.TaskUpdate {
	return store.TaskUpdate{Status: store.TaskFailed, StatusMessage: &reason,
		Outcome: json.RawMessage(store.FailedOutcome(reason)), ClearInput: true}
}

// newID is an unguessable id: a task's handle is its only credential
// within its namespace.
func newID() string {
	var b [18]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
