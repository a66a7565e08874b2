package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBusy is the error of an execution refused for want of capacity: its
// namespace already has as many executions waiting as it may run at once,
// or it waited its whole timeout for a turn.
var ErrBusy = errors.New("busy")

// admission bounds the executions running at once: limit in all, perNS of
// one namespace. A call past a bound waits for a turn; when one frees it
// goes to the waiting namespace with the fewest running (first come among
// equals), so a namespace's burst waits behind the others' calls rather
// than taking every slot. A namespace may have at most perNS calls
// waiting; one more is refused at once, and a call that waits past its
// own timeout is refused then: never a hang.
//
// What it does not do: share the CPU between the executions that run (the
// kernel does, per process), so a namespace running perNS CPU-bound
// executions gets about perNS shares of it.
type admission struct {
	limit, perNS int

	mu      sync.Mutex // guards the fields below
	running int
	byNS    map[string]*nsTurns
	arrival uint64 // counts waiters, for first come first served
}

// nsTurns is one namespace's executions, running and waiting.
type nsTurns struct {
	running int
	waiting []*waiter
}

type waiter struct {
	ch      chan struct{} // closed when admitted
	arrival uint64
}

// acquire waits for a turn for an execution of ns, for at most wait, and
// returns the function that gives it back.
func (a *admission) acquire(ctx context.Context, ns string, wait time.Duration) (func(), error) {
	if a.limit <= 0 {
		return func() {}, nil
	}
	a.mu.Lock()
	if a.byNS == nil {
		a.byNS = map[string]*nsTurns{}
	}
	q := a.byNS[ns]
	if q == nil {
		q = &nsTurns{}
		a.byNS[ns] = q
	}
	done := func() { a.release(ns) }
	if len(q.waiting) == 0 && q.running < a.perNS && a.running < a.limit && !a.othersWaitLocked() {
		q.running++
		a.running++
		a.mu.Unlock()
		return done, nil
	}
	if len(q.waiting) >= a.perNS {
		running, waiting := q.running, len(q.waiting)
		a.mu.Unlock()
		return nil, fmt.Errorf("%w: this namespace has %d executions running and %d waiting, its bound (sandbox.namespaceConcurrency is %d); try again when one has finished",
			ErrBusy, running, waiting, a.perNS)
	}
	a.arrival++
	w := &waiter{ch: make(chan struct{}), arrival: a.arrival}
	q.waiting = append(q.waiting, w)
	a.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var cause error
	select {
	case <-w.ch:
		return done, nil
	case <-timer.C:
		cause = fmt.Errorf("%w: no execution slot freed within %s (sandbox.concurrency is %d in all, sandbox.namespaceConcurrency %d per namespace); try again",
			ErrBusy, wait, a.limit, a.perNS)
	case <-ctx.Done():
		cause = ctx.Err()
	}
	a.mu.Lock()
	select {
	case <-w.ch: // admitted meanwhile: give the turn back
		a.mu.Unlock()
		done()
		return nil, cause
	default:
	}
	for i, x := range q.waiting {
		if x == w {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			break
		}
	}
	a.forgetLocked(ns, q)
	a.mu.Unlock()
	return nil, cause
}

// othersWaitLocked says whether any call waits: a new one queues behind
// it. a.mu is held.
func (a *admission) othersWaitLocked() bool {
	for _, q := range a.byNS {
		if len(q.waiting) > 0 {
			return true
		}
	}
	return false
}

// release ends an execution of ns and hands the freed turns on.
func (a *admission) release(ns string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.byNS[ns]
	q.running--
	a.running--
	for a.running < a.limit {
		var next *nsTurns
		for _, c := range a.byNS {
			if len(c.waiting) == 0 || c.running >= a.perNS {
				continue
			}
			if next == nil || c.running < next.running || (c.running == next.running && c.waiting[0].arrival < next.waiting[0].arrival) {
				next = c
			}
		}
		if next == nil {
			break
		}
		w := next.waiting[0]
		next.waiting = next.waiting[1:]
		next.running++
		a.running++
		close(w.ch)
	}
	a.forgetLocked(ns, q)
}

// forgetLocked drops a namespace that runs and waits for nothing, so that
// many namespaces cost nothing here. a.mu is held.
func (a *admission) forgetLocked(ns string, q *nsTurns) {
	if q.running == 0 && len(q.waiting) == 0 {
		delete(a.byNS, ns)
	}
}
