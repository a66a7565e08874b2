package server

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/textcut"
	"github.com/codecell/codecell/internal/workspace"
)

// Bounds of what the execution log keeps of one execution. Each excerpt is
// cut at a character boundary and says how much was dropped.
const (
	logExcerpt = 4 << 10  // stdout, stderr, result and error message, each
	logCode    = 64 << 10 // the code: enough to read what ran, without a 1 MiB row per call
)

// recordTimeout bounds the write of one log entry; it is well above the
// store's busy timeout, so a slow disk, not a lock, is what trips it.
const recordTimeout = 15 * time.Second

// excerpt returns text cut to at most max bytes where no value is cut
// (package textcut), with a note of how many bytes were dropped.
func (s *Server) excerpt(text string, max int) string {
	if len(text) <= max {
		return text
	}
	cut := textcut.Cut(text, max, s.gate.Cut)
	return fmt.Sprintf("%s\n[... %d more bytes]", text[:cut], len(text)-cut)
}

// ExecutionStatsInput is the input of get_execution_stats.
type ExecutionStatsInput struct {
	Since string `json:"since,omitempty" jsonschema:"Count only executions from this time on: an RFC 3339 time such as 2026-01-02T15:04:05Z, or a duration back from now such as 1h or 30m. Default: every execution logged."`
}

// ExecutionStatsOutput is the result of get_execution_stats (docs/tools.md, "stats").
// The counts are the calling namespace's; pool, isolation and upstreams
// are the server's.
type ExecutionStatsOutput struct {
	Since          string          `json:"since,omitempty" jsonschema:"The start of the period counted (RFC 3339), when since was given."`
	Total          int             `json:"total" jsonschema:"Executions logged in the period."`
	OK             int             `json:"ok" jsonschema:"Executions that ran to the end without an error."`
	Failed         int             `json:"failed" jsonschema:"Executions that ended in an error."`
	ErrorsByType   map[string]int  `json:"errors_by_type" jsonschema:"Failed executions per error type: a Python exception class, or Timeout, MemoryLimit, OutputLimit, ToolCallLimit, WorkspaceQuota, Killed, SandboxError."`
	LatencyMS      LatencyStats    `json:"latency_ms" jsonschema:"Execution wall-clock time percentiles in whole milliseconds (nearest rank); 0 when there were none."`
	ToolCalls      ToolCallStats   `json:"tool_calls" jsonschema:"Upstream tool calls made by the executions."`
	ContextSavings ContextSavings  `json:"context_savings" jsonschema:"Sums over the executions: bytes of tool results that stayed in the sandbox against bytes returned to the model."`
	Pool           *PoolState      `json:"pool,omitempty" jsonschema:"The warm sandbox pool now, over every workspace."`
	Isolation      string          `json:"isolation" jsonschema:"The isolation level in force: production, hardened or development."`
	Workspace      *WorkspaceUsage `json:"workspace,omitempty" jsonschema:"What this namespace's workspace holds against its quota now."`
	Upstreams      []UpstreamState `json:"upstreams" jsonschema:"The upstream MCP servers and their states now."`
}

// LatencyStats are latency percentiles in milliseconds.
type LatencyStats struct {
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
	P99 int64 `json:"p99"`
}

// ToolCallStats counts upstream tool calls.
type ToolCallStats struct {
	Count  int         `json:"count" jsonschema:"Tool calls made."`
	Errors int         `json:"errors" jsonschema:"Tool calls that failed."`
	Top    []ToolUsage `json:"top" jsonschema:"The most called tools, most calls first, at most 10."`
}

// ToolUsage counts the calls of one tool.
type ToolUsage struct {
	Name   string `json:"name" jsonschema:"The tool as code imports it, module.function."`
	Count  int    `json:"count"`
	Errors int    `json:"errors"`
}

// PoolState is the warm sandbox pool's state.
type PoolState struct {
	Size     int `json:"size" jsonschema:"Idle sandboxes kept warm per workspace."`
	Idle     int `json:"idle" jsonschema:"Started sandboxes waiting for an execution."`
	Starting int `json:"starting" jsonschema:"Sandboxes being started."`
	Busy     int `json:"busy" jsonschema:"Sandboxes running an execution or cleaning up after one."`
}

// UpstreamState is one upstream server's state.
type UpstreamState struct {
	Name      string `json:"name"`
	State     string `json:"state" jsonschema:"starting, connected, failed or disabled."`
	ToolCount int    `json:"tool_count"`
	Error     string `json:"error,omitempty"`
}

// poolReporter is an Executor that can report its pool; *sandbox.Manager
// is one.
type poolReporter interface {
	PoolStats() sandbox.PoolStats
}

// addStatsTools adds get_execution_stats. Without a store there is no
// execution log to report, and the tool is left out rather than report
// zeros.
func (s *Server) addStatsTools() {
	if s.store == nil {
		return
	}
	addTool(s, "stats", &mcp.Tool{
		Name:        "get_execution_stats",
		Title:       "Execution statistics",
		Description: "Statistics of this namespace's executions, optionally since a time or for a recent period (since: 1h): totals, failures by error type, latency p50/p95/p99, tool calls and the most called tools, context savings; and the server's sandbox pool, isolation level and upstream servers.",
	}, s.executionStats)
}

func (s *Server) executionStats(ctx context.Context, req *mcp.CallToolRequest, in ExecutionStatsInput) (*mcp.CallToolResult, ExecutionStatsOutput, error) {
	out, err := s.stats(ctx, namespaceOf(req), in.Since)
	if err != nil {
		return nil, ExecutionStatsOutput{}, err
	}
	if room := s.textRoom(req); room > 0 {
		fitStats(&out, room)
	}
	return textResult(renderStats(out)), out, nil
}

