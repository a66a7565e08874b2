package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompiledRunnerRuns: the bytecode Compile makes is what the
// interpreter runs and imports, without reading the sources (each is made
// to fail when read), and its code names the sources where the sandbox has
// them, for tracebacks.
func TestCompiledRunnerRuns(t *testing.T) {
	const python = "/usr/bin/python3"
	install, err := Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pyc, err := Compile(context.Background(), python, install, dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	modules := 0
	for _, f := range append(src, pyc...) {
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := f.Data
		if strings.HasSuffix(f.Path, ".py") {
			data = []byte("raise SystemExit('the source of " + f.Path + " was read')\n")
		} else if strings.Contains(f.Path, "__pycache__") {
			modules++
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if modules == 0 {
		t.Fatalf("no module was compiled: %v", pyc)
	}
	// The runner as a script: its bytecode runs as __main__ (a bad
	// argument gets its usage, not the source's SystemExit), and
	// imports codecell from its own directory.
	out, _ := exec.Command(python, "-I", "-B", filepath.Join(dir, CompiledScript), "--no-such-flag").CombinedOutput()
	if strings.Contains(string(out), "was read") || !strings.Contains(string(out), "usage: codecell_runner.py") {
		t.Errorf("the compiled runner did not run as itself: %s", out)
	}
	const check = `
import sys
sys.path.insert(0, sys.argv[1])
import codecell, codecell._rpc, codecell._relay
print(codecell._rpc.call.__code__.co_filename)
`
	out, err = exec.Command(python, "-I", "-B", "-c", check, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), filepath.Join(dir, "codecell", "_rpc.py"); got != want {
		t.Errorf("compiled code names %q, want %q", got, want)
	}
}

// TestCompileFailsClearly: an interpreter that cannot compile gives an
// error that names it; the Manager then starts sandboxes from the sources.
func TestCompileFailsClearly(t *testing.T) {
	install, err := Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(context.Background(), "/bin/false", install, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "/bin/false") {
		t.Fatalf("err = %v", err)
	}
}
