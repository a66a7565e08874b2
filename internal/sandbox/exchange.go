package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/codecell/codecell/internal/channel"
)

// execFrame is the request the host sends on a fresh channel.
type execFrame struct {
	Type    string         `json:"type"`
	Code    string         `json:"code"`
	Context map[string]any `json:"context,omitempty"`
	Args    []string       `json:"args,omitempty"`
	// Filename names the code in tracebacks and sys.argv[0]; "" is "<cell>".
	Filename string `json:"filename,omitempty"`
	// CodecellTools are Request.CodecellTools; null is every one.
	CodecellTools []string `json:"codecell_tools"`
	// Session keeps the process, and its globals, for the next exec frame.
	Session bool         `json:"session,omitempty"`
	Limits  runnerLimits `json:"limits"`
	// Chdir is where the process changes its working directory before the
	// code runs; "" leaves it. A sandbox claimed after it started
	// (unbound.go) has its workspace mounted over the directory its
	// processes started in.
	Chdir string `json:"chdir,omitempty"`
}

// outputFrame carries a piece of stdout or stderr.
type outputFrame struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// exchange is the host's half of one execution's conversation. Output
// arrives from the channel (as frames) or from pipes (where descriptors can
// be passed), possibly at once, so its fields are guarded by mu.
type exchange struct {
	lim      Limits
	onOutput func(stream string, data []byte) // Request.OnOutput

	// Calls from the code: answered on w by the request's handler, each in
	// a goroutine of its own at a time, until ctx ends.
	ctx      context.Context
	calls    CallHandler
	maxCalls int
	w        *channel.Writer
	inflight sync.WaitGroup // the call goroutines, busy or idle
	slots    chan struct{}  // bounds the calls in flight
	// idle hands a call to a call goroutine that answered one and waits for
	// the next, until ctx ends. A goroutine per call cost a start, and
	// copies of its stack as it grew to the depth of a tool call (the MCP
	// client's JSON), on every call: a tenth of the host's CPU per call
	// when calls come one after another.
	idle       chan callFrame
	goroutines int // call goroutines started (reader goroutine only)
	nCalls     atomic.Int64
	nFrames    int64 // call frames read, of any method (reader goroutine only)

	cut func(string, int) int // Request.Cut

	mu             sync.Mutex
	stdout, stderr capture
	total          int64
	result         *resultFrame
	// fault is set when the sandbox broke the protocol or a limit the host
	// enforces; the sandbox is then killed and the execution fails with it.
	fault *ExecError

	// endAt, when set, is a frame type that ends read as the channel's end
	// would, the frame kept in ended (read's goroutine only; the caller
	// reads it once read has returned): a hardened fork server's report
	// that the code's process exited without a result.
	endAt string
	ended *channel.Message
}

func newExchange(lim Limits, req *Request) *exchange {
	c := newCapture(lim.Output, req.Cut)
	return &exchange{lim: lim, onOutput: req.OnOutput, cut: req.Cut, stdout: c, stderr: c}
}

// serveCalls lets the code's calls reach req's handler, with answers written
// to w. Without it every call is refused.
func (x *exchange) serveCalls(ctx context.Context, req *Request, w io.Writer) {
	x.ctx, x.calls, x.maxCalls, x.w = ctx, req.Calls, req.MaxToolCalls, channel.NewWriter(w)
	x.slots = make(chan struct{}, maxInflightCalls)
	x.idle = make(chan callFrame)
}

// maxInflightCalls bounds the calls of one execution answered at once; past
// it the host stops reading the channel until one finishes, so a flood of
// calls costs the code time, not the host memory. maxCallGoroutines bounds
// the goroutines that answer them: one that has answered a call but does not
// wait for the next yet holds no slot, so more of them than slots spare the
// reader a wait. maxCallFrames bounds the calls of any method in one
// execution.
const (
	maxInflightCalls  = 64
	maxCallGoroutines = 2 * maxInflightCalls
	maxCallFrames     = 100_000
)

// callFrame is a call from the code; replyFrame the host's answer.
type callFrame struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type replyFrame struct {
	Type   string `json:"type"` // channel.TypeReply
	ID     int64  `json:"id"`
	OK     bool   `json:"ok"`
	Result any    `json:"result,omitempty"`
	Error  *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	} `json:"error,omitempty"`
}

// frameHead is what the reader decodes every frame into, in the pass that
// finds its type: a call frame, the one that comes by the thousand, is then
// decoded once rather than twice.
type frameHead struct {
	Type *string `json:"type"`
	callFrame
}

