package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/seccomp"
)

// newPreloadManager is newTestManager at production with a preload and
// the elastic pool's options.
func newPreloadManager(t *testing.T, preload []string, lim Limits, opts func(*Options)) (*Manager, string) {
	t.Helper()
	if err := Check(t.Context(), Production, python); err != nil {
		t.Skipf("production unavailable here: %v", err)
	}
	if exec.Command(python, "-c", "import numpy, pandas, matplotlib.pyplot").Run() != nil {
		t.Skip("the data stack is not installed (make deps installs it)")
	}
	prog, err := seccomp.Program()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Level: Production, Python: python, Limits: lim, StateDir: reachableTempDir(t), PoolSize: 2, Seccomp: prog, Preload: preload}
	if opts != nil {
		opts(&o)
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, filepath.Join(reachableTempDir(t), "ws")
}

// TestPreload: code that imports beyond the standard library runs in a
// fork server that imported the preload before it forked (the modules are
// loaded before the code's first line), stdlib-only code in a lean one;
// each child has random state of its own, for random and numpy alike; the
// memory limit still bounds what the code allocates.
func TestPreload(t *testing.T) {
	m, ws := newPreloadManager(t, []string{"numpy", "pandas", "matplotlib.pyplot"}, Limits{Memory: 512 << 20}, nil)
	loaded := "import sys\nloaded = sorted(m for m in ('numpy', 'pandas', 'matplotlib.pyplot') if m in sys.modules)\n"
	res := exec1(t, m, ws, loaded+"import numpy\nloaded", slack)
	if !res.OK || toJSON(res.Result) != `["matplotlib.pyplot","numpy","pandas"]` {
		t.Fatalf("a data execution found %s (%+v)", toJSON(res.Result), res.Error)
	}
	if r, ok := m.Preload(""); !ok || len(r.Loaded) != 3 || len(r.Failed) != 0 || r.RSS <= 0 {
		t.Fatalf("preload report %+v, %v", r, ok)
	}
	res = exec1(t, m, ws, loaded+"loaded", slack)
	if !res.OK || toJSON(res.Result) != `[]` {
		t.Fatalf("a stdlib-only execution found %s preloaded (%+v)", toJSON(res.Result), res.Error)
	}

	seen := map[string]bool{}
	for range 4 {
		res := exec1(t, m, ws, "import random, numpy\n(random.random(), float(numpy.random.rand()))", slack)
		if !res.OK {
			t.Fatalf("%+v", res.Error)
		}
		key := toJSON(res.Result)
		if seen[key] {
			t.Fatalf("two executions drew the same random numbers %s: their state came from the fork server", key)
		}
		seen[key] = true
	}

	// 600 MB is past the 512 MB limit whatever the preload mapped; 300 MB
	// is within it, preload or not.
	res = exec1(t, m, ws, "import numpy\nb = bytearray(600 << 20)", slack)
	if res.OK || res.Error.Type != "MemoryError" && res.Error.Type != ErrMemoryLimit {
		t.Fatalf("600 MB under a 512 MB limit: %+v", res.Error)
	}
	res = exec1(t, m, ws, "import numpy\nb = bytearray(300 << 20)\nlen(b)", slack)
	if !res.OK {
		t.Fatalf("300 MB under a 512 MB limit with the preload: %+v", res.Error)
	}
}

// TestPreloadFailure: a module that cannot be imported is reported and
// skipped; the others are preloaded and executions run.
func TestPreloadFailure(t *testing.T) {
	m, ws := newPreloadManager(t, []string{"numpy", "no_such_module_29"}, Limits{}, nil)
	res := exec1(t, m, ws, "import sys, numpy\n'numpy' in sys.modules", slack)
	if !res.OK || res.Result != true {
		t.Fatalf("%+v", res)
	}
	r, ok := m.Preload("")
	if !ok || len(r.Loaded) != 1 || len(r.Failed) != 1 || r.Failed[0].Module != "no_such_module_29" ||
		!strings.Contains(r.Failed[0].Error, "ModuleNotFoundError") {
		t.Fatalf("preload report %+v", r)
	}
}

