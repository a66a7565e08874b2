package server

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/codecell/codecell/internal/egress"
	"github.com/codecell/codecell/internal/gate"
	"github.com/codecell/codecell/internal/store"
)

// What runCode (exec.go) does once an execution's answer is made: it
// records it in the execution log (committed before the answer returns),
// writes its one log line and counts it in the metrics.

// recordExecution appends one execution to its namespace's execution log,
// every field (code, output, result, error type, message and traceback)
// passed through the gate whole and only then cut to its excerpt, so the
// log holds nothing the model must not see, nor part of a value. It
// returns once the row is committed, so every execution whose result was
// returned is in the log.
//
// A store failure is logged at error level and does not fail the call. The
// code has already run: its tool calls reached the upstreams and its files
// are in the workspace. Reporting an error instead of the result would tell
// the model that nothing happened, invite a retry that repeats those
// effects, and throw away an answer the user is waiting for, all for a
// bookkeeping failure that the operator, not the model, can fix. The error
// line says which execution is missing so the operator can see the gap.
//
// The write does not follow the request's cancellation: a client that gives
// up after the code ran does not undo the run, so it is logged all the same.
func (s *Server) recordExecution(ctx context.Context, j job, out ExecuteCodeOutput) {
	if s.store == nil {
		return
	}
	calls, err := json.Marshal(append([]ToolCall{}, out.calls...))
	if err != nil { // a []ToolCall always encodes; keep the row regardless
		calls = nil
	}
	// gated passes a field through the gate whole, then cuts it.
	ctx = gate.Uncounted(ctx)
	gated := func(text string, max int) string {
		t, err := s.gate.Text(ctx, j.Namespace, text)
		if err != nil {
			return "(withheld: personal data could not be tokenized)"
		}
		return s.excerpt(t, max)
	}
	e := store.Execution{
		Namespace:       j.Namespace,
		SessionID:       out.SessionID,
		Code:            gated(j.Code, logCode),
		StdoutExcerpt:   gated(out.Stdout, logExcerpt),
		StderrExcerpt:   gated(out.Stderr, logExcerpt),
		Duration:        time.Duration(math.Round(out.DurationMS*1000)) * time.Microsecond,
		ToolCalls:       calls,
		Isolation:       out.Isolation,
		ToolResultBytes: out.savings.ToolResultBytes,
		ReturnedBytes:   out.savings.ReturnedBytes,
	}
	if e.SessionID == "" {
		e.SessionID = j.SessionID
	}
	if len(out.Network) > 0 {
		// Host names are the code's to choose, like its output: gated.
		if b, err := json.Marshal(out.Network); err == nil {
			if t, err := s.gate.JSON(ctx, j.Namespace, b); err == nil {
				e.Network = t
			}
		}
	}
	if out.Result != nil {
		if b, err := json.Marshal(out.Result); err == nil {
			if t, err := s.gate.JSON(ctx, j.Namespace, b); err == nil {
				e.ResultExcerpt = s.excerpt(string(t), logExcerpt)
			} else {
				e.ResultExcerpt = "(withheld: personal data could not be tokenized)"
			}
		}
	}
	// A failure must never count as a success; an exception class can be
	// named anything (type("ada@example.org", (Exception,), {})).
	e.ErrorType = gated(executionErrorType(out), logExcerpt)
	if out.Error != nil {
		e.ErrorMessage = gated(out.Error.Message, logExcerpt)
		e.ErrorTraceback = gated(out.Error.Traceback, logExcerpt)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := s.store.RecordExecution(ctx, e); err != nil {
		s.log.Error("execution log: this execution is not recorded", "namespace", j.Namespace,
			"ok", out.OK, "error_type", errorTypeLabel(executionErrorType(out)), "duration_ms", out.DurationMS, "error", err)
	}
}

// observeExecution writes the one log line of a finished execution and
// counts it in the metrics. Nothing the code produced is logged: no code,
// output or error message, which may hold personal data; and the error type,
// a class name the code chooses, only as one of the fixed set of
// metrics.Outcome.
func (s *Server) observeExecution(j job, out ExecuteCodeOutput) {
	errType := executionErrorType(out)
	msg := ""
	if out.Error != nil {
		msg = out.Error.Message
	}
	s.health.observe(errType, msg)
	s.metrics.Execution(errType, time.Duration(out.DurationMS*float64(time.Millisecond)),
		out.savings.ToolResultBytes, out.savings.ReturnedBytes)
	allowed, refused, sent, received := egress.Totals(out.Network)
	s.metrics.Egress(allowed, refused, sent, received)
	s.log.Info("execution", "namespace", j.Namespace, "session_id", out.SessionID, "ok", out.OK,
		"error_type", errorTypeLabel(errType), "duration_ms", out.DurationMS, "tool_calls", len(out.calls),
		"isolation", out.Isolation, "egress_allowed", allowed, "egress_refused", refused)
}
