package sandbox

import "time"

// demand is how much of its pool a workspace has used lately: the most
// executions it ran at once, whether one found no sandbox idle, and when
// it last started one. The pool keeps as many warm as that peak, one more
// once an execution had to wait (calls that follow each other faster than
// a sandbox comes back), at least IdlePoolSize and at most PoolSize; a
// workspace that ran nothing for IdleAfter goes back to IdlePoolSize. An
// agent that calls every few seconds thus keeps one sandbox, and never
// starts a second only to give it back a minute later.
//
// Why not PoolSize always: a warm sandbox holds its fork server's memory,
// and with sandbox.preload that is tens of megabytes each (issue 29's
// figures in BENCHMARKS.md); most workspaces run one execution at a time.
type demand struct {
	peak  int
	short bool
	last  time.Time
}

// noteDemand records that an execution of tg started, and whether it found
// no sandbox idle. m.mu is held.
func (m *Manager) noteDemand(tg target, waited bool) {
	d := m.demand[tg]
	if d == nil {
		d = &demand{}
		m.demand[tg] = d
	}
	d.peak = max(d.peak, m.busy[tg])
	d.short = d.short || waited
	d.last = time.Now()
	m.lastUsed[tg.workspace] = d.last.UnixNano()
}

// want is how many sandboxes tg's pool holds, idle, starting and busy
// together. m.mu is held.
func (m *Manager) want(tg target) int {
	d := m.demand[tg]
	if d == nil || time.Since(d.last) >= m.opts.IdleAfter {
		return m.opts.IdlePoolSize
	}
	n := d.peak
	if d.short {
		n++
	}
	return min(max(n, m.opts.IdlePoolSize), m.opts.PoolSize)
}

// trim gives back, every quarter of IdleAfter, the warm sandboxes of
// workspaces that ran nothing for IdleAfter, down to IdlePoolSize.
func (m *Manager) trim() {
	defer m.wg.Done()
	tick := time.NewTicker(m.opts.IdleAfter / 4)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		var extra []sandbox
		m.mu.Lock()
		for tg, d := range m.demand {
			if time.Since(d.last) < m.opts.IdleAfter {
				continue
			}
			delete(m.demand, tg)
			list := m.idle[tg]
			if keep := m.opts.IdlePoolSize; len(list) > keep {
				// The oldest go: the others were used more lately.
				extra = append(extra, list[:len(list)-keep]...)
				for _, sb := range list[:len(list)-keep] {
					delete(m.mem, sb)
				}
				m.idle[tg] = list[len(list)-keep:]
			}
		}
		m.mu.Unlock()
		for _, sb := range extra {
			sb.kill()
		}
	}
}
