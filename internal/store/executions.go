package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Execution is one entry of the execution log.
type Execution struct {
	ID            int64 // assigned by RecordExecution; ignored on input
	Namespace     string
	SessionID     string // empty for a one-off execution
	Code          string
	StdoutExcerpt string
	StderrExcerpt string
	ResultExcerpt string
	ErrorType     string // empty means the execution succeeded
	ErrorMessage  string
	// ErrorTraceback is the Python traceback of the error, if it has one.
	ErrorTraceback string
	Duration       time.Duration // stored in whole milliseconds
	// ToolCalls is a JSON array describing the tool calls made, one object
	// each; ExecutionStats reads their "name" (a string) and "ok" (a bool)
	// and leaves other fields to the caller. Nil is stored as [].
	ToolCalls json.RawMessage
	Isolation string
	// ToolResultBytes and ReturnedBytes are the execution's context
	// savings: bytes of tool results that stayed in the sandbox, and bytes
	// returned to the model.
	ToolResultBytes int64
	ReturnedBytes   int64
	// Network is a JSON array of what the code reached through the
	// egress proxy (egress.Flow objects); nil is stored as [].
	Network   json.RawMessage
	CreatedAt time.Time // zero means now
}

// Failed reports whether the execution ended in an error.
func (e Execution) Failed() bool { return e.ErrorType != "" }

// Stats summarises the execution log of one namespace.
type Stats struct {
	Total       int
	OK          int
	Failed      int
	ByErrorType map[string]int // failures per error type; never nil
	// Latency percentiles by nearest rank over all executions counted;
	// zero when there are none.
	P50, P95, P99 time.Duration

	// ToolCalls counts the elements of the executions' tool-call arrays
	// and ToolCallErrors those whose "ok" is not true.
	ToolCalls      int
	ToolCallErrors int
	// TopTools are the most called tools by their "name", most calls first
	// (ties by name), at most TopToolsLimit; never nil. Calls without a
	// string name count in ToolCalls only.
	TopTools []ToolStat

	// ToolResultBytes and ReturnedBytes are the sums of the executions'.
	ToolResultBytes int64
	ReturnedBytes   int64
}

// ToolStat counts the calls of one tool.
type ToolStat struct {
	Name   string
	Calls  int
	Errors int // calls whose "ok" is not true
}

// TopToolsLimit is how many tools Stats.TopTools lists at most.
const TopToolsLimit = 10

// Page sizes for ListExecutions.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// insertExecutionSQL is RecordExecution's statement (Store.insertExecution).
// PostgreSQL's gets RETURNING id (its driver has no LastInsertId); SQLite's
// does not, as a statement with RETURNING took a sixth more of the row's
// CPU there (BenchmarkRecordExecution: 161 to 177 us against 193 to 199).
const insertExecutionSQL = `INSERT INTO executions
	(namespace, session_id, code, stdout_excerpt, stderr_excerpt, result_excerpt,
	 error_type, error_message, error_traceback, duration_ms, tool_calls, isolation, tool_result_bytes,
	 returned_bytes, network, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// RecordExecution appends e to the log of e.Namespace and returns its id.
// When it returns nil the row is committed and synced.
func (s *Store) RecordExecution(ctx context.Context, e Execution) (int64, error) {
	if e.Namespace == "" {
		return 0, fmt.Errorf("record execution: empty namespace")
	}
	calls := string(e.ToolCalls)
	if len(e.ToolCalls) == 0 {
		calls = "[]"
	} else if !json.Valid(e.ToolCalls) {
		return 0, fmt.Errorf("record execution: tool calls are not valid JSON")
	}
	network := string(e.Network)
	if len(e.Network) == 0 {
		network = "[]"
	} else if !json.Valid(e.Network) {
		return 0, fmt.Errorf("record execution: network is not valid JSON")
	}
	created := e.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	// RETURNING rather than LastInsertId, which PostgreSQL's driver lacks.
	id, err := s.logRow(ctx, []any{
		e.Namespace, e.SessionID, e.Code, e.StdoutExcerpt, e.StderrExcerpt, e.ResultExcerpt,
		e.ErrorType, e.ErrorMessage, e.ErrorTraceback, e.Duration.Milliseconds(), calls, e.Isolation,
		e.ToolResultBytes, e.ReturnedBytes, network, nanos(created)})
	if err != nil {
		return 0, fmt.Errorf("record execution: %w", err)
	}
	return id, nil
}

// ListExecutions returns up to limit executions of namespace, newest first,
// with ids below before (before <= 0 means from the newest). To page, pass
// the ID of the last execution returned. limit <= 0 means DefaultListLimit;
// it is capped at MaxListLimit.
func (s *Store) ListExecutions(ctx context.Context, namespace string, before int64, limit int) ([]Execution, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT id, namespace, session_id, code, stdout_excerpt,
		stderr_excerpt, result_excerpt, error_type, error_message, error_traceback, duration_ms, tool_calls,
		isolation, tool_result_bytes, returned_bytes, network, created_at
		FROM executions WHERE namespace = ? AND id < ? ORDER BY id DESC LIMIT ?`),
		namespace, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list executions: %w", err)
	}
	defer rows.Close()
	var out []Execution
	for rows.Next() {
		var e Execution
		var ms, created int64
		var calls, network string
		if err := rows.Scan(&e.ID, &e.Namespace, &e.SessionID, &e.Code, &e.StdoutExcerpt,
			&e.StderrExcerpt, &e.ResultExcerpt, &e.ErrorType, &e.ErrorMessage, &e.ErrorTraceback, &ms, &calls,
			&e.Isolation, &e.ToolResultBytes, &e.ReturnedBytes, &network, &created); err != nil {
			return nil, fmt.Errorf("list executions: %w", err)
		}
		e.Duration = time.Duration(ms) * time.Millisecond
		e.ToolCalls = json.RawMessage(calls)
		e.Network = json.RawMessage(network)
		e.CreatedAt = fromNanos(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list executions: %w", err)
	}
	return out, nil
}

