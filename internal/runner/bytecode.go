package runner

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/codecell/codecell/internal/proc"
)

// CompiledScript is the runner compiled to bytecode, in the layout
// Compile returns: an interpreter runs it in place of Script.
const CompiledScript = "codecell_runner.pyc"

// compileScript compiles every .py under argv[1] in place, naming the
// sources as they will be found at argv[2] (tracebacks and linecache read
// them there): the runner's script to codecell_runner.pyc beside it, which
// the interpreter runs as the script, the modules to their __pycache__
// entries, which imports find. The pycs are hash-based and unchecked:
// they are made from the very sources they ship with, so the interpreter
// need not read the source to check them, and the sources' times (those of
// the sandbox's copies) do not matter.
const compileScript = `
import importlib.util, os, py_compile, sys
src, shown = sys.argv[1], sys.argv[2]
for d, _, names in os.walk(src):
    for n in names:
        if not n.endswith(".py"):
            continue
        p = os.path.join(d, n)
        rel = os.path.relpath(p, src)
        c = p + "c" if rel == "codecell_runner.py" else importlib.util.cache_from_source(p)
        py_compile.compile(p, cfile=c, dfile=os.path.join(shown, rel), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
`

// Compile returns the runner's files compiled to bytecode by python, for a
// sandbox that has the sources (Files) at root: CompiledScript and each
// module's __pycache__ entry, for that interpreter's version alone. A
// sandbox given them as well starts without compiling the runner, about a
// quarter of its start's CPU (BENCHMARKS.md, issue 33).
//
// The interpreter runs on the host, so it must be the operator's (never a
// namespace's environment, whose site-packages its code could write); it
// runs isolated (-I) and without the site module (-S) all the same.
func Compile(ctx context.Context, python, root string) ([]File, error) {
	src, err := Files()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "codecell-bytecode-")
	if err != nil {
		return nil, fmt.Errorf("compile runner: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range src {
		p := filepath.Join(tmp, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("compile runner: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return nil, fmt.Errorf("compile runner: %w", err)
		}
	}
	cmd := proc.Command(ctx, python, "-I", "-S", "-c", compileScript, tmp, root)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("compile runner with %s: %v: %s", python, err, strings.TrimSpace(string(out)))
	}
	var out []File
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".pyc") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tmp, p)
		out = append(out, File{Path: rel, Data: data})
		return nil
	})
	if err == nil && !hasFile(out, CompiledScript) {
		err = fmt.Errorf("%s was not written", CompiledScript)
	}
	if err != nil {
		return nil, fmt.Errorf("compile runner: %w", err)
	}
	return out, nil
}

func hasFile(files []File, path string) bool {
	for _, f := range files {
		if f.Path == path {
			return true
		}
	}
	return false
}
