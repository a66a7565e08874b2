package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/store"
)

// The wire forms of tasks: the 2026-07-28 extension's and the 2025-11-25
// experimental ones, and the tasks/* methods, which the SDK does not know
// and the transports hand to HandleTaskMessage.

// taskCreated is a 2026 CreateTaskResult: the task, resultType "task".
type taskCreated struct {
	mcp.ResultBase
	task map[string]any
}

func (t *taskCreated) MarshalJSON() ([]byte, error) {
	m := map[string]any{"resultType": "task"}
	for k, v := range t.task {
		m[k] = v
	}
	return json.Marshal(m)
}

// legacyTaskCreated is a 2025 CreateTaskResult.
type legacyTaskCreated struct {
	mcp.ResultBase
	Task map[string]any `json:"task"`
}

// taskFields are the fields a task has in both generations, which name
// its time to live and poll interval ttlKey and pollKey.
func taskFields(row store.Task, ttlKey, pollKey string) map[string]any {
	m := map[string]any{
		"taskId":        row.ID,
		"status":        row.Status,
		"createdAt":     row.CreatedAt.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": lastUpdated(row).UTC().Format(time.RFC3339Nano),
		ttlKey:          row.TTL.Milliseconds(),
		pollKey:         taskPoll.Milliseconds(),
	}
	if row.StatusMessage != "" {
		m["statusMessage"] = row.StatusMessage
	}
	return m
}

// modernTask is the 2026 form of row: a DetailedTask, whose status-specific
// field (inputRequests, result, error) is there when detailed.
func modernTask(row store.Task, detailed bool) map[string]any {
	m := taskFields(row, "ttlMs", "pollIntervalMs")
	if !detailed {
		return m
	}
	switch row.Status {
	case store.TaskInputRequired:
		if row.InputRequests != nil {
			m["inputRequests"] = row.InputRequests
		} else {
			m["inputRequests"] = json.RawMessage("{}")
		}
	case store.TaskCompleted:
		m["result"] = row.Outcome
	case store.TaskFailed:
		m["error"] = row.Outcome
	}
	return m
}

// legacyTask is the 2025 form of row.
func legacyTask(row store.Task) map[string]any { return taskFields(row, "ttl", "pollInterval") }

func lastUpdated(row store.Task) time.Time {
	if row.UpdatedAt.IsZero() {
		return row.CreatedAt
	}
	return row.UpdatedAt
}

// inputRequired is a multi round-trip result asking the client for input:
// the SDK marks its results so only when its own tool handler made them,
// and this one is made around that handler (awaitRun).
type inputRequired struct{ *mcp.CallToolResult }

func (r *inputRequired) MarshalJSON() ([]byte, error) {
	return addFields(r.CallToolResult, func(m map[string]json.RawMessage) error {
		m["resultType"] = json.RawMessage(`"input_required"`)
		delete(m, "content") // an input request carries no content
		return nil
	})
}

// initializeWithTasks is a 2025 initialize result that declares the tasks
// capability, which the SDK's ServerCapabilities has no field for.
type initializeWithTasks struct{ *mcp.InitializeResult }

func (r *initializeWithTasks) MarshalJSON() ([]byte, error) {
	return addFields(r.InitializeResult, func(m map[string]json.RawMessage) error {
		var caps map[string]any
		if err := json.Unmarshal(m["capabilities"], &caps); err != nil {
			return err
		}
		if caps == nil {
			caps = map[string]any{}
		}
		caps["tasks"] = map[string]any{
			"list": map[string]any{}, "cancel": map[string]any{},
			"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
		}
		b, err := json.Marshal(caps)
		m["capabilities"] = b
		return err
	})
}

// toolsWithTaskSupport is a tools/list result whose taskTools say they may
// run as tasks (execution.taskSupport), which the SDK's Tool has no field
// for.
type toolsWithTaskSupport struct{ *mcp.ListToolsResult }

