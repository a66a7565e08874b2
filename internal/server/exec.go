package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/egress"
	"github.com/codecell/codecell/internal/sandbox"
)

// maxCode is the largest code an execute_code call accepts (docs/tools.md, execute_code).
const maxCode = 1 << 20

// ExecuteCodeInput is the input of execute_code.
type ExecuteCodeInput struct {
	Code      string         `json:"code" jsonschema:"Python; returns result or the last expression."`
	SessionID string         `json:"session_id,omitempty" jsonschema:"Calls with one id share globals."`
	Context   map[string]any `json:"context,omitempty" jsonschema:"Globals to bind."`
	// TimeoutSeconds is a pointer so that 0, which is out of range, is
	// told apart from absent. Its description, the default and the most,
	// is the config's (addExecTools).
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty"`
	Language       string   `json:"language,omitempty" jsonschema:"python"`
}

// ExecuteCodeOutput is the structured result of execute_code (docs/tools.md).
// It is lean, as a model reads it after every execution: what is empty or
// as expected (no output, nothing cut, no files, no tool calls) is left out;
// result and error are always there, null when there is none.
type ExecuteCodeOutput struct {
	OK             bool               `json:"ok" jsonschema:"True when the code ran to the end without an error."`
	Stdout         string             `json:"stdout,omitempty" jsonschema:"Standard output, within the answer budget."`
	Stderr         string             `json:"stderr,omitempty" jsonschema:"Standard error, within the answer budget."`
	Truncated      *Truncated         `json:"truncated,omitempty" jsonschema:"Which parts were cut, at the output limit or the answer budget."`
	OutputFile     string             `json:"output_file,omitempty" jsonschema:"When the answer budget cut the answer: the workspace file with the whole output, also a resource link."`
	Result         any                `json:"result" jsonschema:"The value of result or of the last expression: JSON values as JSON, others as their repr."`
	Error          *sandbox.ExecError `json:"error" jsonschema:"Null, or the error: type is the Python exception class, or Timeout, MemoryLimit, OutputLimit, ToolCallLimit, WorkspaceQuota, Killed or SandboxError."`
	DurationMS     float64            `json:"duration_ms" jsonschema:"Wall-clock time of the execution in milliseconds."`
	ToolCalls      *ToolCalls         `json:"tool_calls,omitempty" jsonschema:"Calls the code made to upstream tools, if any."`
	Files          []string           `json:"files,omitempty" jsonschema:"Workspace files the code created or changed."`
	FilesDeleted   []string           `json:"files_deleted,omitempty" jsonschema:"Workspace files the code deleted."`
	FilesOmitted   int                `json:"files_omitted,omitempty" jsonschema:"Files created, changed or deleted beyond those in files and files_deleted (at most 100, and within the answer budget); list_workspace_files lists them."`
	SessionID      string             `json:"session_id,omitempty" jsonschema:"The session used, if any."`
	SessionStarted bool               `json:"session_started,omitempty" jsonschema:"True when this call started session_id: a new interpreter, without the names of earlier calls (a new id, a typo, or one whose interpreter ended or was closed)."`
	// SessionElsewhere is set with SessionStarted when replicas share the
	// database and another one's records hold this session id.
	SessionElsewhere string          `json:"session_elsewhere,omitempty" jsonschema:"With session_started, when codecell runs as several replicas: the replica a session with this id was last seen on. Its interpreter cannot be reached from here (that replica stopped, or this MCP session is a new one on another replica); the names it held are not in the new one."`
	ContextSavings   *ContextSavings `json:"context_savings,omitempty" jsonschema:"When tools were called: bytes of tool results that stayed in the sandbox against bytes returned."`
	Isolation        string          `json:"isolation" jsonschema:"The isolation level the code ran under."`
	Images           []ImageInfo     `json:"images,omitempty" jsonschema:"Images the code showed (display_image, matplotlib figures left open, an Image result), sent as image content."`
	Network          []egress.Flow   `json:"network,omitempty" jsonschema:"When the sandbox has a network: each destination the code tried (host, port, connections, bytes sent and received), with why the proxy refused it when it did."`
	NetworkOmitted   int             `json:"network_omitted,omitempty" jsonschema:"Destinations tried beyond those listed in network."`
	// Table is a *sandbox.Table; any keeps its schema as short as result's.
	Table any `json:"table,omitempty" jsonschema:"When the result is a small pandas DataFrame or Series: the whole of it as {columns, index, data}, beside its text in result."`

	// calls is every upstream call, for the execution log and the metrics;
	// the answer lists only the failed ones.
	calls []ToolCall
	// savings is ContextSavings, kept whether or not the answer shows it.
	savings ContextSavings
	// files are the Files with their sizes, for their resource links;
	// filesIncomplete says the workspace's changes were not all tracked.
	files           []reportedFile
	filesIncomplete bool
}

