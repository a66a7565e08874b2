package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve checks workspace path resolution: for any name,
// neither Read nor Write reaches the directory beside the workspace, which
// the workspace's symbolic links point to, and what Write writes, its
// links resolved, lies inside the workspace.
func FuzzResolve(f *testing.F) {
	for _, seed := range []string{
		"a.txt", "sub/b.txt", ".", "..", "../outside/secret.txt", "/etc/passwd", "outfile", "outdir/secret.txt",
		"absfile", "inner/../outfile", "sub/../../x", "sub/./b.txt", "sub//b.txt", "loop/x", "inlink/b.txt", "a\x00b", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		fx := newFixture(t, Options{})
		must(t, os.MkdirAll(filepath.Join(fx.dir, "sub"), 0o755))
		must(t, os.WriteFile(filepath.Join(fx.dir, "sub", "b.txt"), []byte("b"), 0o644))
		must(t, os.Symlink("sub", filepath.Join(fx.dir, "inlink")))
		must(t, os.Symlink("loop", filepath.Join(fx.dir, "loop")))

		if c, err := fx.ws.Read(name, 0, 0); err == nil && strings.Contains(string(c.Data), secret) {
			t.Fatalf("Read(%q) returned the secret", name)
		}
		if e, err := fx.ws.Write(name, []byte("written")); err == nil {
			if !filepath.IsLocal(e.Path) {
				t.Fatalf("Write(%q) wrote %q, not local", name, e.Path)
			}
			root, _ := filepath.EvalSymlinks(fx.dir)
			real, err := filepath.EvalSymlinks(filepath.Join(fx.dir, e.Path))
			if err != nil || !strings.HasPrefix(real, root+"/") {
				t.Fatalf("Write(%q) wrote %q, which is %s (%v), outside", name, e.Path, real, err)
			}
		}
		ents, _ := os.ReadDir(fx.outside)
		if len(ents) != 1 {
			t.Fatalf("Write(%q) created something outside: %v", name, ents)
		}
		if got, _ := os.ReadFile(filepath.Join(fx.outside, "secret.txt")); string(got) != secret {
			t.Fatalf("Write(%q) changed the file outside", name)
		}
	})
}
