package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestInstallIsIdempotent(t *testing.T) {
	root := t.TempDir()
	a, err := Install(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Install(root)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("two installs gave %q and %q", a, b)
	}
	info, err := os.Stat(filepath.Join(a, Script))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o004 == 0 {
		t.Fatalf("runner not world-readable: %v", info.Mode())
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Fatalf("leftover temporary directories: %v", entries)
	}
}

// TestRunnerCutLeavesNoPartOfAValue (issue #28, finding 6): the runner's
// own cuts, of a long repr and of an error's message and traceback, drop
// the run of value characters they would split, as the host's do (package
// textcut); before, a repr cut inside an address kept its head, and an
// error was not cut at all.
func TestRunnerCutLeavesNoPartOfAValue(t *testing.T) {
	dir, err := Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const check = `
import sys
sys.path.insert(0, sys.argv[1])
import codecell_runner as r
for v in ["dave.trunc@example.org", "4111111111111111", "+1-555-123-4567"]:
    for k in range(1, len(v)):
        text = ("x " * 100)[:100 - k] + v + " and more" * 20
        cuts = [r.encode_result(text, 100)["value"]]
        e = r.cut_error({"type": "ValueError", "message": text, "traceback": text}, {"result_bytes": 100})
        cuts += [e["message"], e["traceback"]]
        for got in cuts:
            kept = got.split("... [")[0]
            if v[:3] in kept or len(got) > 200 or "dropped" not in got:
                print("cut %d into %r keeps %r" % (k, v, got))
`
	out, err := exec.Command("/usr/bin/python3", "-c", check, dir).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("%v\n%s", err, out)
	}
}
