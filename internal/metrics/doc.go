// Package metrics holds codecell's Prometheus metrics and serves them in the
// Prometheus text format.
//
// The metrics are process-wide: they count every namespace's executions,
// tool calls and tokens together, and carry no namespace label. Any token
// that can read /metrics therefore sees the volume of every namespace's
// activity (counts, durations, tool names), though never code, output or
// personal data. A namespace's own figures are get_execution_stats and
// /api/v1/stats.
//
// The series (all prefixed codecell_):
//
//	executions_total{outcome}                 counter: "ok", or the error type (a Python exception class,
//	                                          Timeout, MemoryLimit, OutputLimit, ToolCallLimit, Killed,
//	                                          SandboxError) when it is one of Python's built-in exceptions
//	                                          or codecell's own types, else "other" (see Outcome)
//	execution_duration_seconds                histogram: wall-clock time of each execution, 1 ms to 120 s
//	tool_calls_total{server,tool,outcome}     counter: upstream tool calls made by code; server and tool are
//	                                          the upstream's own names, outcome one of the Tool* constants;
//	                                          a call of an unknown tool has empty server and tool labels
//	pii_tokens_total{kind}                    counter: values replaced by tokens in what went to a client
//	                                          (each tokenization counts, so a value shown twice counts twice)
//	tool_result_bytes_total                   counter: bytes of tool results the code received
//	returned_bytes_total                      counter: bytes executions returned to the model
//	context_bytes_saved_total                 counter: per execution, tool_result_bytes - returned_bytes when
//	                                          positive, summed; the context that stayed out of the model.
//	                                          It is not the difference of the two totals above: an execution
//	                                          that returns more than its tools gave saves 0, not a negative
//	pool_sandboxes{state}                     gauge read at scrape: warm pool sandboxes idle, starting, busy
//	pool_target_size                          gauge read at scrape: idle sandboxes kept warm per workspace
//	upstream_up{server}                       gauge read at scrape: 1 when the upstream server is connected
//	upstream_tools{server}                    gauge read at scrape: the tools it offers
//
// With Options.Runtime, the Go runtime (go_*) and process (process_*) series
// of the Prometheus client are added: process_resident_memory_bytes is how
// an operator watches the idle-memory budget.
//
// ParseText reads the text format back into a value per series, for tests
// that check what a scrape shows.
package metrics
