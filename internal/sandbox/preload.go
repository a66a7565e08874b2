package sandbox

import (
	"strings"
	"sync"

	"github.com/codecell/codecell/internal/cgroup"
)

// Two kinds of sandbox serve a workspace where sandbox.preload is set:
// lean ones, whose fork server imports nothing, and preloaded ones. A
// preloaded fork server holds tens of megabytes more, and forking it and
// tearing down each child costs more CPU (its page tables, its copied
// pages): code that imports only the standard library, most often a
// print or a tool call, runs in a lean one and pays nothing for a preload
// it does not use. The choice reads the code's import statements and is
// only about speed: code that imports pandas where the check did not see
// it (importlib, exec) runs in a lean sandbox and imports it itself.

// importsBeyondStdlib says whether code imports, at any line, a module
// other than the standard library's and codecell's own (the servers and
// skills packages among them): "import a, b.c as d" or "from a.b import
// c", at a line's start, indented or after a semicolon. It is on every
// execution's path: a scan of the lines that stops at the first such
// import, no regular expression (which took 2.4 ms for 100 KB of code).
func importsBeyondStdlib(code string) bool {
	for line := range strings.Lines(code) {
		for stmt := range strings.SplitSeq(line, ";") {
			if importsOther(strings.TrimLeft(stmt, " \t")) {
				return true
			}
		}
	}
	return false
}

// importsOther says whether one statement imports a module beyond the
// standard library's.
func importsOther(stmt string) bool {
	var names string
	if rest, ok := strings.CutPrefix(stmt, "import"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		names = rest
	} else if rest, ok := strings.CutPrefix(stmt, "from"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		if f := strings.Fields(rest); len(f) >= 2 && f[1] == "import" {
			names = f[0]
		}
	}
	for n := range strings.SplitSeq(names, ",") {
		// "b.c as d": the first word, up to its first dot.
		if f := strings.Fields(n); len(f) > 0 {
			if top, _, _ := strings.Cut(f[0], "."); top != "" && !stdlibModules[top] {
				return true
			}
		}
	}
	return false
}

// PreloadReport is what a fork server says it preloaded.
type PreloadReport struct {
	Loaded []string         `json:"loaded"`
	Failed []PreloadFailure `json:"failed"`
	// VM is the address space the preload mapped, which each execution's
	// memory limit leaves out (the runner adds it to RLIMIT_AS), RSS the
	// memory it holds, which the sandbox's cgroup allows on top of
	// sandbox.memory, and Threads the threads the imports started (a BLAS
	// library's), which the cgroup's pids limit allows likewise.
	VM      int64 `json:"vm"`
	RSS     int64 `json:"rss"`
	Threads int   `json:"threads"`
}

// PreloadFailure is one module the fork server could not preload, and why.
type PreloadFailure struct {
	Module string `json:"module"`
	Error  string `json:"error"`
}

// preloads keeps the last report of each interpreter's fork servers and
// logs each failure once: every sandbox of a pool reports the same.
type preloads struct {
	mu     sync.Mutex
	last   map[string]*PreloadReport
	logged map[string]bool
}

// preloaded takes a starting sandbox's preload report r (nil from a lean
// fork server): it is recorded, and the sandbox's cgroup cg (nil for none)
// allows what the preload holds on top of the code's limits and the fork
// server's own overhead, since it is not the code's.
func (m *Manager) preloaded(python string, r *PreloadReport, cg *cgroup.Group, overhead cgroup.Limits) error {
	if r == nil {
		return nil
	}
	m.notePreload(python, r)
	if cg == nil || (r.RSS == 0 && r.Threads == 0) {
		return nil
	}
	l := cgroup.Limits{Memory: m.limits.Memory + overhead.Memory + r.RSS}
	if overhead.Pids > 0 {
		l.Pids = m.limits.Pids + overhead.Pids + r.Threads
	}
	return cg.SetLimits(l)
}

// notePreload records r, from a fork server of python, and logs what
// failed that was not logged before.
func (m *Manager) notePreload(python string, r *PreloadReport) {
	if r == nil {
		return
	}
	p := &m.preloads
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last, p.logged = map[string]*PreloadReport{}, map[string]bool{}
	}
	p.last[python] = r
	for _, f := range r.Failed {
		key := f.Module + "\x00" + f.Error
		if !p.logged[key] {
			p.logged[key] = true
			m.log.Warn("sandbox.preload: module not preloaded; executions import it themselves",
				"module", f.Module, "error", f.Error)
		}
	}
}

// Preload returns what the last preloading fork server of python ("" for
// Options.Python) preloaded, and false before any has started.
func (m *Manager) Preload(python string) (PreloadReport, bool) {
	if python == "" {
		python = m.opts.Python
	}
	m.preloads.mu.Lock()
	defer m.preloads.mu.Unlock()
	r := m.preloads.last[python]
	if r == nil {
		return PreloadReport{}, false
	}
	return *r, true
}

// preloadArg is the runner's --preload argument for a sandbox of tg, or
// nil for none.
func (m *Manager) preloadArg(tg target) []string {
	if !tg.preload || len(m.opts.Preload) == 0 {
		return nil
	}
	return []string{"--preload", strings.Join(m.opts.Preload, ",")}
}
