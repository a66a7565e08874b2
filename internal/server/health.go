package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codecell/codecell/internal/sandbox"
)

// sandboxFresh is how long a sign that the sandbox works (an execution
// that ran, or a probe) counts for /readyz: past it, or after an execution
// the sandbox itself failed, the next readiness check runs a probe.
const sandboxFresh = 30 * time.Second

// probeTimeout bounds a readiness probe's execution.
const probeTimeout = 10 * time.Second

// sandboxHealth tells /readyz whether sandboxes start and run code, from
// what executions show and, when they show nothing recent, from a probe
// (print nothing, in the default namespace's warm pool): a balancer checks
// every few seconds, and one sandbox per check would cost a replica a core
// on a small machine. It is safe for concurrent use.
type sandboxHealth struct {
	probeMu sync.Mutex // one probe at a time; the others wait for its verdict

	mu      sync.Mutex // guards what follows
	okAt    time.Time  // the last time the sandbox ran code
	failAt  time.Time  // the last time it failed to (a SandboxError)
	failure string     // that failure's message
}

// observe records an execution's outcome: errType is its error type, ""
// for none. Only a SandboxError says the sandbox does not work; the code's
// own errors say it does.
func (h *sandboxHealth) observe(errType, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if errType == sandbox.ErrSandbox {
		h.failAt, h.failure = time.Now(), message
		return
	}
	h.okAt = time.Now()
}

// verdict is the health known without a probe: nil when the sandbox ran
// code recently and has not failed since, else why a probe is needed.
func (h *sandboxHealth) verdict(now time.Time) (ok bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.failAt.After(h.okAt):
		return false, fmt.Errorf("the sandbox failed: %s", h.failure)
	case now.Sub(h.okAt) < sandboxFresh:
		return true, nil
	}
	return false, nil
}

// check returns nil when the sandbox works, probing with run when nothing
// recent says so.
func (h *sandboxHealth) check(ctx context.Context, run func(context.Context) *sandbox.Result) error {
	if ok, _ := h.verdict(time.Now()); ok {
		return nil
	}
	asked := time.Now()
	h.probeMu.Lock()
	defer h.probeMu.Unlock()
	// A probe that ran while this one waited answers for it.
	h.mu.Lock()
	fresh := h.okAt.After(asked) || h.failAt.After(asked)
	h.mu.Unlock()
	if !fresh {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		res := run(pctx)
		cancel()
		if ctx.Err() != nil {
			// The caller left (or its own deadline passed): that says
			// nothing of the sandbox.
			return fmt.Errorf("readiness check: %w", ctx.Err())
		}
		switch {
		case res == nil:
			h.observe(sandbox.ErrSandbox, "the probe returned no result")
		case res.Error != nil && (res.Error.Type == sandbox.ErrSandbox || res.Error.Type == sandbox.ErrTimeout):
			h.observe(sandbox.ErrSandbox, "probe: "+res.Error.Type+": "+res.Error.Message)
		default:
			h.observe("", "")
		}
	}
	ok, err := h.verdict(time.Now())
	switch {
	case ok:
		return nil
	case err != nil:
		return err
	}
	return errors.New("the sandbox has not run code yet")
}