// TestPreloadSkipsEnvironmentPackages: an environment with its own copy of
// a system package gets no preload (a system module imported by the fork
// server would stand in for the environment's), and the fork server never
// imports what the environment holds: a module there that would announce
// its import is not imported before the code asks.
func TestPreloadSkipsEnvironmentPackages(t *testing.T) {
	m, ws := newPreloadManager(t, []string{"numpy", "announce29"}, Limits{}, nil)
	venv := filepath.Join(reachableTempDir(t), "venv")
	if out, err := exec.Command(python, "-m", "venv", "--without-pip", "--system-site-packages", venv).CombinedOutput(); err != nil {
		t.Skipf("python3 -m venv: %v: %s", err, out)
	}
	site, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(site) != 1 {
		t.Fatalf("no site-packages in %s", venv)
	}
	// A module only the environment has: never preloaded, even when named.
	os.WriteFile(filepath.Join(site[0], "announce29.py"), []byte("import os\nopen('/workspace/announced', 'a').write('x')\n"), 0o644)
	req := Request{Workspace: ws, Code: "import sys, numpy\n('announce29' in sys.modules, 'numpy' in sys.modules)", Timeout: slack,
		Python: filepath.Join(venv, "bin", "python"), ReadOnly: []string{venv}}
	res := m.Exec(t.Context(), req)
	if !res.OK || toJSON(res.Result) != "[false,true]" {
		t.Fatalf("%s %+v", toJSON(res.Result), res.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, "announced")); err == nil {
		t.Fatal("the fork server imported a module of the environment's")
	}
	if r, _ := m.Preload(filepath.Join(venv, "bin", "python")); len(r.Failed) != 1 || r.Failed[0].Module != "announce29" {
		t.Fatalf("preload report %+v", r)
	}
	// The environment's own numpy: nothing preloaded at all.
	os.Mkdir(filepath.Join(site[0], "numpy"), 0o755)
	os.WriteFile(filepath.Join(site[0], "numpy", "__init__.py"), []byte("mine = True\n"), 0o644)
	req.Code = "import sys\nsys.modules.get('numpy')"
	m.Close() // a fresh pool: the sandboxes above preloaded before the environment changed
	m2, _ := newPreloadManager(t, []string{"numpy"}, Limits{}, nil)
	res = m2.Exec(t.Context(), req)
	if !res.OK || res.Result != nil {
		t.Fatalf("numpy preloaded over the environment's own: %s %+v", toJSON(res.Result), res.Error)
	}
	req.Code = "import numpy\nnumpy.mine"
	if res = m2.Exec(t.Context(), req); !res.OK || res.Result != true {
		t.Fatalf("the environment's numpy was not the one imported: %+v", res.Error)
	}
	if r, _ := m2.Preload(filepath.Join(venv, "bin", "python")); len(r.Failed) != 1 || !strings.Contains(r.Failed[0].Error, "has its own numpy") {
		t.Fatalf("preload report %+v", r)
	}
}

// TestElasticPool: an idle workspace keeps IdlePoolSize warm sandboxes of
// each kind, executions one at a time keep it there, overlapping ones grow
// it towards PoolSize, and after IdleAfter without an execution it gives
// the rest back.
func TestElasticPool(t *testing.T) {
	m, ws := newPreloadManager(t, nil, Limits{}, func(o *Options) {
		o.PoolSize, o.IdlePoolSize, o.IdleAfter = 4, 1, 2*time.Second
	})
	warm := func() int {
		tg := m.defaultTarget(ws)
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.idle[tg])
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(slack); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v, %d warm", what, m.PoolStats(), warm())
			}
		}
	}
	m.WarmFor(Request{Workspace: ws})
	waitFor("one warm sandbox", func() bool { st := m.PoolStats(); return warm() == 1 && st.Starting == 0 })
	// One at a time, each after the sandbox came back: nothing to grow for.
	for range 3 {
		if res := exec1(t, m, ws, "1", slack); !res.OK {
			t.Fatalf("%+v", res.Error)
		}
		waitFor("the sandbox back", func() bool { st := m.PoolStats(); return warm() == 1 && st.Busy == 0 })
		if st := m.PoolStats(); st.Starting != 0 {
			t.Fatalf("sequential executions started another sandbox: %+v", st)
		}
	}
	// Three at once: the pool grows to hold one more than ran at once.
	done := make(chan *Result, 3)
	for range 3 {
		go func() { done <- exec1(t, m, ws, "import time\ntime.sleep(1)", slack) }()
	}
	for range 3 {
		if res := <-done; !res.OK {
			t.Fatalf("%+v", res.Error)
		}
	}
	waitFor("the pool grown", func() bool { return warm() == 4 })
	waitFor("the pool given back after IdleAfter", func() bool { return warm() == 1 })
}

