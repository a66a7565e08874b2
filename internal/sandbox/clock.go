package sandbox

import (
	"context"
	"sync"
	"time"
)

// An execution's timeout runs on a clock that can stop: time the code
// spends waiting for a person (an approval of a tool call, see the server's
// approvals) is not the code's, and must not count against its timeout.
// A context deadline cannot stop, so the timeout is a timer that cancels
// the execution's context with errTimeout.
type clock struct {
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	timer    *time.Timer // nil while paused
	deadline time.Time   // when the timer fires, while running
	left     time.Duration
	pauses   int
}

type clockKey struct{}

// withClock returns ctx cancelled with errTimeout once d of running time
// passes, and its cancel.
func withClock(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &clock{cancel: cancel, left: d}
	ctx = context.WithValue(ctx, clockKey{}, c)
	c.start()
	return ctx, func() {
		c.mu.Lock()
		if c.timer != nil {
			c.timer.Stop()
		}
		c.mu.Unlock()
		cancel(context.Canceled)
	}
}

// start runs the clock; c.mu is held or c is not shared yet.
func (c *clock) start() {
	c.deadline = time.Now().Add(c.left)
	c.timer = time.AfterFunc(c.left, func() { c.cancel(errTimeout) })
}

// PauseTimeout stops the timeout of the execution ctx belongs to until the
// returned resume is called (once). Pauses nest: the clock runs again when
// every pause has resumed. Outside an execution it does nothing.
func PauseTimeout(ctx context.Context) (resume func()) {
	c, ok := ctx.Value(clockKey{}).(*clock)
	if !ok {
		return func() {}
	}
	c.mu.Lock()
	c.pauses++
	if c.pauses == 1 && c.timer != nil {
		if c.timer.Stop() {
			c.left = max(time.Until(c.deadline), 0)
		} else {
			c.left = 0 // it fired already
		}
		c.timer = nil
	}
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.pauses--
			if c.pauses == 0 && c.left > 0 {
				c.start()
			}
		})
	}
}

// Deadline returns when the timeout of the execution ctx belongs to ends if
// its clock runs on from now, and false outside an execution.
func Deadline(ctx context.Context) (time.Time, bool) {
	c, ok := ctx.Value(clockKey{}).(*clock)
	if !ok {
		return ctx.Deadline()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer == nil {
		return time.Now().Add(c.left), true
	}
	return c.deadline, true
}