// Truncated says which parts of an answer were cut.
type Truncated struct {
	Stdout bool `json:"stdout,omitempty"`
	Stderr bool `json:"stderr,omitempty"`
	Result bool `json:"result,omitempty"`
	// Error says the error's message or traceback was cut.
	Error bool `json:"error,omitempty"`
}

// ImageInfo describes an image an execution returned as image content.
type ImageInfo struct {
	MIMEType string `json:"mime_type"`
	Bytes    int    `json:"bytes"`
}

// ToolCalls summarizes the upstream tool calls of one execution: how many,
// and the failed ones, which the code may have caught and gone past. Every
// call, with its duration, is in the execution log.
type ToolCalls struct {
	Count  int        `json:"count"`
	Failed int        `json:"failed,omitempty"`
	Calls  []ToolCall `json:"calls,omitempty" jsonschema:"The failed calls, at most 20."`
}

// maxFailedCalls bounds ToolCalls.Calls.
const maxFailedCalls = 20

// ToolCall is one upstream tool call.
type ToolCall struct {
	Name       string  `json:"name"`
	OK         bool    `json:"ok"`
	DurationMS float64 `json:"duration_ms"`
	// Approval is what a person answered when the call needed approval
	// (policy.approve): accepted, accepted for the execution, allowed for
	// the execution (an earlier answer), decline, cancel, no answer or
	// refused (the client could not be asked).
	Approval string `json:"approval,omitempty"`
}

// ContextSavings compares data kept in the sandbox with data returned.
type ContextSavings struct {
	ToolResultBytes int64 `json:"tool_result_bytes"`
	ReturnedBytes   int64 `json:"returned_bytes"`
}

func (s *Server) addExecTools() {
	t := &mcp.Tool{
		Name:        "execute_code",
		Title:       "Run Python in a sandbox",
		Description: "Run Python in a sandbox.",
	}
	addTool(s, "exec", t, s.executeCode)
	t.InputSchema.(*jsonschema.Schema).Properties["timeout_seconds"].Description = fmt.Sprintf("Default %g, max %g.",
		s.cfg.Sandbox.Timeout.Seconds(), s.cfg.Sandbox.MaxTimeout.Seconds())
	s.addSessionTools()
	s.addCodeFileTools()
}

func (s *Server) executeCode(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeInput) (*mcp.CallToolResult, ExecuteCodeOutput, error) {
	timeout, err := s.checkExecInput(in, req)
	if err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	script, err := scriptOf(req)
	if err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	return s.runCode(ctx, job{
		Namespace: namespaceOf(req),
		Code:      in.Code,
		Context:   in.Context,
		Args:      script.Args,
		Filename:  script.Filename,
		SessionID: in.SessionID,
		Timeout:   timeout,
		Req:       req,
	})
}

// MetaScript is the _meta key of an execute_code call that runs its code as
// a script run from a command line, a Script: codecell exec FILE arg...
// sets it. A model has no use for it, so it is not in the tool's input
// schema; it changes only names the code sees, nothing of the sandbox.
const MetaScript = "codecell/script"