func (r *toolsWithTaskSupport) MarshalJSON() ([]byte, error) {
	return addFields(r.ListToolsResult, func(m map[string]json.RawMessage) error {
		var tools []map[string]json.RawMessage
		if err := json.Unmarshal(m["tools"], &tools); err != nil {
			return err
		}
		for _, t := range tools {
			var name string
			json.Unmarshal(t["name"], &name)
			if taskTools[name] {
				t["execution"] = json.RawMessage(`{"taskSupport":"optional"}`)
			}
		}
		b, err := json.Marshal(tools)
		m["tools"] = b
		return err
	})
}

// addFields encodes v, lets edit change its top-level fields, and encodes
// the result.
func addFields(v any, edit func(map[string]json.RawMessage) error) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := edit(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// IsTaskMethod says a JSON-RPC method is one of the tasks/* methods, which
// HandleTaskMessage answers rather than the SDK.
func IsTaskMethod(method string) bool {
	return strings.HasPrefix(method, "tasks/")
}

// TaskMessage peeks at a message: its method when it is a request to one
// of the tasks/* methods.
func TaskMessage(msg []byte) (string, bool) {
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID == nil || !IsTaskMethod(m.Method) {
		return "", false
	}
	return m.Method, true
}

// HandleTaskMessage answers a JSON-RPC request to a tasks/* method in
// namespace ns, and returns the response to write. tasks/result may wait
// for its task to end, until ctx is done.
func (s *Server) HandleTaskMessage(ctx context.Context, ns string, msg []byte) []byte {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			TaskID         string                     `json:"taskId"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		} `json:"params"`
	}
	reply := func(result any, err error) []byte {
		m := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if err != nil {
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			m["error"] = je
		} else {
			m["result"] = result
		}
		b, _ := json.Marshal(m)
		return b
	}
	if err := json.Unmarshal(msg, &req); err != nil {
		return reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()})
	}
	res, err := s.taskMethod(ctx, ns, req.Method, req.Params.TaskID, req.Params.InputResponses)
	if err == nil && res != nil {
		// Everything a task says passes the gate like any answer (its
		// result did when it was made; statuses and errors here).
		var gerr error
		if b, merr := json.Marshal(res); merr == nil {
			var gated []byte
			gated, gerr = s.gate.JSON(ctx, ns, b)
			res = json.RawMessage(gated)
		} else {
			gerr = merr
		}
		if gerr != nil {
			return reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the answer was withheld: " + gerr.Error()})
		}
	}
	return reply(res, err)
}

func unknownTask(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown task %q (ids are per namespace, and a task is dropped when its ttl passes)", id)}
}

func (s *Server) taskMethod(ctx context.Context, ns, method, id string, responses map[string]json.RawMessage) (any, error) {
	if s.store == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "tasks need codecell's store, which this server runs without"}
	}
	if method == "tasks/list" {
		rows, err := s.store.ListTasks(ctx, ns, time.Now(), maxListedTasks)
		if err != nil {
			return nil, err
		}
		list := make([]map[string]any, 0, len(rows))
		for _, row := range rows {
			list = append(list, legacyTask(s.checkAlive(row)))
		}
		return map[string]any{"tasks": list}, nil
	}
	if id == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: taskId is required"}
	}
	row, err := s.store.GetTask(ctx, ns, id, time.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknownTask(id)
	}
	if err != nil {
		return nil, err
	}
	row = s.checkAlive(row)
	legacy := row.Generation == gen2025
	switch method {
	case "tasks/get":
		if legacy {
			return legacyTask(row), nil
		}
		m := modernTask(row, true)
		m["resultType"] = "complete"
		return m, nil
	case "tasks/cancel":
		if !store.TaskTerminal(row.Status) {
			if err := s.store.RequestTaskCancel(ctx, ns, id); err != nil {
				return nil, err
			}
			s.tasks.nudge(id)
		}
		if !legacy {
			return map[string]any{"resultType": "complete"}, nil
		}
		if store.TaskTerminal(row.Status) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %q is already %s", id, row.Status)}
		}
		row.Status, row.StatusMessage = store.TaskCancelled, "cancelled by the client"
		return legacyTask(row), nil
	case "tasks/update":
		if len(responses) > 0 && !store.TaskTerminal(row.Status) {
			if err := s.store.SetTaskInputResponses(ctx, ns, id, responses); err != nil {
				return nil, err
			}
			s.tasks.nudge(id)
		}
		return map[string]any{"resultType": "complete"}, nil
	case "tasks/result":
		return s.taskResult(ctx, ns, row)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", method)}
}

// checkAlive reads a running task whose replica stopped keeping its
// heartbeat as failed, with that reason: it will never end otherwise.
func (s *Server) checkAlive(row store.Task) store.Task {
	if store.TaskTerminal(row.Status) || time.Since(row.HeartbeatAt) < taskStale {
		return row
	}
	who := "the server"
	if row.Replica != "" {
		who = fmt.Sprintf("replica %q", row.Replica)
	}
	row.Status = store.TaskFailed
	row.StatusMessage = fmt.Sprintf("%s running this task stopped (no word from it since %s)", who, row.HeartbeatAt.UTC().Format(time.RFC3339))
	row.Outcome = json.RawMessage(store.FailedOutcome(row.StatusMessage))
	row.InputRequests = nil
	return row
}

// taskResult is 2025's tasks/result: it waits for the task to end, then
// returns its result (or its error) with the related-task _meta.
func (s *Server) taskResult(ctx context.Context, ns string, row store.Task) (any, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for !store.TaskTerminal(row.Status) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		var err error
		row, err = s.store.GetTask(ctx, ns, row.ID, time.Now())
		if errors.Is(err, store.ErrNotFound) {
			return nil, unknownTask(row.ID)
		}
		if err != nil {
			return nil, err
		}
		row = s.checkAlive(row)
	}
	switch row.Status {
	case store.TaskCompleted:
		var m map[string]any
		if err := json.Unmarshal(row.Outcome, &m); err != nil {
			return nil, err
		}
		meta, _ := m["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[metaRelatedTask] = map[string]any{"taskId": row.ID}
		m["_meta"] = meta
		return m, nil
	case store.TaskCancelled:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("task %q was cancelled", row.ID)}
	default:
		var je jsonrpc.Error
		if json.Unmarshal(row.Outcome, &je) != nil || je.Message == "" {
			je = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: row.StatusMessage}
		}
		return nil, &je
	}
}

// InterceptTaskMessage takes, from a transport, what the SDK cannot: a
// request to a tasks/* method is answered through reply (at once, or for
// tasks/result once its task ends, from another goroutine), and nil is
// returned; a tools/call's 2025 task parameter is moved to _meta, where the
// SDK keeps it. Any other message is returned as it is, to go to the SDK.
// ns is the request's namespace ("" for the default).
func (s *Server) InterceptTaskMessage(ctx context.Context, ns string, msg []byte, reply func([]byte)) []byte {
	if !bytes.Contains(msg, []byte(`"task`)) {
		return msg
	}
	if ns == "" {
		ns = DefaultNamespace
	}
	if _, ok := TaskMessage(msg); ok {
		go func() { reply(s.HandleTaskMessage(ctx, ns, msg)) }()
		return nil
	}
	return moveTaskParam(msg)
}

// moveTaskParam moves a tools/call's params.task to params._meta
// [metaTaskRequest]; other messages are returned as they are.
func moveTaskParam(msg []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	var method string
	if json.Unmarshal(m["method"], &method) != nil || method != "tools/call" {
		return msg
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil {
		return msg
	}
	task, ok := params["task"]
	if !ok {
		return msg
	}
	delete(params, "task")
	var meta map[string]json.RawMessage
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return msg
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[metaTaskRequest] = task
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	if m["params"], err = json.Marshal(params); err != nil {
		return msg
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}
