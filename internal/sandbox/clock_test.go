package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestClockPause: a paused timeout does not run (its deadline moves with
// the time paused), runs again when resumed, and fires with errTimeout.
func TestClockPause(t *testing.T) {
	ctx, cancel := withClock(context.Background(), time.Hour)
	defer cancel()
	resume := PauseTimeout(ctx)
	inner := PauseTimeout(ctx) // pauses nest
	d1, ok := Deadline(ctx)
	if !ok {
		t.Fatal("no deadline inside an execution")
	}
	time.Sleep(20 * time.Millisecond)
	d2, _ := Deadline(ctx)
	if d2.Sub(d1) < 20*time.Millisecond {
		t.Errorf("the deadline did not move while paused: %v then %v", d1, d2)
	}
	resume()
	resume() // once only
	if c := ctx.Value(clockKey{}).(*clock); c.timer != nil {
		t.Error("the clock runs while a nested pause is still held")
	}
	inner()
	if c := ctx.Value(clockKey{}).(*clock); c.timer == nil {
		t.Error("the clock did not run again after every pause resumed")
	}

	short, cancel2 := withClock(context.Background(), time.Millisecond)
	defer cancel2()
	<-short.Done()
	if !errors.Is(context.Cause(short), errTimeout) {
		t.Errorf("cause %v, want errTimeout", context.Cause(short))
	}
	PauseTimeout(short)() // after it fired: nothing restarts, nothing panics
}

// pausingHandler answers a tool call after wait, with the execution's
// timeout paused meanwhile, as a call waiting for a person's approval is.
type pausingHandler struct{ wait time.Duration }

func (h pausingHandler) HandleCall(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
	defer PauseTimeout(ctx)()
	select {
	case <-time.After(h.wait):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return map[string]any{"structured": "approved"}, nil
}

// TestTimeoutPausedForApproval: an execution whose tool call waits three
// times its timeout, paused, ends well; the time it runs itself still
// counts, and past its timeout it is stopped.
func TestTimeoutPausedForApproval(t *testing.T) {
	m, ws := newTestManager(t, Development, Limits{}, 1)
	timeout := 2 * time.Second
	code := "from codecell import _rpc\n_rpc.call('s', 't', {})"
	r := m.Exec(context.Background(), Request{Workspace: ws, Code: code, Timeout: timeout, Calls: pausingHandler{wait: 3 * timeout}})
	if !r.OK || toJSON(r.Result) != `"approved"` {
		t.Fatalf("a call paused past the timeout: %+v %v", r.Error, r.Result)
	}
	r = m.Exec(context.Background(), Request{Workspace: ws, Code: code + "\nimport time\ntime.sleep(60)", Timeout: timeout, Calls: pausingHandler{wait: timeout / 2}})
	if r.Error == nil || r.Error.Type != ErrTimeout {
		t.Fatalf("the code's own time past its timeout: %+v", r.Error)
	}
}