func (h *frameHead) FrameType() string {
	if h.Type == nil {
		return ""
	}
	return *h.Type
}

// call handles one call frame, decoded (ok) or not. It reports true when
// the call broke a limit and the sandbox must be killed.
func (x *exchange) call(c callFrame, ok bool) bool {
	if !ok || c.Method == "" {
		return x.broken("bad call frame")
	}
	if x.nFrames++; x.nFrames > maxCallFrames {
		return x.broken("more than %d calls", maxCallFrames)
	}
	if c.Method == channel.MethodTool {
		n := x.nCalls.Add(1)
		if x.maxCalls > 0 && n > int64(x.maxCalls) {
			return x.setFault(failure(ErrToolCallLimit, "the code made more than its limit of %d tool calls; it was stopped", x.maxCalls))
		}
	}
	if x.calls == nil || x.w == nil {
		x.reply(c.ID, nil, &CallError{Kind: "RuntimeError", Message: "this execution cannot call the host"})
		return false
	}
	select {
	case x.slots <- struct{}{}:
	case <-x.ctx.Done():
		return false
	}
	select {
	case x.idle <- c:
		return false
	default:
	}
	if x.goroutines < maxCallGoroutines {
		// Every call goroutine is busy, or has just answered and is not
		// waiting yet: one more.
		x.goroutines++
		x.inflight.Add(1)
		go x.answer(c)
		return false
	}
	// At most maxInflightCalls of them are busy (each holds a slot): the
	// others have answered and are about to wait for a call.
	select {
	case x.idle <- c:
	case <-x.ctx.Done():
	}
	return false
}

// answer answers c, then each call handed to it on idle, until ctx ends.
func (x *exchange) answer(c callFrame) {
	defer x.inflight.Done()
	for {
		result, err := x.calls.HandleCall(x.ctx, c.Method, c.Params)
		x.reply(c.ID, result, err)
		<-x.slots
		select {
		case c = <-x.idle:
		case <-x.ctx.Done():
			return
		}
	}
}

func (x *exchange) reply(id int64, result any, err error) {
	r := replyFrame{Type: channel.TypeReply, ID: id, OK: err == nil, Result: result}
	if err != nil {
		r.Result = nil
		r.Error = &struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
			Data    any    `json:"data,omitempty"`
		}{Kind: "RuntimeError", Message: err.Error()}
		var ce *CallError
		if errors.As(err, &ce) {
			r.Error.Kind, r.Error.Message, r.Error.Data = ce.Kind, ce.Message, ce.Data
		}
	}
	if werr := x.w.Write(r); werr != nil && err == nil {
		// The code is gone or its answer does not encode; the first case
		// ends the execution anyway, the second is reported to it.
		x.w.Write(replyFrame{Type: channel.TypeReply, ID: id, Error: &struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
			Data    any    `json:"data,omitempty"`
		}{Kind: "RuntimeError", Message: "the host could not send the answer: " + werr.Error()}})
	}
}

// wait waits for the calls in flight; the caller has ended their context.
func (x *exchange) wait() { x.inflight.Wait() }

// hasResult reports whether the result frame has arrived.
func (x *exchange) hasResult() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.result != nil
}

// setFault records the first fault and reports true.
func (x *exchange) setFault(e *ExecError) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.fault == nil {
		x.fault = e
	}
	return true
}

func (x *exchange) broken(format string, args ...any) bool {
	return x.setFault(failure(ErrSandbox, "the code broke the sandbox channel: "+format, args...))
}

