package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A run is one tools/call of a tool that may outlive its request
// (taskTools): the call's handler chain, gate included, running on a
// context of its own. The request that started it waits for it, or for
// the first question it asks a person, or for the time past which it
// becomes a task (awaitRun); what it asks goes out as the client's
// generation can take it (approvals.go).
type run struct {
	ns   string
	tool string

	cancel context.CancelFunc
	done   chan struct{} // closed when res and err are set
	res    mcp.Result
	err    error

	// asks are the questions for a person the run waits on, each until
	// it has its answer.
	asks chan *ask
	// tail keeps the latest output, for a task's status.
	tail *progress

	mu        sync.Mutex
	nextAsk   int
	cancelled bool   // a client cancelled it
	task      string // the id of the task it became
	waiting   int    // asks under way on a 2025 session
}

func (r *run) taskID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.task
}

// setWaiting counts an ask put on the client's session, which a task's
// status shows as input_required.
func (r *run) setWaiting(delta int) {
	r.mu.Lock()
	r.waiting += delta
	r.mu.Unlock()
}

func (r *run) isWaiting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting > 0
}

func (r *run) isTask() bool { return r.taskID() != "" }

// taskTools are the tools whose calls may run as tasks.
var taskTools = map[string]bool{
	"execute_code":         true,
	"execute_code_file":    true,
	"execute_analysis":     true,
	"install_dependencies": true,
}

type runKey struct{}

// runOf is the run ctx belongs to, or nil.
func runOf(ctx context.Context) *run {
	r, _ := ctx.Value(runKey{}).(*run)
	return r
}

// startRun calls next in the background, on a context that outlives the
// request's (its values, the gate's scope and the token's namespace among
// them, are kept).
func (s *Server) startRun(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request, ns, tool string) *run {
	r := &run{ns: ns, tool: tool, done: make(chan struct{}), asks: make(chan *ask),
		tail: &progress{s: s, ns: ns, start: time.Now(), whole: true}}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	rctx = context.WithValue(rctx, runKey{}, r)
	go func() {
		defer close(r.done)
		defer cancel()
		r.res, r.err = next(rctx, method, req)
	}()
	return r
}

// stop cancels the run for a client: its execution is killed.
func (r *run) stop() {
	r.mu.Lock()
	r.cancelled = true
	r.mu.Unlock()
	r.cancel()
}

func (r *run) wasCancelled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelled
}

// finished says the run is done.
func (r *run) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// An ask is one question for a person, an elicitation, and where its
// answer goes.
type ask struct {
	key    string // unique in its run: the input request's id
	params *mcp.ElicitParams
	answer chan answer // buffered: the first answer is kept
}

// answer is a person's answer to an ask, or why there is none.
type answer struct {
	res *mcp.ElicitResult
	err error
}

// newAsk makes the run's next question.
func (r *run) newAsk(params *mcp.ElicitParams) *ask {
	r.mu.Lock()
	r.nextAsk++
	n := r.nextAsk
	r.mu.Unlock()
	return &ask{key: "approval-" + strconv.Itoa(n), params: params, answer: make(chan answer, 1)}
}

// reply answers a, once; later answers are ignored, as MCP asks of
// answers to a request already answered.
func (a *ask) reply(res *mcp.ElicitResult) { a.give(answer{res: res}) }

// refuse ends a without an answer, for the reason err.
func (a *ask) refuse(err error) { a.give(answer{err: err}) }

func (a *ask) give(ans answer) {
	select {
	case a.answer <- ans:
	default:
	}
}
