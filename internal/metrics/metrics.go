package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of an upstream tool call, the outcome label of tool_calls_total.
const (
	ToolOK           = "ok"
	ToolError        = "error"         // the tool answered with an error, or the call did not reach it
	ToolTimeout      = "timeout"       // the call ran out of time
	ToolDenied       = "denied"        // policy refused the call
	ToolBadArguments = "bad_arguments" // the arguments could not be prepared (restoring tokens failed)
	ToolUnknown      = "unknown_tool"  // no such tool is known
)

// OutcomeOK is the outcome label of an execution without an error.
const OutcomeOK = "ok"

// Pool is the warm sandbox pool's state at one moment.
type Pool struct {
	Size     int // idle sandboxes kept warm per workspace
	Idle     int
	Starting int
	Busy     int
	Unbound  int // started for no namespace yet, ready or starting
}

// Upstream is one upstream MCP server's state at one moment.
type Upstream struct {
	Name  string
	Up    bool // connected
	Tools int
}

// Options configure Metrics.
type Options struct {
	// Pool reports the warm pool at scrape time; nil leaves out the pool
	// series.
	Pool func() Pool
	// Upstreams reports the upstream servers at scrape time; nil leaves out
	// the upstream series.
	Upstreams func() []Upstream
	// Runtime adds the Go runtime and process collectors (go_*,
	// process_*); false leaves them out.
	Runtime bool
	// Replica, when not empty, labels every series replica="<Replica>", so
	// that the series of several replicas behind one balancer stay apart
	// wherever they are gathered (a scraper that adds its own instance
	// label does not need it, one reading through the balancer does).
	Replica string
}

// Metrics are codecell's metrics, in a registry of their own (not the
// Prometheus client's global one, so that two servers in one process, as in
// tests, do not share counts). They are safe for concurrent use. A nil
// *Metrics records nothing, so code paths need not check.
type Metrics struct {
	reg             *prometheus.Registry
	handler         http.Handler
	executions      *prometheus.CounterVec
	duration        prometheus.Histogram
	toolCalls       *prometheus.CounterVec
	piiTokens       *prometheus.CounterVec
	tasks           *prometheus.CounterVec
	approvals       *prometheus.CounterVec
	toolResultBytes prometheus.Counter
	egressConns     *prometheus.CounterVec
	egressBytes     *prometheus.CounterVec
	returnedBytes   prometheus.Counter
	savedBytes      prometheus.Counter
}

// durationBuckets are the upper bounds, in seconds, of the execution
// duration histogram: from 1 ms (a warm pool's trivial cell) to 120 s (the
// longest timeout codecell's config allows by default).
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// New returns Metrics with their collectors registered.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_executions_total",
			Help: "Executions by outcome: ok, or the error type.",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "codecell_execution_duration_seconds",
			Help:    "Wall-clock time of executions.",
			Buckets: durationBuckets,
		}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_tool_calls_total",
			Help: "Upstream tool calls made by code, by server, tool and outcome.",
		}, []string{"server", "tool", "outcome"}),
		piiTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_pii_tokens_total",
			Help: "Personal data values replaced by tokens in what went to clients, by kind.",
		}, []string{"kind"}),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_task_transitions_total",
			Help: "Executions that ran as MCP tasks, by the status each entered (working, input_required, completed, failed, cancelled).",
		}, []string{"status"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_approvals_total",
			Help: "Tool calls that needed a person's approval, by outcome (accepted, accepted_for_execution, allowed_for_execution, decline, cancel, no_answer, refused).",
		}, []string{"outcome"}),
		egressConns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_egress_connections_total",
			Help: "Connections code made through the egress proxy (sandbox.network), by outcome (allowed, refused).",
		}, []string{"outcome"}),
		egressBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "codecell_egress_bytes_total",
			Help: "Bytes through the egress proxy, by direction (sent: from the code, received: to it).",
		}, []string{"direction"}),
		toolResultBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "codecell_tool_result_bytes_total",
			Help: "Bytes of upstream tool results that code received in the sandbox.",
		}),
		returnedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "codecell_returned_bytes_total",
			Help: "Bytes executions returned to the model (output and result).",
		}),
		savedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "codecell_context_bytes_saved_total",
			Help: "Sum over executions of tool result bytes minus returned bytes, when positive: context kept out of the model.",
		}),
	}
	var reg prometheus.Registerer = m.reg
	if opts.Replica != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"replica": opts.Replica}, reg)
	}
	reg.MustRegister(m.executions, m.duration, m.toolCalls, m.piiTokens, m.tasks, m.approvals,
		m.egressConns, m.egressBytes, m.toolResultBytes, m.returnedBytes, m.savedBytes)
	if opts.Pool != nil {
		reg.MustRegister(poolCollector(opts.Pool))
	}
	if opts.Upstreams != nil {
		reg.MustRegister(upstreamCollector(opts.Upstreams))
	}
	if opts.Runtime {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		// A collector that fails still leaves the others' series worth
		// serving; the failure shows in the response's comments.
		ErrorHandling: promhttp.ContinueOnError,
	})
	return m
}

// Handler serves the metrics in the Prometheus text format (or another
// format the scraper negotiates).
func (m *Metrics) Handler() http.Handler { return m.handler }

// Execution records one finished execution: errorType is "" when it
// succeeded; toolResultBytes and returnedBytes are its context savings.
func (m *Metrics) Execution(errorType string, d time.Duration, toolResultBytes, returnedBytes int64) {
	if m == nil {
		return
	}
	m.executions.WithLabelValues(Outcome(errorType)).Inc()
	m.duration.Observe(d.Seconds())
	m.toolResultBytes.Add(float64(max(toolResultBytes, 0)))
	m.returnedBytes.Add(float64(max(returnedBytes, 0)))
	if saved := toolResultBytes - returnedBytes; saved > 0 {
		m.savedBytes.Add(float64(saved))
	}
}

// Egress records one execution's traffic through the egress proxy.
func (m *Metrics) Egress(allowed, refused int, sent, received int64) {
	if m == nil || allowed+refused == 0 {
		return
	}
	m.egressConns.WithLabelValues("allowed").Add(float64(allowed))
	m.egressConns.WithLabelValues("refused").Add(float64(refused))
	m.egressBytes.WithLabelValues("sent").Add(float64(sent))
	m.egressBytes.WithLabelValues("received").Add(float64(received))
}

// ToolCall records one upstream tool call. server and tool are the
// upstream's names for them, "" when the tool is unknown; outcome is one of
// the Tool* constants.
func (m *Metrics) ToolCall(server, tool, outcome string) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(server, tool, outcome).Inc()
}

// TaskStatus records a task entering status.
func (m *Metrics) TaskStatus(status string) {
	if m == nil {
		return
	}
	m.tasks.WithLabelValues(status).Inc()
}

// Approval records the outcome of a call that needed approval.
func (m *Metrics) Approval(outcome string) {
	if m == nil {
		return
	}
	m.approvals.WithLabelValues(outcome).Inc()
}

// PIITokens records the values one tokenization replaced, counted by kind
// (as pii.Detector.Tokenize returns them).
func (m *Metrics) PIITokens(counts map[string]int) {
	if m == nil {
		return
	}
	for kind, n := range counts {
		if n > 0 {
			m.piiTokens.WithLabelValues(kind).Add(float64(n))
		}
	}
}
