package server

import (
	"context"
	"sync"
	"time"
)

// tenants tracks each namespace's use, so that a namespace idle for
// sandbox.namespaceIdle gives back what it holds: its warm sandboxes, its
// workspace's mount and watches, its cached environment choice. Its next
// call sets them up again (README, "Many tenants").
//
// Every operation that touches a namespace's workspace or sandboxes runs
// between enter and the function it returns; a namespace is released only
// when none runs, none has run for the idle time, and it holds no live
// session, and an enter that comes while it is being released waits for
// the release to finish, then sets up afresh. So nothing is released
// under an execution that runs or starts, or under a session.
type tenants struct {
	idle time.Duration // 0: never released

	mu   sync.Mutex // guards byNS and each tenant
	byNS map[string]*tenant
}

// tenant is one namespace's use.
type tenant struct {
	active    int       // operations under way
	last      time.Time // when the last one ended
	releasing chan struct{}
}

// enter marks an operation of ns under way; the caller calls the returned
// function when it ends.
func (s *Server) enter(ns string) (leave func()) {
	ts := &s.tenants
	for {
		ts.mu.Lock()
		if ts.byNS == nil {
			ts.byNS = map[string]*tenant{}
		}
		t := ts.byNS[ns]
		if t == nil {
			t = &tenant{}
			ts.byNS[ns] = t
		}
		if ch := t.releasing; ch != nil {
			ts.mu.Unlock()
			<-ch
			continue
		}
		t.active++
		ts.mu.Unlock()
		var once sync.Once
		return func() {
			once.Do(func() {
				ts.mu.Lock()
				t.active--
				t.last = time.Now()
				ts.mu.Unlock()
			})
		}
	}
}

// releaser gives back what an idle namespace holds; *sandbox.Manager is
// one.
type releaser interface{ Release(workspace string) }

// ReleaseIdle releases, every quarter of the idle time until ctx ends, the
// namespaces idle for it. It returns at once when namespaces are never
// released.
func (s *Server) ReleaseIdle(ctx context.Context) {
	if s.tenants.idle <= 0 {
		return
	}
	t := time.NewTicker(max(s.tenants.idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.releaseIdle()
		}
	}
}

// releaseIdle releases the namespaces idle now, one at a time.
func (s *Server) releaseIdle() {
	released := false
	ts := &s.tenants
	now := time.Now()
	var idle []string
	ts.mu.Lock()
	for ns, t := range ts.byNS {
		if t.active == 0 && t.releasing == nil && now.Sub(t.last) >= ts.idle {
			idle = append(idle, ns)
		}
	}
	ts.mu.Unlock()
	for _, ns := range idle {
		// Checked apart from ts.mu: a session is made only inside an
		// operation, and releasing below shuts operations out first.
		if s.sessions.live(ns) {
			continue
		}
		ts.mu.Lock()
		t := ts.byNS[ns]
		if t == nil || t.active > 0 || t.releasing != nil || time.Since(t.last) < ts.idle {
			ts.mu.Unlock()
			continue
		}
		t.releasing = make(chan struct{})
		ts.mu.Unlock()
		if s.sessions.live(ns) { // one made between the check and the mark
			s.endRelease(ns, t, false)
			continue
		}
		s.release(ns)
		s.endRelease(ns, t, true)
		released = true
	}
	if released {
		s.activity.released()
	}
}

// endRelease lets operations of ns in again; a namespace released is
// forgotten, so that a thousand that each called once cost nothing here.
func (s *Server) endRelease(ns string, t *tenant, released bool) {
	ts := &s.tenants
	ts.mu.Lock()
	if released && ts.byNS[ns] == t {
		delete(ts.byNS, ns)
	}
	close(t.releasing)
	t.releasing = nil
	ts.mu.Unlock()
}

// release gives back what ns holds. Its sandboxes go first: they have its
// workspace's mount in their own mount namespaces.
func (s *Server) release(ns string) {
	dir := s.Workspace(ns)
	if r, ok := s.exec.(releaser); ok {
		r.Release(dir)
	}
	if vs, err := s.volumes(); err == nil {
		if err := vs.Release(dir); err != nil {
			s.log.Warn("release an idle namespace's workspace", "namespace", ns, "error", err)
		}
	}
	if s.envs != nil {
		s.envs.Forget(ns)
	}
	s.log.Debug("idle namespace released", "namespace", ns)
}

// activeNamespaces counts the namespaces that hold something now: used
// since the idle time, or holding a session (for tests and stats).
func (s *Server) activeNamespaces() int {
	s.tenants.mu.Lock()
	defer s.tenants.mu.Unlock()
	return len(s.tenants.byNS)
}
