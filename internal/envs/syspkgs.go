package envs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// includeSystem is pyvenv.cfg's line that lets a venv see the system's
// site-packages (what `python -m venv --system-site-packages` writes).
var includeSystem = regexp.MustCompile(`(?m)^include-system-site-packages\s*=.*$`)

// setSystemPackages makes the venv at dir see the system's packages, or
// not: its pyvenv.cfg, which the interpreter reads at start, says so. Its
// own packages come first either way, so one installed there (a newer
// pandas) stands in for the system's.
func setSystemPackages(dir string, on bool) error {
	cfg := filepath.Join(dir, "pyvenv.cfg")
	b, err := os.ReadFile(cfg)
	if err != nil {
		return fmt.Errorf("read the environment's pyvenv.cfg: %w", err)
	}
	line := fmt.Sprintf("include-system-site-packages = %t", on)
	out := includeSystem.ReplaceAll(b, []byte(line))
	if !includeSystem.Match(b) {
		out = append(append(out, line...), '\n')
	}
	if string(out) == string(b) {
		return nil
	}
	if err := os.WriteFile(cfg, out, 0o644); err != nil {
		return fmt.Errorf("write the environment's pyvenv.cfg: %w", err)
	}
	return nil
}
