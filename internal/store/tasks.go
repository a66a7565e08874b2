package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Task statuses, as MCP names them.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskTerminal says a status is final: the task changes no more.
func TaskTerminal(status string) bool {
	return status == TaskCompleted || status == TaskFailed || status == TaskCancelled
}

// Task is a row of the tasks table: an execution that outlives the request
// that started it.
type Task struct {
	ID        string
	Namespace string
	Replica   string // the replica that runs it
	Tool      string
	// Generation is the protocol generation of the client that started
	// it ("2025" or "2026"): its answers keep that generation's shape.
	Generation string
	Status     string
	// StatusMessage says what the task is doing (its latest output), or
	// why it ended.
	StatusMessage string
	// Outcome is the final result (completed) or JSON-RPC error (failed).
	Outcome json.RawMessage
	// InputRequests are the requests the task waits on (input_required);
	// InputResponses the answers a client gave that the task has not
	// taken yet. Both are JSON objects keyed by request id.
	InputRequests  json.RawMessage
	InputResponses json.RawMessage
	// CancelRequested says a client asked to cancel it.
	CancelRequested bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
	HeartbeatAt     time.Time
	TTL             time.Duration
}

// CreateTask records a new task of this Store's replica. It returns once
// the row is committed: a tasks/get on any replica then finds it.
func (s *Store) CreateTask(ctx context.Context, t Task) error {
	if t.ID == "" || t.Namespace == "" {
		return fmt.Errorf("create task: empty id or namespace")
	}
	now := nanos(t.CreatedAt)
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO tasks (id, namespace, replica, tool, generation, status, status_message,
		input_requests, created_at, updated_at, heartbeat_at, ttl_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		t.ID, t.Namespace, s.replica, t.Tool, t.Generation, t.Status, t.StatusMessage, nullJSON(t.InputRequests), now, now, now, t.TTL.Milliseconds())
	if err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	return nil
}

// taskColumns are the columns scanTask reads, in its order.
const taskColumns = `id, namespace, replica, tool, generation, status, status_message, outcome,
	input_requests, input_responses, cancel_requested, created_at, updated_at, heartbeat_at, ttl_ms`

// scanTask reads one row of taskColumns.
func scanTask(row interface{ Scan(...any) error }) (Task, error) {
	var t Task
	var outcome, ireq, iresp sql.NullString
	var cancel int
	var c, u, h, ttl int64
	if err := row.Scan(&t.ID, &t.Namespace, &t.Replica, &t.Tool, &t.Generation, &t.Status, &t.StatusMessage,
		&outcome, &ireq, &iresp, &cancel, &c, &u, &h, &ttl); err != nil {
		return Task{}, err
	}
	t.CreatedAt, t.UpdatedAt, t.HeartbeatAt = fromNanos(c), fromNanos(u), fromNanos(h)
	t.TTL = time.Duration(ttl) * time.Millisecond
	t.CancelRequested = cancel != 0
	t.Outcome, t.InputRequests, t.InputResponses = raw(outcome), raw(ireq), raw(iresp)
	return t, nil
}

// expired says t's TTL has passed at now: it is gone, whether or not the
// sweep deleted it yet.
func (t Task) expired(now time.Time) bool { return now.After(t.CreatedAt.Add(t.TTL)) }

