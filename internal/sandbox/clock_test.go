package sandbox

import (
	"context"
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