// Script is the value of an execute_code call's MetaScript.
type Script struct {
	// Filename names the code in tracebacks, sys.argv[0] and __file__;
	// "" is "<cell>".
	Filename string `json:"filename,omitempty"`
	// Args are sys.argv[1:].
	Args []string `json:"args,omitempty"`
}

// maxFilename bounds a Script's Filename.
const maxFilename = 4096

// scriptOf reads the request's MetaScript, checked as execute_code_file's
// args are.
func scriptOf(req *mcp.CallToolRequest) (Script, error) {
	var sc Script
	if req == nil || req.Params == nil || req.Params.Meta[MetaScript] == nil {
		return sc, nil
	}
	raw, err := json.Marshal(req.Params.Meta[MetaScript])
	if err == nil {
		err = json.Unmarshal(raw, &sc)
	}
	if err != nil {
		return Script{}, fieldError("_meta."+MetaScript, "is not {\"filename\": string, \"args\": [string]}: %v", err)
	}
	if len(sc.Filename) > maxFilename || strings.IndexByte(sc.Filename, 0) >= 0 {
		return Script{}, fieldError("_meta."+MetaScript, "filename is over %d bytes or contains a NUL byte", maxFilename)
	}
	if err := checkArgs("_meta."+MetaScript+".args", sc.Args); err != nil {
		return Script{}, err
	}
	return sc, nil
}

// checkArgs holds a script's command-line arguments to their bounds.
func checkArgs(field string, args []string) error {
	if len(args) > maxArgs {
		return fieldError(field, "has %d entries; the limit is %d", len(args), maxArgs)
	}
	total := 0
	for i, a := range args {
		total += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			return fieldError(field, "entry %d contains a NUL byte", i)
		}
	}
	if total > maxArgBytes {
		return fieldError(field, "are %d bytes together; the limit is %d", total, maxArgBytes)
	}
	return nil
}

// job is one execution as the tools that run code (execute_code,
// execute_code_file) ask for it, after their arguments were checked.
type job struct {
	Namespace string
	Code      string
	Context   map[string]any
	Args      []string // sys.argv[1:]
	Filename  string   // the code file's workspace path, for tracebacks and sys.argv[0]; "" for a cell
	SessionID string   // "" runs in a fresh process
	Timeout   time.Duration
	// Req is the MCP request that asked for the execution, for progress
	// notifications; nil for none.
	Req *mcp.CallToolRequest
}