// stats is get_execution_stats for ns, for the tool and the REST API; the
// store must be set.
func (s *Server) stats(ctx context.Context, ns, sinceArg string) (ExecutionStatsOutput, error) {
	since, err := parseSince(sinceArg, time.Now())
	if err != nil {
		return ExecutionStatsOutput{}, err
	}
	st, err := s.store.ExecutionStats(ctx, ns, since)
	if err != nil {
		return ExecutionStatsOutput{}, err
	}
	out := ExecutionStatsOutput{
		Total:        st.Total,
		OK:           st.OK,
		Failed:       st.Failed,
		ErrorsByType: st.ByErrorType,
		LatencyMS:    LatencyStats{P50: st.P50.Milliseconds(), P95: st.P95.Milliseconds(), P99: st.P99.Milliseconds()},
		ToolCalls: ToolCallStats{Count: st.ToolCalls, Errors: st.ToolCallErrors,
			Top: make([]ToolUsage, len(st.TopTools))},
		ContextSavings: ContextSavings{ToolResultBytes: st.ToolResultBytes, ReturnedBytes: st.ReturnedBytes},
		Isolation:      string(s.exec.Level()),
		Upstreams:      s.upstreamStates(),
	}
	if !since.IsZero() {
		out.Since = since.UTC().Format(time.RFC3339Nano)
	}
	for i, t := range st.TopTools {
		out.ToolCalls.Top[i] = ToolUsage{Name: t.Name, Count: t.Calls, Errors: t.Errors}
	}
	if p, ok := s.exec.(poolReporter); ok {
		ps := p.PoolStats()
		out.Pool = &PoolState{Size: ps.Size, Idle: ps.Idle, Starting: ps.Starting, Busy: ps.Busy}
	}
	if v, err := s.volume(ns); err == nil {
		if u, err := v.Usage(); err == nil {
			out.Workspace = usageOf(u)
		}
	}
	return out, nil
}

// upstreamStates are the upstream servers and their states now.
func (s *Server) upstreamStates() []UpstreamState {
	out := []UpstreamState{}
	for _, u := range s.up.Statuses() {
		out = append(out, UpstreamState{Name: u.Name, State: string(u.State), ToolCount: u.Tools, Error: u.Error})
	}
	return out
}

// parseSince reads since: "" (everything), an RFC 3339 time, or a positive
// Go duration meaning that long before now.
func parseSince(since string, now time.Time) (time.Time, error) {
	since = strings.TrimSpace(since)
	if since == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(since)
	if err != nil {
		return time.Time{}, fieldError("since", "%q is neither an RFC 3339 time (2026-01-02T15:04:05Z) nor a duration (1h, 30m)", since)
	}
	if d <= 0 {
		return time.Time{}, fieldError("since", "the duration %s must be positive: it is how far back from now to count", since)
	}
	return now.Add(-d), nil
}

// renderStats is the short text form of the stats.
func renderStats(out ExecutionStatsOutput) string {
	var b strings.Builder
	period := "since the log began"
	if out.Since != "" {
		period = "since " + out.Since
	}
	fmt.Fprintf(&b, "executions %s: %d (%d ok, %d failed)\n", period, out.Total, out.OK, out.Failed)
	if len(out.ErrorsByType) > 0 {
		types := make([]string, 0, len(out.ErrorsByType))
		for t := range out.ErrorsByType {
			types = append(types, t)
		}
		sort.Slice(types, func(i, j int) bool {
			a, b := out.ErrorsByType[types[i]], out.ErrorsByType[types[j]]
			return a > b || (a == b && types[i] < types[j])
		})
		parts := make([]string, len(types))
		for i, t := range types {
			parts[i] = fmt.Sprintf("%s %d", t, out.ErrorsByType[t])
		}
		fmt.Fprintf(&b, "errors: %s\n", strings.Join(parts, ", "))
	}
	if out.Total > 0 {
		fmt.Fprintf(&b, "latency: p50 %d ms, p95 %d ms, p99 %d ms\n", out.LatencyMS.P50, out.LatencyMS.P95, out.LatencyMS.P99)
	}
	fmt.Fprintf(&b, "tool calls: %d (%d failed)\n", out.ToolCalls.Count, out.ToolCalls.Errors)
	for _, t := range out.ToolCalls.Top {
		fmt.Fprintf(&b, "  %s: %d (%d failed)\n", t.Name, t.Count, t.Errors)
	}
	fmt.Fprintf(&b, "context savings: %d bytes of tool results stayed in the sandbox, %d bytes returned\n",
		out.ContextSavings.ToolResultBytes, out.ContextSavings.ReturnedBytes)
	if out.Pool != nil {
		fmt.Fprintf(&b, "pool: %d idle, %d starting, %d busy (size %d per workspace)\n", out.Pool.Idle, out.Pool.Starting, out.Pool.Busy, out.Pool.Size)
	}
	fmt.Fprintf(&b, "isolation: %s\n", out.Isolation)
	if u := out.Workspace; u != nil {
		fmt.Fprintf(&b, "workspace: %s (limits enforced by the %s)\n", workspace.Usage{Bytes: u.Bytes, Quota: u.Quota, Entries: u.Entries, MaxEntries: u.MaxEntries}, u.Enforcement)
	}
	for _, u := range out.Upstreams {
		fmt.Fprintf(&b, "upstream %s: %s, %d tools", u.Name, u.State, u.ToolCount)
		if u.Error != "" {
			fmt.Fprintf(&b, " (%s)", u.Error)
		}
		b.WriteString("\n")
	}
	return b.String()
}
