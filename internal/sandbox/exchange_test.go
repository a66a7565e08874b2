package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/codecell/codecell/internal/channel"
)

// TestExchangeCalls drives an exchange's calls without a sandbox: calls one
// after another (answered by a call goroutine that waits for the next),
// then many at once, each answered once with its own id and by a bounded
// number of goroutines; and once the calls' context ends, wait returns, idle
// call goroutines included.
func TestExchangeCalls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := io.Pipe()
	x := newExchange(Limits{}, &Request{})
	h := &echoHandler{}
	x.serveCalls(ctx, &Request{Calls: h}, w)
	replies := make(chan replyFrame)
	go func() {
		defer close(replies)
		fr := channel.NewReader(r, 0)
		for {
			m, err := fr.Read()
			if err != nil {
				return
			}
			var rf replyFrame
			if err := m.Decode(&rf); err != nil {
				t.Error(err)
				return
			}
			replies <- rf
		}
	}()
	send := func(id int) {
		raw, _ := json.Marshal(map[string]any{"type": "call", "id": id, "method": "tool",
			"params": map[string]any{"server": "s", "tool": "t", "arguments": map[string]any{"n": id}}})
		var c callFrame
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		if x.call(c, true) {
			t.Fatalf("call %d: fault %v", id, x.fault)
		}
	}
	check := func(rf replyFrame) int {
		want := fmt.Sprintf(`{"structured":{"n":%d}}`, rf.ID)
		if got := toJSON(rf.Result); !rf.OK || got != want {
			t.Errorf("reply %d: ok %v, %s, want %s", rf.ID, rf.OK, got, want)
		}
		return int(rf.ID)
	}
	for id := 1; id <= 200; id++ {
		send(id)
		if got := check(<-replies); got != id {
			t.Fatalf("reply to %d, want %d", got, id)
		}
	}
	// Reused, not one per call (a goroutine that has just answered may not
	// wait yet when the next call comes, so more than one may be started).
	if x.goroutines >= 100 {
		t.Errorf("%d call goroutines for 200 calls one after another", x.goroutines)
	}
	const together = 3 * maxInflightCalls
	var mu sync.Mutex
	seen := map[int]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range together {
			id := check(<-replies)
			mu.Lock()
			if seen[id] {
				t.Errorf("two replies to %d", id)
			}
			seen[id] = true
			mu.Unlock()
		}
	}()
	for id := 1000; id < 1000+together; id++ {
		send(id)
	}
	<-done
	if x.goroutines > maxCallGoroutines {
		t.Errorf("%d call goroutines, at most %d", x.goroutines, maxCallGoroutines)
	}
	if got := h.calls.Load(); got != 200+together {
		t.Errorf("%d calls handled, want %d", got, 200+together)
	}
	cancel()
	x.wait()
	w.Close()
}
