package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/internal/sandbox"
)

// API is what the REST API (package httpapi) reads from the server: each
// method takes the caller's namespace ("" is DefaultNamespace) where the
// answer depends on it, and returns a value that encodes to the response's
// JSON body. A *FieldError names the parameter at fault. It is a view of the
// Server and shares its state; get one with Server.API.
//
// Everything it returns that came from code (output, results, error
// messages) is the execution log's copy, tokenized before it was written;
// nothing here restores tokens.
type API struct{ s *Server }

// API returns the server's REST view.
func (s *Server) API() API { return API{s} }

// Page sizes of Executions.
const (
	DefaultExecutionsLimit = 50
	MaxExecutionsLimit     = 200
)

// readyChecker is an Executor that can tell whether it takes executions;
// *sandbox.Manager is one.
type readyChecker interface{ Ready() error }

// Ready reports whether the server can take executions: the sandbox manager
// is open, the database answers, and sandboxes run code (as executions
// show; when none has in the last sandboxFresh, a probe runs one). The
// error says what is not ready.
func (a API) Ready(ctx context.Context) error {
	if r, ok := a.s.exec.(readyChecker); ok {
		if err := r.Ready(); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	if a.s.store != nil {
		if err := a.s.store.Ping(ctx); err != nil {
			return fmt.Errorf("database: %w", err)
		}
	}
	err := a.s.health.check(ctx, func(ctx context.Context) *sandbox.Result {
		defer a.s.enter(DefaultNamespace)()
		req := a.s.WarmRequest(ctx, DefaultNamespace)
		req.Code, req.Timeout = "pass", probeTimeout
		return a.s.exec.Exec(ctx, req)
	})
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// SearchTools is search_tools: its structured output, a SearchToolsOutput.
// limit and offset 0 mean the tool's defaults.
func (a API) SearchTools(_ context.Context, query, server, detailLevel string, limit, offset int) (any, error) {
	out, err := a.s.searchTools(SearchToolsInput{Query: query, Server: server, DetailLevel: detailLevel, Limit: limit, Offset: offset})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExecutionsPage is a page of a namespace's execution log, newest first.
type ExecutionsPage struct {
	Executions []ExecutionEntry `json:"executions"`
	// NextBefore is the before of the next page, nil on the last one.
	NextBefore *int64 `json:"next_before"`
}

// ExecutionEntry is one logged execution. Code, output, result and error
// message are the log's bounded excerpts, as the model received them: with
// personal data tokenized.
type ExecutionEntry struct {
	ID        int64  `json:"id"`
	SessionID string `json:"session_id"`
	Code      string `json:"code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	// Result is the result's JSON value; when the log cut it short it is
	// the excerpt as a string (ending in a note of the bytes dropped), and
	// null when there was none.
	Result       any    `json:"result"`
	ErrorType    string `json:"error_type"`
	ErrorMessage string `json:"error_message"`
	// ErrorTraceback is the error's Python traceback (an excerpt), or "".
	ErrorTraceback string          `json:"error_traceback"`
	DurationMS     int64           `json:"duration_ms"`
	ToolCalls      json.RawMessage `json:"tool_calls"` // [{name, ok, duration_ms}]
	Isolation      string          `json:"isolation"`
	// Network is what the code reached through the egress proxy:
	// [{host, port, connections, sent, received, refused}].
	Network   json.RawMessage `json:"network"`
	CreatedAt time.Time       `json:"created_at"`
}

// Executions returns a page of ns's execution log, newest first: up to
// limit executions (0 means DefaultExecutionsLimit; at most
// MaxExecutionsLimit) with ids below before (0 means from the newest).
func (a API) Executions(ctx context.Context, ns string, before int64, limit int) (any, error) {
	if limit == 0 {
		limit = DefaultExecutionsLimit
	}
	if limit < 1 || limit > MaxExecutionsLimit {
		return nil, fieldError("limit", "%d is out of range 1..%d", limit, MaxExecutionsLimit)
	}
	if before < 0 {
		return nil, fieldError("before", "%d is not an execution id", before)
	}
	page := ExecutionsPage{Executions: []ExecutionEntry{}}
	if a.s.store == nil {
		return page, nil
	}
	// One more than asked says whether there is a next page.
	list, err := a.s.store.ListExecutions(ctx, namespace(ns), before, limit+1)
	if err != nil {
		return nil, err
	}
	if len(list) > limit {
		list = list[:limit]
		next := list[limit-1].ID
		page.NextBefore = &next
	}
	for _, e := range list {
		entry := ExecutionEntry{
			ID: e.ID, SessionID: e.SessionID, Code: e.Code, Stdout: e.StdoutExcerpt, Stderr: e.StderrExcerpt,
			ErrorType: e.ErrorType, ErrorMessage: e.ErrorMessage, ErrorTraceback: e.ErrorTraceback, DurationMS: e.Duration.Milliseconds(),
			ToolCalls: e.ToolCalls, Isolation: e.Isolation, Network: e.Network, CreatedAt: e.CreatedAt,
		}
		switch {
		case e.ResultExcerpt == "":
		case json.Valid([]byte(e.ResultExcerpt)):
			entry.Result = json.RawMessage(e.ResultExcerpt)
		default:
			entry.Result = e.ResultExcerpt
		}
		if len(entry.ToolCalls) == 0 {
			entry.ToolCalls = json.RawMessage("[]")
		}
		page.Executions = append(page.Executions, entry)
	}
	return page, nil
}

// SkillsList is the skills of a namespace.
type SkillsList struct {
	Skills []SkillEntry `json:"skills"`
}

// SkillEntry is the latest version of one skill.
type SkillEntry struct {
	Name        string    `json:"name"`
	Version     int       `json:"version"`
	Description string    `json:"description"`
	Tags        []string  `json:"tags"`
	CreatedAt   time.Time `json:"created_at"`
}

// Skills lists the latest version of each of ns's skills, by name.
func (a API) Skills(ctx context.Context, ns string) (any, error) {
	out := SkillsList{Skills: []SkillEntry{}}
	if a.s.skills == nil {
		return out, nil
	}
	list, err := a.s.skills.List(ctx, namespace(ns), "")
	if err != nil {
		return nil, err
	}
	for _, sk := range list {
		tags := sk.Tags
		if tags == nil {
			tags = []string{}
		}
		out.Skills = append(out.Skills, SkillEntry{Name: sk.Name, Version: sk.Version, Description: sk.Description,
			Tags: tags, CreatedAt: sk.CreatedAt})
	}
	return out, nil
}

// errNoLog is the answer to Stats without a store.
var errNoLog = errors.New("this server keeps no execution log")

// Stats is get_execution_stats for ns: its structured output, an
// ExecutionStatsOutput. since is as the tool takes it.
func (a API) Stats(ctx context.Context, ns, since string) (any, error) {
	if a.s.store == nil {
		return nil, errNoLog
	}
	defer a.s.enter(namespace(ns))() // it reads the workspace's usage
	out, err := a.s.stats(ctx, namespace(ns), since)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpstreamsList is the upstream servers' states.
type UpstreamsList struct {
	Upstreams []UpstreamState `json:"upstreams"`
}

// Upstreams lists the upstream servers and their states now.
func (a API) Upstreams(context.Context) (any, error) {
	return UpstreamsList{Upstreams: a.s.upstreamStates()}, nil
}

// TaskInfo is a task as /api/v1/tasks lists it.
type TaskInfo struct {
	ID            string    `json:"id"`
	Tool          string    `json:"tool"`
	Status        string    `json:"status"`
	StatusMessage string    `json:"status_message,omitempty"`
	Replica       string    `json:"replica,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// TasksList is /api/v1/tasks' answer.
type TasksList struct {
	Tasks []TaskInfo `json:"tasks"`
}

// Tasks lists the namespace's tasks, newest first (at most 100), each with
// its latest state; a task whose replica stopped reads as failed.
func (a API) Tasks(ctx context.Context, ns string) (any, error) {
	out := TasksList{Tasks: []TaskInfo{}}
	if a.s.store == nil {
		return out, nil
	}
	rows, err := a.s.store.ListTasks(ctx, namespace(ns), time.Now(), maxListedTasks)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		row = a.s.checkAlive(row)
		out.Tasks = append(out.Tasks, TaskInfo{ID: row.ID, Tool: row.Tool, Status: row.Status, StatusMessage: row.StatusMessage,
			Replica: row.Replica, CreatedAt: row.CreatedAt, UpdatedAt: lastUpdated(row)})
	}
	return out, nil
}

func namespace(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}
