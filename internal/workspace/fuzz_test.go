package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve checks workspace path resolution (SPEC §11): for any name, a
// successful Resolve lands inside the workspace, and neither Read nor Write
// reaches the directory beside it, which the workspace's symbolic links
// point to.
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

		if clean, err := fx.ws.Resolve(name); err == nil {
			if !filepath.IsLocal(clean) && clean != "." {
				t.Fatalf("Resolve(%q) = %q, not local", name, clean)
			}
			// The longest existing prefix, symlinks resolved, is inside.
			p := filepath.Join(fx.dir, clean)
			for {
				real, err := filepath.EvalSymlinks(p)
				if err == nil {
					if real != fx.dir && !strings.HasPrefix(real, fx.dir+"/") {
						t.Fatalf("Resolve(%q) = %q, which is %s, outside", name, clean, real)
					}
					break
				}
				if !errors.Is(err, fs.ErrNotExist) {
					break // a loop: nothing to reach
				}
				p = filepath.Dir(p)
			}
		}
		if c, err := fx.ws.Read(name, 0, 0); err == nil && strings.Contains(string(c.Data), secret) {
			t.Fatalf("Read(%q) returned the secret", name)
		}
		if _, err := fx.ws.Write(name, []byte("written")); err == nil {
			if _, err := fx.ws.Resolve(name); err != nil {
				t.Fatalf("Write(%q) succeeded where Resolve fails: %v", name, err)
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
