package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrSessionEnded is the error of an execution asked of a session whose
// interpreter is gone.
var ErrSessionEnded = errors.New("the session has ended")

// Session is a live interpreter: its executions share their globals. It
// owns a whole sandbox of its own (taken from the warm pool) for as long as
// it lives, so nothing else ever runs beside it. Executions in a session run
// one at a time; Exec waits for the one before. Limits apply per execution
// as usual, except CPU time, which the kernel counts over the interpreter's
// life. A timeout, a cancellation or a limit that kills the interpreter ends
// the session: its state is lost and Exec says so.
type Session struct {
	m    *Manager
	z    *zygote
	conn *net.UnixConn // the interpreter's channel; nil until the first execution
	turn chan struct{} // holds one token: taken by the running Exec

	mu   sync.Mutex // guards dead
	dead bool
}

// OpenSession starts a session for req's workspace and interpreter (its Code
// is ignored). The sandbox comes from the warm pool when one is idle.
func (m *Manager) OpenSession(ctx context.Context, req Request) (*Session, error) {
	if m.opts.Level == Hardened {
		// Its fork server lends the container's one channel to a child at
		// a time, each serving one execution; a session's process would
		// keep it across executions, which is not built.
		return nil, fmt.Errorf("%w: sessions are not available at the hardened level; run without session_id", ErrUnavailable)
	}
	if err := m.prepareOnce(req.Workspace); err != nil {
		return nil, err
	}
	tg := m.targetOf(&req)
	// A session is where data work keeps its state: its interpreter has
	// the preload, whatever its first code imports.
	tg.preload = len(m.opts.Preload) > 0
	sb, err := m.get(ctx, tg)
	if err != nil {
		return nil, fmt.Errorf("start the session's sandbox: %w", err)
	}
	// The sandbox leaves the pool for good: the pool starts another.
	m.mu.Lock()
	m.decLocked(m.busy, tg)
	m.mu.Unlock()
	m.refill(tg)
	z, ok := sb.(*zygote)
	if !ok {
		sb.kill()
		return nil, fmt.Errorf("%w: this isolation level has no fork server for sessions", ErrUnavailable)
	}
	s := &Session{m: m, z: z, turn: make(chan struct{}, 1)}
	s.turn <- struct{}{}
	return s, nil
}

// Exec runs one execution in the session. Everything that goes wrong is
// reported in the Result, as with Manager.Exec.
func (s *Session) Exec(ctx context.Context, req Request) *Result {
	start := time.Now()
	res := &Result{Isolation: s.m.opts.Level}
	defer func() { res.Duration = time.Since(start) }()
	select {
	case <-s.turn:
	case <-ctx.Done():
		res.Error = failure(ErrKilled, "the execution was cancelled while the session's previous one was still running: %v", context.Cause(ctx))
		return res
	}
	defer func() { s.turn <- struct{}{} }()
	if !s.Alive() {
		res.Error = failure(ErrSandbox, "%v", ErrSessionEnded)
		return res
	}
	ctx, end, ok := s.m.begin(ctx, &req, res)
	if !ok {
		return res
	}
	defer end()
	if s.conn == nil {
		conn, err := s.z.connectChild(ctx, &req, res)
		if err != nil {
			s.end()
			return res
		}
		s.conn = conn
	}
	o := s.z.exchange(ctx, s.conn, &req, s.m.limits, res, true)
	if o.stopped || o.fault || o.zygoteGone || o.exited != nil || !o.result || !s.z.alive() {
		s.end()
		if res.Error != nil {
			res.Error.Message += "; the session's interpreter ended with it and its state is lost (the next execution with this session id starts a new one)"
		}
	}
	return res
}

// Alive reports whether the session's interpreter can take another
// execution.
func (s *Session) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.dead && s.z.alive()
}

// Close ends the session and its sandbox. A running execution is killed
// (it fails with Killed); Close waits for it to return, which it does as
// soon as its sandbox is gone.
func (s *Session) Close() {
	s.mu.Lock()
	s.dead = true
	s.mu.Unlock()
	s.z.kill()
	<-s.turn
	s.end()
	s.turn <- struct{}{}
}

// end ends the session; the caller holds the turn.
func (s *Session) end() {
	s.mu.Lock()
	s.dead = true
	s.mu.Unlock()
	s.z.kill()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}