// ExecutionStats summarises the executions of namespace created at or after
// since (the zero time means all). Both of its queries read one snapshot
// (a read transaction under WAL), so the counts agree with each other.
// Percentiles are computed here rather than in SQL, which has no percentile
// function; the durations are read in one pass (8 bytes a row). Tool calls
// are aggregated in SQL (json_each; jsonb_array_elements in PostgreSQL),
// one row per distinct tool.
func (s *Store) ExecutionStats(ctx context.Context, namespace string, since time.Time) (Stats, error) {
	st := Stats{ByErrorType: map[string]int{}, TopTools: []ToolStat{}}
	var from int64 = -1 << 63
	if !since.IsZero() {
		from = nanos(since)
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if s.pg {
		// PostgreSQL's default, READ COMMITTED, takes a snapshot per
		// statement; the two queries must share one.
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.r.BeginTx(ctx, opts)
	if err != nil {
		return st, fmt.Errorf("execution stats: %w", err)
	}
	defer tx.Rollback()

	rows, err := tx.QueryContext(ctx, s.q(`SELECT error_type, duration_ms, tool_result_bytes, returned_bytes
		FROM executions WHERE namespace = ? AND created_at >= ?`), namespace, from)
	if err != nil {
		return st, fmt.Errorf("execution stats: %w", err)
	}
	defer rows.Close()
	var durs []int64
	for rows.Next() {
		var et string
		var ms, kept, returned int64
		if err := rows.Scan(&et, &ms, &kept, &returned); err != nil {
			return st, fmt.Errorf("execution stats: %w", err)
		}
		st.Total++
		if et == "" {
			st.OK++
		} else {
			st.Failed++
			st.ByErrorType[et]++
		}
		st.ToolResultBytes += kept
		st.ReturnedBytes += returned
		durs = append(durs, ms)
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("execution stats: %w", err)
	}
	rows.Close()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	st.P50 = percentile(durs, 50)
	st.P95 = percentile(durs, 95)
	st.P99 = percentile(durs, 99)

	rows, err = tx.QueryContext(ctx, s.toolCallsQuery(), namespace, from)
	if err != nil {
		return st, fmt.Errorf("execution stats: tool calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name any
		var t ToolStat
		if err := rows.Scan(&name, &t.Calls, &t.Errors); err != nil {
			return st, fmt.Errorf("execution stats: tool calls: %w", err)
		}
		st.ToolCalls += t.Calls
		st.ToolCallErrors += t.Errors
		if n, ok := name.(string); ok {
			t.Name = n
			st.TopTools = append(st.TopTools, t)
		}
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("execution stats: tool calls: %w", err)
	}
	sort.Slice(st.TopTools, func(i, j int) bool {
		a, b := st.TopTools[i], st.TopTools[j]
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.Name < b.Name
	})
	if len(st.TopTools) > TopToolsLimit {
		st.TopTools = st.TopTools[:TopToolsLimit]
	}
	return st, nil
}

// percentile returns the nearest-rank p-th percentile of sorted
// millisecond durations: the smallest value with at least p% of the values
// at or below it.
func percentile(sorted []int64, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	rank = max(rank, 1)
	return time.Duration(sorted[rank-1]) * time.Millisecond
}

// toolCallsQuery counts the tool calls of a namespace's executions since a
// time (its two parameters), by name: rows of name (a string, or NULL for
// calls that are not objects with a string name), calls and errors (calls
// whose "ok" is not true). Each dialect walks JSON its own way.
func (s *Store) toolCallsQuery() string {
	if s.pg {
		return `SELECT
		CASE WHEN jsonb_typeof(c.v) = 'object' AND jsonb_typeof(c.v->'name') = 'string' THEN c.v->>'name' END AS name,
		COUNT(*),
		SUM(CASE WHEN jsonb_typeof(c.v) = 'object' AND c.v->'ok' = 'true'::jsonb THEN 0 ELSE 1 END)
		FROM executions AS e
		CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(e.tool_calls::jsonb) = 'array'
			THEN e.tool_calls::jsonb ELSE '[]'::jsonb END) AS c(v)
		WHERE e.namespace = $1 AND e.created_at >= $2
		GROUP BY 1`
	}
	// json_each gives a string element's value unquoted, which
	// json_extract cannot parse: only objects are looked into, through CASE
	// (SQLite's OR and AND do not short-circuit). A JSON true is extracted
	// as the integer 1.
	return `SELECT
		CASE WHEN c.type = 'object' THEN json_extract(c.value, '$.name') END AS name,
		COUNT(*),
		SUM(CASE WHEN c.type != 'object' THEN 1 WHEN json_extract(c.value, '$.ok') IS 1 THEN 0 ELSE 1 END)
		FROM executions AS e, json_each(e.tool_calls) AS c
		WHERE e.namespace = ? AND e.created_at >= ? AND json_type(e.tool_calls) = 'array'
		GROUP BY name`
}