func TestImportsBeyondStdlib(t *testing.T) {
	for code, want := range map[string]bool{
		"print(1)": false,
		"import os, sys\nfrom collections import Counter": false,
		"from servers.github import create_issue":         false,
		"import codecell; import json as j":               false,
		"import pandas as pd":                             true,
		"x = 1; import numpy":                             true,
		"def f():\n    import sklearn.linear_model":       true,
		"from matplotlib import pyplot":                   true,
		"import os, numpy.linalg as la":                   true,
		"# import pandas\nprint('import numpy')":          false,
		"from . import sibling":                           false,
		"import os,numpy":                                 true,
		"\timport\tscipy.stats":                           true,
		"import\tos\tas\to":                               false,
		"importlib = 1\nfromage = 2":                      false,
		"from pandas import DataFrame":                    true,
	} {
		if got := importsBeyondStdlib(code); got != want {
			t.Errorf("%q: %v, want %v", code, got, want)
		}
	}
}

// TestRefreshRetiresBusySandboxes: a sandbox busy when its workspace is
// refreshed (the environment changed under it) finishes its execution and
// is not pooled again: the next execution runs in another sandbox. Each
// sandbox reads a boot_id of its own.
func TestRefreshRetiresBusySandboxes(t *testing.T) {
	m, ws := newTestManager(t, Production, Limits{}, 1)
	const bootID = "open('/proc/sys/kernel/random/boot_id').read()"
	first := exec1(t, m, ws, bootID, slack)
	if !first.OK {
		t.Fatalf("%+v", first.Error)
	}
	// Without a refresh the pool hands the same sandbox back.
	if again := exec1(t, m, ws, bootID, slack); again.Result != first.Result {
		t.Skipf("the pool did not hand the sandbox back (%v, %v): nothing to compare", first.Result, again.Result)
	}
	// Settled (the last execution's clean-up reported), so that Busy
	// below is the sleeping execution's.
	for deadline := time.Now().Add(slack); ; time.Sleep(10 * time.Millisecond) {
		if st := m.PoolStats(); st.Busy == 0 && st.Idle == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not settle: %+v", m.PoolStats())
		}
	}
	done := make(chan *Result)
	go func() { done <- exec1(t, m, ws, "import time\ntime.sleep(1)\n"+bootID, slack) }()
	for deadline := time.Now().Add(slack); m.PoolStats().Busy == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the execution never started")
		}
	}
	m.Refresh(ws)
	busy := <-done
	if !busy.OK || busy.Result != first.Result {
		t.Fatalf("the busy execution: %v %+v", busy.Result, busy.Error)
	}
	if next := exec1(t, m, ws, bootID, slack); !next.OK || next.Result == busy.Result {
		t.Fatalf("the sandbox busy at the refresh served again (%v)", next.Result)
	}
}

// BenchmarkImportsBeyondStdlib is what choosing the kind of sandbox adds to
// every execution's path: a cell as agents write them, and 100 KB of code.
func BenchmarkImportsBeyondStdlib(b *testing.B) {
	cell := "import json, os\nfrom servers.github import list_issues\nissues = list_issues(repo='a/b')\n" +
		"rows = [i['title'] for i in issues if 'bug' in i['labels']]\nprint(json.dumps(rows[:5]))\n"
	for name, code := range map[string]string{"cell": cell, "100KB": strings.Repeat(cell, 100_000/len(cell))} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				importsBeyondStdlib(code)
			}
		})
	}
}
