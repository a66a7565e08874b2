package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestThreadsAndPids: threads are how code runs upstream calls concurrently,
// so the default limits admit a ThreadPoolExecutor of 100; past
// sandbox.pids, the error names that key and its value, not only Python's
// "can't start new thread".
func TestThreadsAndPids(t *testing.T) {
	requireProduction(t)
	// The barrier holds every worker until all have started.
	pool := func(n int) string {
		return fmt.Sprintf("import threading, time\nfrom concurrent.futures import ThreadPoolExecutor\n"+
			"gate = threading.Barrier(%d, timeout=20)\n"+
			"with ThreadPoolExecutor(%d) as p:\n    done = list(p.map(lambda i: gate.wait(), range(%d)))\nlen(done)", n, n, n)
	}
	t.Run("defaults", func(t *testing.T) {
		cs := connectStdio(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1}}`)
		_, out := call(t, cs, map[string]any{"code": pool(100), "timeout_seconds": 60})
		if !out.OK || out.Result != 100.0 {
			t.Fatalf("100 threads under the default limits: %+v", out.Error)
		}
	})
	t.Run("past sandbox.pids", func(t *testing.T) {
		cs := connectStdio(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "pids": 32}}`)
		// Workers that sleep are never idle, so each task starts a thread.
		code := "import time\nfrom concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(64) as p:\n    list(p.map(lambda i: time.sleep(1), range(64)))"
		res, out := call(t, cs, map[string]any{"code": code, "timeout_seconds": 60})
		if out.OK || out.Error == nil || out.Error.Type != "RuntimeError" {
			t.Fatalf("64 threads with pids 32: %+v", out.Error)
		}
		want := "can't start new thread: the sandbox's process and thread limit, sandbox.pids = 32, is reached"
		if !strings.Contains(out.Error.Message, want) || !strings.Contains(out.Error.Traceback, want) || !strings.Contains(textOf(res), want) {
			t.Fatalf("message %q; traceback %q", out.Error.Message, out.Error.Traceback)
		}
	})
}
