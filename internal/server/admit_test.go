package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/sandbox"
)

// TestAdmission: executions past a namespace's bound wait; one past as
// many waiting is refused at once as busy, one that waits past its
// timeout is refused then; a freed slot goes to the waiting namespace
// that runs fewest, not to the one that queued first.
func TestAdmission(t *testing.T) {
	a := &admission{limit: 3, perNS: 2}
	ctx := context.Background()
	take := func(ns string) func() {
		t.Helper()
		done, err := a.acquire(ctx, ns, time.Hour)
		if err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
		return done
	}
	a1, a2 := take("a"), take("a")
	// a is at its bound; b takes the third slot at once.
	b1 := take("b")
	// a's next two wait; a third is refused at once.
	admitted := make(chan string, 8)
	wait := func(ns string) {
		go func() {
			done, err := a.acquire(ctx, ns, time.Hour)
			if err != nil {
				admitted <- ns + ": " + err.Error()
				return
			}
			admitted <- ns
			_ = done // held until the test ends
		}()
	}
	wait("a")
	wait("a")
	waitFor(t, time.Minute, "a's calls did not queue", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.byNS["a"].waiting) == 2
	})
	if _, err := a.acquire(ctx, "a", time.Hour); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "namespaceConcurrency") {
		t.Fatalf("a third waiting call of a: %v, want ErrBusy naming the bound", err)
	}
	// c queues after a's; when b's slot frees, c (running none) gets it.
	wait("c")
	waitFor(t, time.Minute, "c's call did not queue", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.byNS["c"] != nil && len(a.byNS["c"].waiting) == 1
	})
	b1()
	if got := <-admitted; got != "c" {
		t.Fatalf("the freed slot went to %q, want c", got)
	}
	a1()
	if got := <-admitted; got != "a" {
		t.Fatalf("the next freed slot went to %q, want a", got)
	}
	_ = a2
	// A call that waits past its timeout is refused as busy.
	if _, err := a.acquire(ctx, "d", 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("a call that waited past its timeout: %v, want ErrBusy", err)
	}
}

// TestBusyOverMCP: a namespace's call past its bound gets a tool error
// saying busy, and its answer when a slot frees, never a hang.
func TestBusyOverMCP(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	_, cs := newTestServer(t, func(o *Options) {
		o.Config.Sandbox.Concurrency, o.Config.Sandbox.NamespaceConcurrency = 1, 1
		o.Executor = execFunc(func(ctx context.Context, req sandbox.Request) *sandbox.Result {
			started <- struct{}{}
			<-release
			return &sandbox.Result{OK: true}
		})
	})
	results := make(chan string, 3)
	run := func() {
		res, text := callTool(t, cs, "execute_code", map[string]any{"code": "1", "timeout_seconds": 60})
		if res.IsError {
			results <- "error: " + text
			return
		}
		results <- "ok"
	}
	go run()
	<-started
	go run() // waits its turn
	time.Sleep(100 * time.Millisecond)
	go run() // one waiting already: refused at once
	if got := <-results; !strings.Contains(got, "busy") {
		t.Fatalf("the third call: %q, want busy", got)
	}
	close(release)
	for range 2 {
		if got := <-results; got != "ok" {
			t.Fatalf("a call: %q", got)
		}
	}
}
