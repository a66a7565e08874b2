package server

import (
	"errors"
	"net/http"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/metrics"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/upstream"
)

// initMetrics makes the server's metrics (process-wide, see package
// metrics) and hands them to what counts into them.
func (s *Server) initMetrics() {
	opts := metrics.Options{
		// The Go and process collectors add nothing measurable to an
		// idle codecell serve's RSS beyond the Prometheus client itself
		// (which costs about 2 MB: VmRSS, 6 runs each way), and
		// process_resident_memory_bytes is how an operator watches the
		// idle memory budget.
		Runtime: true,
		Replica: s.replica,
		Upstreams: func() []metrics.Upstream {
			sts := s.up.Statuses()
			out := make([]metrics.Upstream, len(sts))
			for i, st := range sts {
				out[i] = metrics.Upstream{Name: st.Name, Up: st.State == upstream.Connected, Tools: st.Tools}
			}
			return out
		},
	}
	if p, ok := s.exec.(poolReporter); ok {
		opts.Pool = func() metrics.Pool {
			ps := p.PoolStats()
			return metrics.Pool{Size: ps.Size, Idle: ps.Idle, Starting: ps.Starting, Busy: ps.Busy, Unbound: ps.Unbound}
		}
	}
	s.metrics = metrics.New(opts)
	s.gate.SetMetrics(s.metrics)
}

// MetricsHandler serves the metrics in the Prometheus text format, for
// /metrics.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.Handler() }

// errorTypeLabel is an error type as logs and metrics show it: one of a
// fixed set (metrics.Outcome), "" for none.
func errorTypeLabel(t string) string {
	if t == "" {
		return ""
	}
	return metrics.Outcome(t)
}

// executionErrorType is the error type of an execution, "" when it
// succeeded. A failure without an error (not produced today) is a
// SandboxError, as in the execution log: it must never count as a success.
func executionErrorType(out ExecuteCodeOutput) string {
	switch {
	case out.Error != nil:
		return out.Error.Type
	case !out.OK:
		return sandbox.ErrSandbox
	}
	return ""
}

// countToolCall counts one upstream tool call of code: t is the tool if
// known is true; err is what the call returned to the sandbox.
func (s *Server) countToolCall(t catalog.Tool, known bool, err error) {
	if !known {
		// The name came from code: as a label it would let code make any
		// number of series.
		s.metrics.ToolCall("", "", metrics.ToolUnknown)
		return
	}
	// The name code imports (get_sum), as search_tools and the log show
	// it, not the server's (get-sum).
	s.metrics.ToolCall(t.Server, t.Ident, toolOutcome(err))
}

// toolOutcome maps the error callTool returns to a metrics outcome, by the
// Python exception kind callTool chose for it.
func toolOutcome(err error) string {
	if err == nil {
		return metrics.ToolOK
	}
	var ce *sandbox.CallError
	if errors.As(err, &ce) {
		switch ce.Kind {
		case "PermissionError":
			return metrics.ToolDenied
		case "ValueError":
			return metrics.ToolBadArguments
		case "TimeoutError":
			return metrics.ToolTimeout
		}
	}
	return metrics.ToolError
}
