package sandbox

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/codecell/codecell/internal/runner"
)

// TestRunnerBytecodeFollowsInterpreter: the runner's bytecode is made by
// the Manager's interpreter, again when that interpreter's file changes,
// and a sandbox runs the sources when it cannot be made.
func TestRunnerBytecodeFollowsInterpreter(t *testing.T) {
	files, err := runner.Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "python3")
	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho no such interpreter >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	point := func(to string) {
		os.Remove(link)
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	install, err := runner.Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &Manager{opts: Options{Python: link}, log: slog.New(slog.DiscardHandler), runtime: install, runtimeFiles: files}
	for i, step := range []struct{ to, want string }{
		{python, runner.CompiledScript},
		{broken, runner.Script},
		{python, runner.CompiledScript},
	} {
		point(step.to)
		got, script := m.runnerFor(link)
		if script != step.want {
			t.Fatalf("step %d (%s): the sandbox would run %s, want %s", i, step.to, script, step.want)
		}
		if pyc := len(got) - len(files); (script == runner.CompiledScript) != (pyc > 0) {
			t.Fatalf("step %d: %d compiled files for %s", i, pyc, script)
		}
	}
	if _, script := m.runnerFor(python); script != runner.Script {
		t.Fatalf("another interpreter (an environment's) got the bytecode: %s", script)
	}
}
