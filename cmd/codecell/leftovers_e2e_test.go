package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/mountinfo"
)

// TestNothingOutlivesSIGKILL: a server killed with SIGKILL leaves its
// namespaces' workspace images mounted (nothing of it runs to unmount
// them); the next server on the data dir releases them before it serves,
// and a server that exits releases its own: no mount or loop device under
// the data dir survives.
func TestNothingOutlivesSIGKILL(t *testing.T) {
	requireProduction(t)
	tokens := map[string]string{tokenA: "team-a", tokenB: "team-b", "token-c-0123456789abcdef": "team-c"}
	cfg := `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "20s"},
		"http": {"tokens": {`
	for tok, ns := range tokens {
		cfg += `"` + tok + `": "` + ns + `",`
	}
	cfg = strings.TrimSuffix(cfg, ",") + `}}}`
	cfgPath, dataDir := testDirs(t, cfg)

	base, cmd := serveHTTPOn(t, cfgPath, dataDir, nil)
	for tok := range tokens {
		cs := connectWithToken(t, base, tok)
		if _, out := call(t, cs, map[string]any{"code": "open('f', 'w').write('x')"}); !out.OK {
			t.Fatalf("execution: %+v", out.Error)
		}
	}
	if got := mountsUnder(dataDir); len(got) < len(tokens) {
		t.Skipf("workspaces are not images here (mounts under the data dir: %q)", got)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	left := mountsUnder(dataDir)
	if len(left) < len(tokens) {
		t.Fatalf("the killed server left %q: nothing for its successor to release, the test tests nothing", left)
	}
	t.Logf("the killed server left %d mounts and loop devices %q", len(left), loopsUnder(dataDir))

	// The successor releases them before it serves (it mounts the default
	// namespace's workspace for its warm pool, which is its own).
	_, cmd = serveHTTPOn(t, cfgPath, dataDir, nil)
	for _, p := range mountsUnder(dataDir) {
		if !strings.HasSuffix(p, "/workspaces/default") {
			t.Errorf("after a restart, still mounted: %s", p)
		}
	}
	// Autoclear detaches a device after its unmount in the kernel's own
	// time: polled.
	if loops := waitLoops(dataDir, onlyDefault); !onlyDefault(loops) {
		t.Errorf("after a restart, loop devices still bound to %q", loops)
	}

	// A server that exits releases its own.
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if got := mountsUnder(dataDir); len(got) > 0 {
		t.Errorf("after the server exited, still mounted: %q", got)
	}
	if loops := waitLoops(dataDir, func(l []string) bool { return len(l) == 0 }); len(loops) > 0 {
		t.Errorf("after the server exited, loop devices still bound to %q", loops)
	}
}

// waitLoops polls loopsUnder(dir) until done says yes, for at most half a
// minute (a bound on a hang, not on speed: the kernel detaches within
// milliseconds), and returns what it saw last.
func waitLoops(dir string, done func([]string) bool) []string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		loops := loopsUnder(dir)
		if done(loops) || time.Now().After(deadline) {
			return loops
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mountsUnder lists the mount points beneath dir in this mount namespace.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	mounts, _ := mountinfo.Parse(f)
	var out []string
	for _, m := range mounts {
		if strings.HasPrefix(m.Point, dir+"/") {
			out = append(out, m.Point)
		}
	}
	return out
}

// loopsUnder lists the files beneath dir that loop devices are bound to.
func loopsUnder(dir string) []string {
	var out []string
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if s := strings.TrimSpace(string(b)); strings.HasPrefix(s, dir+"/") {
			out = append(out, s)
		}
	}
	return out
}

func onlyDefault(files []string) bool {
	for _, f := range files {
		if !strings.HasSuffix(f, "/default.ext4") {
			return false
		}
	}
	return true
}
