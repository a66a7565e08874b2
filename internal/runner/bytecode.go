package runner

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codecell/codecell/internal/proc"
)

// CompiledScript is the runner compiled to bytecode, in the layout
// Compile returns: an interpreter runs it in place of Script.
const CompiledScript = "codecell_runner.pyc"

// compileScript compiles every .py under argv[1] (an install) into
// argv[2], naming the sources as they will be found at argv[3]
// (tracebacks and linecache read them there): the runner's script to
// codecell_runner.pyc, which the interpreter runs as the script, the
// modules to their __pycache__ entries, which imports find. The pycs are
// hash-based and unchecked: they are made from the very sources they ship
// with, so the interpreter need not read the source to check them, and
// the sources' times (those of the sandbox's copies) do not matter.
const compileScript = `
import importlib.util, os, py_compile, sys
src, out, shown = sys.argv[1:4]
for d, _, names in os.walk(src):
    for n in names:
        if not n.endswith(".py"):
            continue
        p = os.path.join(d, n)
        rel = os.path.relpath(p, src)
        c = rel + "c" if rel == "codecell_runner.py" else os.path.relpath(importlib.util.cache_from_source(p), src)
        py_compile.compile(p, cfile=os.path.join(out, c), dfile=os.path.join(shown, rel), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
`

// Compile returns the runner's files compiled to bytecode by python from
// the install dir (Install), for a sandbox that has the sources (Files) at
// root: CompiledScript and each module's __pycache__ entry, for that
// interpreter's version alone. A sandbox given them as well starts
// without compiling the runner, about a quarter of its start's CPU
// (BENCHMARKS.md, issue 33).
//
// The interpreter runs on the host, so it must be the operator's (never a
// namespace's environment, whose site-packages its code could write); it
// runs isolated (-I) and without the site module (-S) all the same.
func Compile(ctx context.Context, python, dir, root string) ([]File, error) {
	tmp, err := os.MkdirTemp("", "codecell-bytecode-")
	if err != nil {
		return nil, fmt.Errorf("compile runner: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := proc.Command(ctx, python, "-I", "-S", "-c", compileScript, dir, tmp, root)
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
	if err == nil && !slices.ContainsFunc(out, func(f File) bool { return f.Path == CompiledScript }) {
		err = fmt.Errorf("%s was not written", CompiledScript)
	}
	if err != nil {
		return nil, fmt.Errorf("compile runner: %w", err)
	}
	return out, nil
}