// runCode is the one path every execution takes: it runs the code and
// logs it; the gate tokenizes what goes back to the model.
func (s *Server) runCode(ctx context.Context, j job) (*mcp.CallToolResult, ExecuteCodeOutput, error) {
	// A turn first (admit.go): the wait is bounded by the execution's own
	// timeout, and past it the call is refused as busy.
	done, err := s.admit.acquire(ctx, j.Namespace, j.Timeout)
	if err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	defer done()
	s.activity.begin()
	defer s.activity.end()
	// The workspace is set up (mounted, indexed) before any sandbox sees it.
	vol, err := s.volume(j.Namespace)
	if err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	calls := &execCalls{s: s, ns: j.Namespace, req: j.Req, approvedAll: map[string]bool{}}
	sreq := sandbox.Request{
		Workspace:     s.Workspace(j.Namespace),
		Skills:        s.skillsDir(ctx, j.Namespace),
		Network:       s.networks.of(j.Namespace),
		Code:          j.Code,
		Context:       j.Context,
		Args:          j.Args,
		Filename:      j.Filename,
		CodecellTools: s.codeTools,
		Timeout:       j.Timeout,
		Calls:         calls,
		MaxToolCalls:  s.cfg.Sandbox.MaxToolCalls,
		// Output over the limit is cut where no value is cut in two: the
		// gate then tokenizes the whole of what is kept.
		Cut: s.gate.Cut,
	}
	if err := s.withEnvironment(j.Namespace, &sreq); err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	// The run says what the code changed in the workspace, and whether it
	// passed the quota: then the execution is stopped, and what it wrote
	// past the quota is removed when it ends.
	run := vol.Begin()
	if left := run.FileSizeLimit(); left >= 0 {
		sreq.FileSize = max(left, 1) // zero would mean the sandbox's own limit
	}
	execCtx, stopExec := context.WithCancelCause(ctx)
	stopWatch := make(chan struct{})
	go func() {
		select {
		case <-run.Breach():
			stopExec(errQuotaPassed)
		case <-stopWatch:
		}
	}()
	onOutput, stopProgress := s.startProgress(ctx, j.Req, j.Namespace)
	// The whole output, past the sandbox's output limit, for the
	// workspace file of a cut answer (boundAnswer).
	spill := newOutputSpill(s.cfg.Sandbox.Output+sandbox.CutMargin, SavedOutputLimit)
	defer spill.Close()
	sreq.OnOutput = spill.add
	if r := runOf(ctx); r != nil {
		// A run that may become a task keeps its latest output for the
		// task's status.
		prev := onOutput
		onOutput = func(stream string, data []byte) {
			r.tail.output(stream, data)
			if prev != nil {
				prev(stream, data)
			}
		}
	}
	if onOutput != nil {
		sreq.OnOutput = func(stream string, data []byte) {
			spill.add(stream, data)
			onOutput(stream, data)
		}
	}
	res, started, elsewhere, err := s.execute(execCtx, j, sreq)
	close(stopWatch)
	stopExec(nil)
	stopProgress()
	rep := run.End()
	if err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	out := outputOf(res)
	lost := out.Error != nil && strings.Contains(out.Error.Message, "state is lost")
	if rep.Breach != nil && j.SessionID != "" && !lost {
		// The breach was found once the execution had ended (stores
		// through a memory mapping report no event until the workspace
		// is measured again), so its session's interpreter lives on, and
		// with it what it maps: it ends, as a session stopped during its
		// breach does, so that it cannot store into the workspace again.
		lost = s.sessions.closeSession(j.Namespace, j.SessionID) == nil
	}
	quotaOutcome(&out, rep, run, vol, lost)
	out.SessionID, out.SessionStarted, out.SessionElsewhere = j.SessionID, started, elsewhere
	out.calls, out.savings.ToolResultBytes = calls.record()
	whole := wholeOutput{Stdout: out.Stdout, Stderr: out.Stderr, Result: out.Result, Error: out.Error, Files: rep.Files, Deleted: rep.Deleted, Spill: spill}
	listFiles(&out, rep)
	// The uncut answer's count, which has at least the digits of the
	// final one, so that the budget reckons with them.
	out.savings.ReturnedBytes = returnedBytes(out)
	out.summarizeCalls()
	// Personal data the code printed or returned reaches the model only as
	// tokens: the gate tokenizes the whole answer on its way out
	// (gateMiddleware); the answer budget's cuts leave no part of a value
	// for it to miss (boundAnswer). The bytes returned are counted before
	// the gate.
	outputLink, err := s.boundAnswer(ctx, j.Namespace, &out, whole)
	if err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	out.savings.ReturnedBytes = returnedBytes(out)
	if out.ContextSavings != nil {
		out.ContextSavings.ReturnedBytes = out.savings.ReturnedBytes
	}
	content := answerContent(&out, outputLink)
	for _, im := range res.Images {
		content = append(content, &mcp.ImageContent{Data: im.Data, MIMEType: im.MIMEType})
	}
	s.recordExecution(ctx, j, out) // committed before the result returns
	// The execution's one log line, and its metrics.
	s.observeExecution(j, out)
	return &mcp.CallToolResult{
		IsError: !out.OK,
		Content: content,
	}, out, nil
}

// execute runs sreq in j's session, or in a fresh process without one;
// started says the session was started for it, and elsewhere names the
// replica whose records hold a session of that id.
func (s *Server) execute(ctx context.Context, j job, sreq sandbox.Request) (res *sandbox.Result, started bool, elsewhere string, err error) {
	if j.SessionID == "" {
		return s.exec.Exec(ctx, sreq), false, "", nil
	}
	ls, started, err := s.sessions.acquire(ctx, j.Namespace, j.SessionID, sreq)
	if err != nil {
		return nil, false, "", err
	}
	defer s.sessions.release(j.Namespace, ls)
	if started {
		elsewhere = ls.elsewhere
	}
	return ls.sb.Exec(ctx, sreq), started, elsewhere, nil
}

