package sandbox

import (
	"context"
	"strings"
	"time"

	"github.com/codecell/codecell/internal/proc"
)

// NotablePackages are the Python packages whose presence the server's
// instructions name (server.Instructions): the ones a model would reach
// for, and would otherwise try to install or do without.
var NotablePackages = []string{"numpy", "pandas", "scipy", "matplotlib", "sklearn"}

// Importable returns those of modules the Python interpreter python can
// import, in the order given. It asks one subprocess, which finds the
// modules without importing them (importlib.util.find_spec), so that it
// costs tens of milliseconds. It returns nil when python cannot say (not
// there, or too slow): then nothing is claimed.
func Importable(ctx context.Context, python string, modules []string) []string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	const script = `import sys, importlib.util as u
for m in sys.argv[1:]:
    try:
        if u.find_spec(m): print(m)
    except Exception: pass`
	cmd := proc.Command(ctx, python, append([]string{"-I", "-c", script}, modules...)...)
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	found := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		found[l] = true
	}
	var have []string
	for _, m := range modules {
		if found[m] {
			have = append(have, m)
		}
	}
	return have
}