// output adds output to a stream; it reports true when the output passed
// the flood bound and the sandbox must be killed.
func (x *exchange) output(stream string, p []byte) bool {
	if x.onOutput != nil {
		x.onOutput(stream, p)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	switch stream {
	case "stdout":
		x.stdout.add(p)
	case "stderr":
		x.stderr.add(p)
	}
	x.total += int64(len(p))
	if flood := x.lim.Flood; x.total > flood && x.fault == nil {
		x.fault = failure(ErrOutputLimit, "the code wrote more than %d bytes of output (the limit keeps %d per stream); it was stopped", flood, x.lim.Output)
		return true
	}
	return false
}

// pipeBuffers are readPipe's buffers, reused: two fresh 64 KiB buffers per
// execution were about 4% of the server's CPU (allocation and zeroing).
var pipeBuffers = sync.Pool{New: func() any { return new([64 << 10]byte) }}

// readPipe copies one output pipe into the exchange until EOF. It reports
// true if it stopped on a flood.
func (x *exchange) readPipe(r io.Reader, stream string) bool {
	buf := pipeBuffers.Get().(*[64 << 10]byte)
	defer pipeBuffers.Put(buf)
	for {
		n, err := r.Read(buf[:])
		if n > 0 && x.output(stream, buf[:n]) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// run sends req and reads frames until the result frame, the channel's end
// or a fault. It returns true if it stopped on a fault, in which case the
// caller must kill the sandbox (the code may still be writing).
func (x *exchange) run(r io.Reader, w io.Writer, req execFrame) bool {
	cw := x.w // the writer the answers to calls share, when there is one
	if cw == nil {
		cw = channel.NewWriter(w)
	}
	if err := cw.Write(req); err != nil {
		return x.setFault(failure(ErrSandbox, "send code to sandbox: %v", err))
	}
	return x.read(r)
}

// read reads frames until the result frame, the channel's end or a fault,
// which it reports as run does.
func (x *exchange) read(r io.Reader) bool {
	fr := channel.NewReader(r, 0)
	for {
		var head frameHead
		m, decoded, err := fr.ReadInto(&head)
		if err != nil {
			if errors.Is(err, channel.ErrFrameTooLarge) || errors.Is(err, channel.ErrBadFrame) || errors.Is(err, io.ErrUnexpectedEOF) {
				return x.broken("%v", err)
			}
			return false // the end, or the sandbox went away: the exit status tells why
		}
		switch m.Type {
		case channel.TypeOutput:
			var o outputFrame
			if err := m.Decode(&o); err != nil {
				return x.broken("%v", err)
			}
			if o.Stream != "stdout" && o.Stream != "stderr" {
				return x.broken("unknown stream %q", o.Stream)
			}
			if x.output(o.Stream, []byte(o.Data)) {
				return true
			}
		case channel.TypeCall:
			if x.call(head.callFrame, decoded) {
				return true
			}
		case channel.TypeResult:
			var f resultFrame
			if err := m.Decode(&f); err != nil {
				return x.broken("%v", err)
			}
			x.mu.Lock()
			x.result = &f
			x.mu.Unlock()
			// Nothing after the result counts; the process is exiting.
			return false
		default:
			if x.endAt != "" && m.Type == x.endAt {
				x.ended = &m
				return false
			}
			return x.broken("unknown frame type %q", m.Type)
		}
	}
}

// exitInfo is how the code's main process ended, as far as the host knows.
type exitInfo struct {
	status int // exit status, when signal == 0
	signal int // terminating signal, or 0
	known  bool
}

// finish turns what the host saw into a Result. Every reader of the
// exchange must have stopped.
func (x *exchange) finish(res *Result, exit exitInfo, lim Limits) {
	res.Stdout, res.Stderr = x.stdout.text(), x.stderr.text()
	res.Truncated = Truncated{Stdout: x.stdout.truncated(), Stderr: x.stderr.truncated()}
	switch {
	case res.Error != nil: // timeout or cancellation, decided by the caller
	case x.fault != nil:
		res.Error = x.fault
	case x.result != nil && exit.signal == 0:
		res.OK = x.result.OK
		res.Error = x.result.Error
		res.Result = capResult(x.result.value(), lim.Output, x.cut)
		res.Table = x.result.table()
		res.Images, res.ImagesDropped = x.result.images()
		if !res.OK && res.Error == nil {
			res.Error = failure(ErrSandbox, "the runner reported a failure without an error")
		}
	case exit.signal == sigXCPU:
		res.Error = failure(ErrTimeout, "the code used its CPU time limit of %s", lim.CPUTime)
	case exit.signal == sigXFSZ:
		res.Error = failure("OSError", "the code wrote a file larger than the file size limit of %d bytes", lim.FileSize)
	case exit.signal != 0:
		res.Error = failure(ErrKilled, "the code's process was killed by signal %d (%s)", exit.signal, signalName(exit.signal))
	case exit.known:
		res.Error = failure("SystemExit", "the code's process exited with status %d before returning a result", exit.status)
	default:
		res.Error = failure(ErrSandbox, "the sandbox ended before returning a result")
	}
	if res.Error != nil {
		res.OK = false
		res.Error = capError(res.Error, lim.Output, x.cut)
	}
}

func signalName(sig int) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return fmt.Sprintf("signal %d", sig)
}
