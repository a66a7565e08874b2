package sandbox

// The warm bound. Warm sandboxes (idle in a pool, or starting for one) are
// the server's, not each workspace's: all workspaces together hold at most
// Options.WarmLimit of them, and at most Options.WarmMemory of memory. A
// workspace that wants one more when the bound is reached takes it from
// the workspace used least lately, so the namespaces that run code keep
// theirs and one that ran once an hour ago holds none. No workspace takes
// more than half the bound that way: one namespace's burst leaves room for
// the others. A sandbox still never serves two workspaces: a workspace's
// sandbox taken is killed, and the other starts its own.
//
// Busy sandboxes (running an execution) are not warm and not bounded here;
// the server bounds how many executions run at once.

// measurer is a sandbox that can say how much memory its processes hold.
type measurer interface{ memory() int64 }

// warmLocked counts the warm sandboxes and the memory of those measured,
// per workspace and in all. m.mu is held.
func (m *Manager) warmLocked() (count int, mem int64, byWorkspace map[string]int) {
	byWorkspace = map[string]int{}
	for tg, list := range m.idle {
		count += len(list)
		byWorkspace[tg.workspace] += len(list)
		for _, sb := range list {
			mem += m.mem[sb]
		}
	}
	for tg, n := range m.starting {
		count += n
		byWorkspace[tg.workspace] += n
	}
	return count, mem, byWorkspace
}

// roomLocked says whether tg may hold one more warm sandbox, of extra
// bytes (0 when not known yet), making room when the bound is reached by
// taking the idle sandboxes of the workspaces used least lately; those
// are appended to evicted, for the caller to kill once m.mu is released.
// m.mu is held.
func (m *Manager) roomLocked(tg target, extra int64, evicted *[]sandbox) bool {
	limit, memLimit := m.opts.WarmLimit, m.opts.WarmMemory
	if limit <= 0 && memLimit <= 0 {
		return true
	}
	for {
		count, mem, by := m.warmLocked()
		if (limit <= 0 || count < limit) && (memLimit <= 0 || mem+extra <= memLimit) {
			return true
		}
		// A fair share: no workspace grows past half the bound by taking
		// from others.
		if limit > 0 && by[tg.workspace] >= max(1, limit/2) {
			return false
		}
		victim, ok := m.leastUsedLocked(tg.workspace)
		if !ok {
			return false
		}
		list := m.idle[victim]
		*evicted = append(*evicted, list[0])
		delete(m.mem, list[0])
		if len(list) == 1 {
			delete(m.idle, victim)
		} else {
			m.idle[victim] = list[1:]
		}
	}
}

// leastUsedLocked finds the target, of another workspace than except,
// with an idle sandbox whose workspace ran an execution least lately.
// m.mu is held.
func (m *Manager) leastUsedLocked(except string) (target, bool) {
	var best target
	found := false
	var bestAt int64
	for tg, list := range m.idle {
		if tg.workspace == except || len(list) == 0 {
			continue
		}
		at := m.lastUsed[tg.workspace]
		if !found || at < bestAt {
			best, bestAt, found = tg, at, true
		}
	}
	return best, found
}

// measure records, once per sandbox and only under a memory bound, what
// its processes hold (a read of /proc, a few milliseconds).
func (m *Manager) measure(tg target, sb sandbox) {
	ms, ok := sb.(measurer)
	if !ok || m.opts.WarmMemory <= 0 {
		return
	}
	m.mu.Lock()
	_, known := m.mem[sb]
	m.mu.Unlock()
	if known {
		return
	}
	mem := ms.memory()
	m.mu.Lock()
	m.mem[sb], m.kindMem[tg.preload] = mem, mem
	m.mu.Unlock()
}