// maxTimeout is the longest timeout req may ask for: sandbox.taskTimeout
// when its execution can run as a task, else sandbox.maxTimeout. Only a
// timeout past maxTimeout needs it (checkExecInput).
func (s *Server) maxTimeout(req *mcp.CallToolRequest) time.Duration {
	if s.store != nil && req != nil && req.Params != nil {
		if viaTask, _ := canAsk(req); wantsLegacyTask(req) || (viaTask && isModern(req)) {
			return s.cfg.Sandbox.TaskTimeout
		}
	}
	return s.cfg.Sandbox.MaxTimeout
}

func (s *Server) checkExecInput(in ExecuteCodeInput, req *mcp.CallToolRequest) (time.Duration, error) {
	if strings.TrimSpace(in.Code) == "" {
		return 0, fieldError("code", "must not be empty")
	}
	if len(in.Code) > maxCode {
		return 0, fieldError("code", "is %d bytes; the limit is %d (1 MiB)", len(in.Code), maxCode)
	}
	if in.Language != "" && in.Language != "python" {
		return 0, fieldError("language", "%q is not supported; use \"python\"", in.Language)
	}
	if in.SessionID != "" && !sessionID.MatchString(in.SessionID) {
		return 0, fieldError("session_id", "%q is not a session id: use 1 to 128 letters, digits and _ . : - (starting with a letter or digit)", in.SessionID)
	}
	keys := make([]string, 0, len(in.Context))
	for k := range in.Context {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !identifier.MatchString(k) {
			return 0, fieldError("context", "key %q is not a Python identifier", k)
		}
	}
	sb := s.cfg.Sandbox
	timeout := sb.Timeout
	if in.TimeoutSeconds != nil {
		t, max := *in.TimeoutSeconds, sb.MaxTimeout.Seconds()
		if t > max {
			max = s.maxTimeout(req).Seconds()
		}
		if math.IsNaN(t) || t < 1 || t > max {
			return 0, fieldError("timeout_seconds", "%v is out of range; it must be from 1 to %v (leave it out for the default, %v)", t, max, sb.Timeout.Seconds())
		}
		timeout = time.Duration(t * float64(time.Second))
	}
	return timeout, nil
}

func outputOf(res *sandbox.Result) ExecuteCodeOutput {
	out := ExecuteCodeOutput{
		OK:             res.OK,
		Stdout:         res.Stdout,
		Stderr:         res.Stderr,
		Result:         res.Result,
		Error:          res.Error,
		DurationMS:     float64(res.Duration.Microseconds()) / 1000,
		Isolation:      string(res.Isolation),
		Network:        res.Network,
		NetworkOmitted: res.NetworkDropped,
	}
	if res.Table != nil {
		out.Table = res.Table
	}
	if res.Truncated.Stdout || res.Truncated.Stderr {
		out.Truncated = &Truncated{Stdout: res.Truncated.Stdout, Stderr: res.Truncated.Stderr}
	}
	for _, im := range res.Images {
		out.Images = append(out.Images, ImageInfo{MIMEType: im.MIMEType, Bytes: len(im.Data)})
	}
	for _, d := range res.ImagesDropped {
		out.Stderr += "[codecell: image not shown: " + d + "]\n"
	}
	return out
}

// summarizeCalls fills the answer's ToolCalls and ContextSavings from the
// calls recorded: the count, and the failed calls.
func (out *ExecuteCodeOutput) summarizeCalls() {
	if len(out.calls) == 0 {
		return
	}
	tc := &ToolCalls{Count: len(out.calls)}
	for _, c := range out.calls {
		if c.OK {
			continue
		}
		tc.Failed++
		if len(tc.Calls) < maxFailedCalls {
			tc.Calls = append(tc.Calls, c)
		}
	}
	out.ToolCalls = tc
	savings := out.savings
	out.ContextSavings = &savings
}

