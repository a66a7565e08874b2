package sandbox

import (
	"regexp"
	"strings"
	"sync"
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
// skills packages among them).
func importsBeyondStdlib(code string) bool {
	for _, m := range importLine.FindAllStringSubmatch(code, -1) {
		names := m[1]
		if m[2] != "" {
			names = m[2]
		}
		for _, n := range strings.Split(names, ",") {
			n = strings.TrimSpace(n)
			top, _, _ := strings.Cut(n, ".")
			top, _, _ = strings.Cut(top, " ")
			if top != "" && !stdlibModules[top] {
				return true
			}
		}
	}
	return false
}

// importLine matches "import a, b.c as d" (group 1) and "from a.b import c"
// (group 2) at a line's start, indented or after a semicolon.
var importLine = regexp.MustCompile(`(?m)(?:^|;)[ \t]*(?:import[ \t]+([\w., \t]+)|from[ \t]+([\w.]+)[ \t]+import)`)

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
