package sandbox

import (
	"path/filepath"
	"testing"
	"time"
)

// TestWarmLimit: warm sandboxes are bounded across workspaces. Workspaces
// that each ran once hold no more than WarmLimit together, and the one
// used last keeps its warm sandbox, taken from the one used least lately;
// no workspace takes more than half the bound from others. WarmMemory
// below one sandbox's memory keeps none warm, and executions still run.
func TestWarmLimit(t *testing.T) {
	m, ws := newPreloadManager(t, nil, Limits{}, func(o *Options) {
		o.PoolSize, o.IdlePoolSize, o.WarmLimit = 4, 1, 2
	})
	warm := func() (total int, of map[string]int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		n, _, by := m.warmLocked()
		return n, by
	}
	settled := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(slack); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				n, by := warm()
				t.Fatalf("%s: %d warm %v, %+v", what, n, by, m.PoolStats())
			}
		}
	}
	var spaces []string
	for i := range 4 {
		w := filepath.Join(filepath.Dir(ws), "ns"+string(rune('a'+i)))
		spaces = append(spaces, w)
		if res := exec1(t, m, w, "1", slack); !res.OK {
			t.Fatalf("%s: %+v", w, res.Error)
		}
		settled("the pool refilled", func() bool { st := m.PoolStats(); return st.Busy == 0 && st.Starting == 0 })
		if n, by := warm(); n > 2 || by[w] < 1 {
			t.Fatalf("after %s ran: %d warm %v, want at most 2, at least one of them %s's", w, n, by, w)
		}
	}
	// One workspace overlapping its executions grows its pool, but only
	// to half the bound (here 1) by taking from others.
	done := make(chan *Result, 3)
	for range 3 {
		go func() { done <- exec1(t, m, spaces[0], "import time\ntime.sleep(0.5)", slack) }()
	}
	for range 3 {
		if res := <-done; !res.OK {
			t.Fatalf("%+v", res.Error)
		}
	}
	settled("the burst's sandboxes back", func() bool { st := m.PoolStats(); return st.Busy == 0 && st.Starting == 0 })
	if n, by := warm(); n > 2 || by[spaces[0]] > 1 {
		t.Fatalf("after a burst: %d warm %v, want at most 2, at most 1 of the burst's workspace", n, by)
	}

	// A memory bound below one sandbox's: none stays warm.
	m2, ws2 := newPreloadManager(t, nil, Limits{}, func(o *Options) {
		o.PoolSize, o.IdlePoolSize, o.WarmMemory = 2, 1, 1<<20
	})
	for range 2 {
		if res := exec1(t, m2, ws2, "1", slack); !res.OK {
			t.Fatalf("%+v", res.Error)
		}
		for deadline := time.Now().Add(slack); ; time.Sleep(20 * time.Millisecond) {
			st := m2.PoolStats()
			if st.Busy == 0 && st.Starting == 0 {
				if st.Idle != 0 {
					t.Fatalf("a 1 MiB bound keeps %d warm", st.Idle)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pool did not settle: %+v", st)
			}
		}
	}
}

// TestReleaseForgets: a workspace released leaves nothing in the Manager's
// bookkeeping, however often it comes back and goes idle again: a server
// of many namespaces that each call now and then would otherwise keep a
// little of each, for every time.
func TestReleaseForgets(t *testing.T) {
	m, ws := newTestManager(t, Development, Limits{}, 1)
	for round := range 3 {
		if res := exec1(t, m, ws, "1", slack); !res.OK {
			t.Fatalf("round %d: %+v", round, res.Error)
		}
		m.Release(ws)
		// A refill may still be starting: it is killed once it is up.
		for deadline := time.Now().Add(slack); ; time.Sleep(20 * time.Millisecond) {
			if st := m.PoolStats(); st.Busy == 0 && st.Starting == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the pool did not settle: %+v", round, m.PoolStats())
			}
		}
		m.mu.Lock()
		_, epoch := m.epochs[ws]
		_, used := m.lastUsed[ws]
		kept := map[string]int{"idle": len(m.idle), "busy": len(m.busy), "starting": len(m.starting),
			"demand": len(m.demand), "epochs": len(m.epochs), "lastUsed": len(m.lastUsed)}
		m.mu.Unlock()
		m.dirMu.Lock()
		kept["prepared"] = len(m.prepared)
		m.dirMu.Unlock()
		for what, n := range kept {
			if n > 0 {
				t.Errorf("round %d: after Release the Manager's %s has %d entries (its one workspace's: epoch %v, last use %v)", round, what, n, epoch, used)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}
