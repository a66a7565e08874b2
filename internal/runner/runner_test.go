package runner

import (
	"os"
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
