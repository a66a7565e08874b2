package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/mountinfo"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/workspace"
)

// TestIdleNamespaceReleased: a namespace that ran nothing for
// namespaceIdle gives back its warm sandboxes and its workspace's mount
// (no sandbox holds a copy: its image's loop device goes), and its next
// call sets them up again with its files there; nothing is released under
// an execution that runs, nor under a live session. So with sandboxes
// started ahead of namespaces (sandbox.Manager.KeepUnbound), whose next
// call claims one.
func TestIdleNamespaceReleased(t *testing.T) {
	for _, unbound := range []int{0, 1} {
		t.Run(map[int]string{0: "cold", 1: "started ahead"}[unbound], func(t *testing.T) {
			testIdleNamespaceReleased(t, unbound)
		})
	}
}

func testIdleNamespaceReleased(t *testing.T, unbound int) {
	const idle = 300 * time.Millisecond
	cs, s, mgr := realServer(t, sandbox.Production, workspace.ImagesOn, func(o *Options) {
		o.Config.Sandbox.NamespaceIdle = idle
	})
	mgr.KeepUnbound(unbound)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.ReleaseIdle(ctx)
	ws := s.Workspace(DefaultNamespace)
	image := filepath.Join(filepath.Dir(ws), ".images", filepath.Base(ws)+".ext4")
	released := func() bool {
		ps := mgr.PoolStats()
		return !mounted(ws) && !attached(image) && ps.Idle+ps.Starting+ps.Busy == 0 && s.activeNamespaces() == 0
	}

	if out := execute(t, cs, "open('f', 'w').write('kept')"); !out.OK {
		t.Fatalf("first execution: %+v", out.Error)
	}
	if !mounted(ws) || !attached(image) {
		t.Fatal("the workspace is not an image mounted: the test tests nothing")
	}
	waitFor(t, time.Minute, "the idle namespace was not released", released)
	if out := execute(t, cs, "open('f').read()"); !out.OK || out.Result != "kept" {
		t.Fatalf("after the release: %v %+v", out.Result, out.Error)
	}

	// An execution that runs for many idle times keeps its namespace: the
	// test looks, while it runs, after a few rounds of the releaser.
	done := make(chan ExecuteCodeOutput, 1)
	go func() {
		done <- execute(t, cs, "import time\nopen('started', 'w').close()\nwhile not __import__('os').path.exists('go'): time.sleep(0.01)\nopen('g', 'w').write('y')\n'ok'")
	}()
	waitFor(t, time.Minute, "the long execution did not start", func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	time.Sleep(4 * idle)
	if !mounted(ws) {
		t.Error("the workspace was unmounted under a running execution")
	}
	os.WriteFile(filepath.Join(ws, "go"), nil, 0o644)
	if out := <-done; !out.OK || out.Result != "ok" {
		t.Fatalf("the long execution: %v %+v", out.Result, out.Error)
	}

	// A live session keeps it too, with its state.
	if out := execute(t, cs, "x = 41", "session_id", "s"); !out.OK {
		t.Fatalf("session: %+v", out.Error)
	}
	time.Sleep(4 * idle)
	if !mounted(ws) {
		t.Error("the workspace was unmounted under a live session")
	}
	if out := execute(t, cs, "x + 1", "session_id", "s"); !out.OK || out.Result != 42.0 {
		t.Fatalf("the session after idle time: %v %+v", out.Result, out.Error)
	}
	mustCall(t, cs, "close_session", map[string]any{"session_id": "s"}, nil)
	waitFor(t, time.Minute, "the namespace was not released once its session closed", released)
}

// attached says whether a loop device is bound to the image file: one
// is, with autoclear, for as long as a mount of it lives in any mount
// namespace (a sandbox's included).
func attached(image string) bool {
	backing, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, b := range backing {
		if data, err := os.ReadFile(b); err == nil && strings.TrimSpace(string(data)) == image {
			return true
		}
	}
	return false
}

// mounted says whether a filesystem is mounted at dir.
func mounted(dir string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	mounts, _ := mountinfo.Parse(f)
	for _, m := range mounts {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			return true
		}
	}
	return false
}

// TestReleaseTrims: idle namespaces released are a burst for TrimWhenIdle,
// which hands back the heap releasing them grew, as it does after
// executions: they were trimmed long before the namespaces went idle.
func TestReleaseTrims(t *testing.T) {
	var trims atomic.Int32
	old := freeOSMemory
	freeOSMemory = func() { trims.Add(1) }
	t.Cleanup(func() { freeOSMemory = old })
	s, _, _ := statsServer(t, nil, nil, nil)
	s.tenants.idle = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.TrimWhenIdle(ctx)

	s.enter("a")()
	time.Sleep(2 * time.Millisecond)
	s.releaseIdle()
	if n := s.activeNamespaces(); n != 0 {
		t.Fatalf("%d namespaces not released", n)
	}
	waitFor(t, 10*time.Second, "no trim after the release", func() bool { return trims.Load() == 1 })
}