// GetTask returns task id of ns. Another namespace's task, and one whose
// TTL has passed, is ErrNotFound.
func (s *Store) GetTask(ctx context.Context, ns, id string, now time.Time) (Task, error) {
	t, err := scanTask(s.r.QueryRowContext(ctx, s.q("SELECT "+taskColumns+" FROM tasks WHERE id = ? AND namespace = ?"), id, ns))
	if errors.Is(err, sql.ErrNoRows) || (err == nil && t.expired(now)) {
		return Task{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Task{}, fmt.Errorf("task %s: %w", id, err)
	}
	return t, nil
}

func raw(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

func nullJSON(m json.RawMessage) any {
	if m == nil {
		return nil
	}
	return string(m)
}

// ListTasks returns the tasks of ns whose TTL has not passed, newest
// first, at most limit.
func (s *Store) ListTasks(ctx context.Context, ns string, now time.Time, limit int) ([]Task, error) {
	rows, err := s.r.QueryContext(ctx, s.q("SELECT "+taskColumns+` FROM tasks WHERE namespace = ?
		ORDER BY created_at DESC, id LIMIT ?`), ns, limit)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		if !t.expired(now) {
			out = append(out, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// TaskUpdate changes a task the replica runs. A nil field is left as it
// is; Status "" too.
type TaskUpdate struct {
	Status        string
	StatusMessage *string
	Outcome       json.RawMessage
	// InputRequests replaces the outstanding requests; ClearInput empties
	// both them and the answers.
	InputRequests json.RawMessage
	ClearInput    bool
}

// UpdateTask writes u to task id and refreshes its heartbeat. A task that
// is already terminal is not changed: ErrNotFound.
func (s *Store) UpdateTask(ctx context.Context, id string, u TaskUpdate, now time.Time) error {
	set := "updated_at = ?, heartbeat_at = ?"
	args := []any{nanos(now), nanos(now)}
	if u.Status != "" {
		set += ", status = ?"
		args = append(args, u.Status)
	}
	if u.StatusMessage != nil {
		set += ", status_message = ?"
		args = append(args, *u.StatusMessage)
	}
	if u.Outcome != nil {
		set += ", outcome = ?"
		args = append(args, string(u.Outcome))
	}
	if u.ClearInput {
		set += ", input_requests = NULL, input_responses = NULL"
	} else if u.InputRequests != nil {
		set += ", input_requests = ?"
		args = append(args, string(u.InputRequests))
	}
	args = append(args, id)
	res, err := s.w.ExecContext(ctx, s.q("UPDATE tasks SET "+set+` WHERE id = ? AND status NOT IN ('completed', 'failed', 'cancelled')`), args...)
	if err != nil {
		return fmt.Errorf("update task %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("update task %s: %w", id, ErrNotFound)
	}
	return nil
}

// RequestTaskCancel records that a client asked to cancel task id of ns;
// the replica that runs it reads it at its next heartbeat.
func (s *Store) RequestTaskCancel(ctx context.Context, ns, id string) error {
	res, err := s.w.ExecContext(ctx, s.q("UPDATE tasks SET cancel_requested = 1 WHERE id = ? AND namespace = ?"), id, ns)
	if err != nil {
		return fmt.Errorf("cancel task %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("cancel task %s: %w", id, ErrNotFound)
	}
	return nil
}

// SetTaskInputResponses records a client's answers to task id's input
// requests, for the replica that runs it to take (TakeTaskInputResponses).
// Answers given before that replica took earlier ones are merged: a key
// already there keeps its first answer.
func (s *Store) SetTaskInputResponses(ctx context.Context, ns, id string, responses map[string]json.RawMessage) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("task input %s: %w", id, err)
	}
	defer tx.Rollback()
	var cur sql.NullString
	lock := ""
	if s.pg {
		lock = " FOR UPDATE"
	}
	err = tx.QueryRowContext(ctx, s.q("SELECT input_responses FROM tasks WHERE id = ? AND namespace = ?"+lock), id, ns).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("task input %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("task input %s: %w", id, err)
	}
	merged := map[string]json.RawMessage{}
	if cur.Valid {
		json.Unmarshal([]byte(cur.String), &merged)
	}
	for k, v := range responses {
		if _, ok := merged[k]; !ok {
			merged[k] = v
		}
	}
	b, _ := json.Marshal(merged)
	if _, err := tx.ExecContext(ctx, s.q("UPDATE tasks SET input_responses = ? WHERE id = ?"), string(b), id); err != nil {
		return fmt.Errorf("task input %s: %w", id, err)
	}
	return tx.Commit()
}

// TakeTaskInputResponses returns and clears the answers recorded for task
// id, with whether a cancellation was asked.
func (s *Store) TakeTaskInputResponses(ctx context.Context, id string) (map[string]json.RawMessage, bool, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("task input %s: %w", id, err)
	}
	defer tx.Rollback()
	lock := ""
	if s.pg {
		lock = " FOR UPDATE"
	}
	var cur sql.NullString
	var cancel int
	err = tx.QueryRowContext(ctx, s.q("SELECT input_responses, cancel_requested FROM tasks WHERE id = ?"+lock), id).Scan(&cur, &cancel)
	if err != nil {
		return nil, false, fmt.Errorf("task input %s: %w", id, err)
	}
	var out map[string]json.RawMessage
	if cur.Valid {
		if err := json.Unmarshal([]byte(cur.String), &out); err != nil {
			return nil, false, fmt.Errorf("task input %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE tasks SET input_responses = NULL WHERE id = ?"), id); err != nil {
			return nil, false, fmt.Errorf("task input %s: %w", id, err)
		}
	}
	return out, cancel != 0, tx.Commit()
}

// FailReplicaTasks ends every unfinished task of this Store's replica as
// failed with reason: at start-up, as no execution outlives the process
// that ran it.
func (s *Store) FailReplicaTasks(ctx context.Context, reason string, now time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE tasks SET status = 'failed', status_message = ?, updated_at = ?,
		outcome = ?, input_requests = NULL WHERE replica = ? AND status NOT IN ('completed', 'failed', 'cancelled')`),
		reason, nanos(now), FailedOutcome(reason), s.replica)
	if err != nil {
		return 0, fmt.Errorf("fail tasks: %w", err)
	}
	return res.RowsAffected()
}

// FailedOutcome is the JSON-RPC error of a task that failed for reason.
func FailedOutcome(reason string) string {
	b, _ := json.Marshal(map[string]any{"code": -32603, "message": reason})
	return string(b)
}

// DeleteExpiredTasks deletes the tasks whose TTL passed before now.
func (s *Store) DeleteExpiredTasks(ctx context.Context, now time.Time) error {
	// created_at + ttl_ms*1e6 < now, in nanoseconds.
	_, err := s.w.ExecContext(ctx, s.q("DELETE FROM tasks WHERE created_at + ttl_ms * 1000000 < ?"), nanos(now))
	if err != nil {
		return fmt.Errorf("delete expired tasks: %w", err)
	}
	return nil
}
