package server

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// activity tracks the executions under way, so that memory can be handed
// back to the system once the server has gone idle.
type activity struct {
	running  atomic.Int64
	lastDone atomic.Int64 // Unix nanoseconds of the last execution's end, or release
}

func (a *activity) begin() { a.running.Add(1) }

func (a *activity) end() {
	a.lastDone.Store(time.Now().UnixNano())
	a.running.Add(-1)
}

// released marks idle namespaces given back (ReleaseIdle). That comes long
// after their executions' burst was trimmed, and the garbage it makes
// (mount tables read, sandboxes killed, workspaces unmounted) would stay
// in RSS while the server idles: a high GOGC waits for the heap to grow
// fivefold, or for the runtime's forced collection every two minutes, and
// the scavenger hands pages back slowly. So it is trimmed as a burst is.
func (a *activity) released() { a.lastDone.Store(time.Now().UnixNano()) }

// idleAfter is how long no execution must run before the server trims its
// memory.
const idleAfter = time.Second

// freeOSMemory hands the heap's free memory back; a variable for tests.
var freeOSMemory = debug.FreeOSMemory

// TrimWhenIdle returns the heap's free memory to the system once after each
// burst of executions (or of idle namespaces released), when none has run
// for idleAfter, until ctx ends.
//
// Why: codecell runs with a high GOGC (see config.GCPercent), which makes
// executions and tool calls faster but leaves the heap of a burst in RSS for
// minutes, as the runtime's scavenger returns it slowly. An idle server
// should cost its host little (BENCHMARKS.md's target: an idle RSS of
// 40 MB at most); one forced collection per
// burst, while nothing runs, costs nobody anything.
func (s *Server) TrimWhenIdle(ctx context.Context) {
	t := time.NewTicker(idleAfter / 4)
	defer t.Stop()
	var trimmed int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			last := s.activity.lastDone.Load()
			if last > trimmed && s.activity.running.Load() == 0 && now.UnixNano()-last >= int64(idleAfter) {
				freeOSMemory()
				trimmed = last
			}
		}
	}
}