// returnedBytes is what an execution returns to the model: its output and
// result.
func returnedBytes(out ExecuteCodeOutput) int64 {
	returned := len(out.Stdout) + len(out.Stderr)
	if out.Result != nil {
		if b, err := json.Marshal(out.Result); err == nil {
			returned += len(b)
		}
	}
	return int64(returned)
}

// render is the short text form of a result, for hosts that show only text.
func render(out ExecuteCodeOutput) string {
	var b strings.Builder
	if out.SessionStarted {
		// First, so that a NameError below reads as what it is: an id that
		// was mistyped, or a session that ended, not a lost variable.
		if out.SessionElsewhere != "" {
			fmt.Fprintf(&b, "[new session %q started: names defined by earlier calls are not in it; a session %q was last seen on replica %q, which this one cannot reach]\n",
				out.SessionID, out.SessionID, out.SessionElsewhere)
		} else {
			fmt.Fprintf(&b, "[new session %q started: names defined by earlier calls are not in it]\n", out.SessionID)
		}
	}
	if out.Stdout != "" {
		b.WriteString(out.Stdout)
		if !strings.HasSuffix(out.Stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if out.Stderr != "" {
		fmt.Fprintf(&b, "[stderr]\n%s", out.Stderr)
		if !strings.HasSuffix(out.Stderr, "\n") {
			b.WriteString("\n")
		}
	}
	if out.Result != nil {
		r, _ := json.Marshal(out.Result)
		if s, ok := out.Result.(string); ok {
			r = []byte(s)
		}
		fmt.Fprintf(&b, "[result] %s\n", r)
	}
	for _, im := range out.Images {
		fmt.Fprintf(&b, "[image] %s, %d bytes\n", im.MIMEType, im.Bytes)
	}
	if out.Error != nil {
		renderError(&b, out.Error)
	}
	if b.Len() == 0 {
		b.WriteString("(no output)\n")
	}
	if out.OutputFile != "" {
		fmt.Fprintf(&b, "[cut to the answer budget; the whole output is in %s]\n", out.OutputFile)
	}
	if out.Isolation == string(sandbox.Development) {
		b.WriteString("[isolation: development, no sandbox]\n")
	}
	return b.String()
}

// ErrorText is an execution's error as the text rendering shows it: its
// traceback and any hint added to its message, or its type and message.
func ErrorText(e *sandbox.ExecError) string {
	var b strings.Builder
	renderError(&b, e)
	return b.String()
}

// renderError writes an error's traceback, or its type and message. The
// runner adds hints to the message after "; " or ": " ("to install it,
// call install_dependencies ..."), which the traceback's last line,
// written by Python, lacks: a hint is written after the traceback. What
// else the message has beyond that line is Python's own and in the
// traceback already (a SyntaxError's "(<cell>, line 1)").
func renderError(b *strings.Builder, e *sandbox.ExecError) {
	if e.Traceback == "" {
		fmt.Fprintf(b, "%s: %s\n", e.Type, e.Message)
		return
	}
	b.WriteString(e.Traceback)
	if !strings.HasSuffix(e.Traceback, "\n") {
		b.WriteString("\n")
	}
	tb := strings.TrimRight(e.Traceback, "\n")
	last := tb[strings.LastIndexByte(tb, '\n')+1:]
	_, shown, _ := strings.Cut(last, ": ")
	switch {
	case strings.Contains(tb, e.Message):
	case shown != "" && strings.HasPrefix(e.Message, shown):
		rest := e.Message[len(shown):]
		if hint, ok := strings.CutPrefix(rest, ": "); ok {
			fmt.Fprintf(b, "hint: %s\n", hint)
		} else if _, hint, ok := strings.Cut(rest, "; "); ok {
			fmt.Fprintf(b, "hint: %s\n", hint)
		}
	default:
		fmt.Fprintf(b, "%s: %s\n", e.Type, e.Message)
	}
}
