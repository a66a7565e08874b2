// Package server is codecell's MCP server: its tools, one file per toolset
// (workspace.go, skills.go, env.go, analysis.go, stats.go, discovery.go,
// privacy.go, codefiles.go, sessions.go), on top of the sandbox and the
// other domain packages. It serves whatever transport it is given, with one
// of its own: stdio.go, the SDK's stdio transport made to fail one bad
// message instead of the session. httpapi serves it over HTTP, and
// cmd/codecell connects the two.
//
// # The life of an execution
//
// execute_code is the product's path, and every step of it is in a file
// named exec*.go but for the two ends:
//
//  1. The SDK hands the request to the gate's middleware (gatemw.go), which
//     gives it a scope: the values restored for it will be tokenized again
//     in its answer.
//  2. typedHandler (tools.go) checks the arguments against the input schema,
//     with its defaults, and decodes them.
//  3. executeCode (exec.go) checks what the schema cannot (checkExecInput)
//     and makes a job; runCode (exec.go) runs it.
//  4. runCode prepares (exec_prepare.go): the namespace's workspace volume,
//     mounted and indexed before any sandbox sees it; its skills directory;
//     its Python environment. The volume's Run begins, and with it the
//     quota watch.
//  5. execute (exec.go) enters the sandbox: a live session's interpreter
//     (sessions.go), or a fresh process from the pool (package sandbox,
//     whose runner speaks internal/runner/PROTOCOL.md).
//  6. While the code runs, four callbacks come back up from the sandbox:
//     Request.Calls for each tool call the code makes (exec_calls.go: to an
//     upstream server, personal data restored into its arguments, or to
//     codecell's own tools); Request.Cut for a stream past the output
//     limit (the gate's Cut: never inside a value); Request.OnOutput for
//     each chunk of output (exec_progress.go: progress notifications); and
//     the workspace Run's Breach, which stops the execution when it passes
//     the quota where the kernel does not hold it (exec_quota.go).
//  7. When it ends, the Run reports what changed in the workspace and
//     undoes what passed the quota (exec_quota.go); the answer is made and
//     cut to the answer budget, head and tail kept, the whole saved in the
//     workspace (exec_answer.go); the execution is committed to the log and
//     counted (exec_finish.go).
//  8. typedHandler puts the output in the result's structured content, and
//     on its way out the gate's middleware tokenizes every string of the
//     answer (package gate).
//
// The execution has five shapes going down (ExecuteCodeInput, job,
// sandbox.Request, the runner's exec frame, a Python dict) and five coming
// up (the runner's result dict, its result frame, sandbox.Result,
// ExecuteCodeOutput, the MCP result's JSON).
//
// # Concurrency
//
// A Server serves any number of requests at once, from any number of
// clients: its tools may be called concurrently, and each namespace's
// state (workspace, sessions, environment, vault) is guarded where it
// lives. Executions of one interpreter session take turns.
package server
