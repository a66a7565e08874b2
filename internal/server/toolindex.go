package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/codegen"
	"github.com/codecell/codecell/internal/upstream"
)

// toolIndex is the current catalog of upstream tools and the generated
// servers package that matches it. It is rebuilt whenever an upstream's
// tool list changes.
type toolIndex struct {
	genDir string // host directory holding servers -> vN/servers
	// builtins are codecell's own tools that code can call, searched with
	// the upstream tools; set once, before the first rebuild.
	builtins []catalog.Tool

	mu      sync.RWMutex // guards cat
	cat     *catalog.Catalog
	buildMu sync.Mutex // one rebuild at a time
}

func (ix *toolIndex) catalog() *catalog.Catalog {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cat
}

// rebuild indexes the upstreams' tools and publishes their generated
// package: the files go to a new content-named directory, then the "servers"
// symlink is swapped with a rename, so a sandbox importing at that moment
// sees the old package or the new one, never a mix.
//
// A server still starting, or failed, and without tools gets a stand-in
// package whose import waits for it (codegen.Generate), so code run a moment
// after codecell started does not fail for a server that is on its way.
func (ix *toolIndex) rebuild(up Upstreams) error {
	ix.buildMu.Lock()
	defer ix.buildMu.Unlock()
	// Read under buildMu: a rebuild that read earlier must not publish
	// after one that read later, or a server that just connected would
	// lose its tools again until the next change.
	tools := up.Tools()
	withTools := map[string]bool{}
	for _, t := range tools {
		withTools[t.Server] = true
	}
	var names, pending []string
	for _, st := range up.Statuses() {
		names = append(names, st.Name)
		if (st.State == upstream.Starting || st.State == upstream.Failed) && !withTools[st.Name] {
			pending = append(pending, st.Name)
		}
	}
	cat := catalog.New(append(slices.Clip(tools), ix.builtins...), names...)
	byServer := map[string][]catalog.Tool{}
	for _, t := range cat.Tools() {
		if t.Builtin {
			continue // the codecell package has them
		}
		byServer[t.Module] = append(byServer[t.Module], t)
	}
	standIns := map[string]string{}
	for _, name := range pending {
		if m, ok := cat.Module(name); ok {
			standIns[m] = name
		}
	}
	files, err := codegen.Generate(byServer, standIns)
	if err != nil {
		return fmt.Errorf("generate the servers package: %w", err)
	}
	if ix.genDir != "" {
		if err := publish(ix.genDir, files); err != nil {
			return err
		}
	}
	ix.mu.Lock()
	ix.cat = cat
	ix.mu.Unlock()
	return nil
}

// publish writes files under dir/v<hash>/ and points dir/servers at it.
func publish(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
		h.Write(files[n])
	}
	version := "v" + hex.EncodeToString(h.Sum(nil))[:16]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("publish the servers package: %w", err)
	}
	target := filepath.Join(dir, version)
	if _, err := os.Stat(target); err != nil {
		tmp, err := os.MkdirTemp(dir, ".build-")
		if err != nil {
			return fmt.Errorf("publish the servers package: %w", err)
		}
		defer os.RemoveAll(tmp)
		for _, n := range names {
			p := filepath.Join(tmp, filepath.FromSlash(path.Clean(n)))
			if !strings.HasPrefix(p, tmp+string(filepath.Separator)) {
				return fmt.Errorf("publish the servers package: bad path %q", n)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, files[n], 0o644); err != nil {
				return err
			}
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		if err := os.Rename(tmp, target); err != nil {
			return fmt.Errorf("publish the servers package: %w", err)
		}
	}
	link := filepath.Join(dir, ".servers-"+version)
	os.Remove(link)
	if err := os.Symlink(filepath.Join(version, "servers"), link); err != nil {
		return fmt.Errorf("publish the servers package: %w", err)
	}
	if err := os.Rename(link, filepath.Join(dir, "servers")); err != nil {
		return fmt.Errorf("publish the servers package: %w", err)
	}
	// Old versions: a sandbox importing right now may still read the
	// previous one, so keep it; drop the rest.
	entries, _ := os.ReadDir(dir)
	var old []os.DirEntry
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "v") && e.Name() != version {
			old = append(old, e)
		}
	}
	sort.Slice(old, func(i, j int) bool {
		a, _ := old[i].Info()
		b, _ := old[j].Info()
		return a.ModTime().After(b.ModTime())
	})
	for i, e := range old {
		if i >= 1 {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// policy decides which tools code may call: allow and deny are glob
// patterns (path.Match) on "server.tool", matched against the tool's
// original name and its Python name; deny wins.
type policy struct{ allow, deny []string }

// codecell's own tools (Builtin) are outside the allow list, which says
// which upstream tools code may use, but a deny pattern that names one
// (codecell.restore_pii) keeps code from calling it.
func (p policy) allows(t catalog.Tool) bool {
	names := []string{t.Server + "." + t.Name, t.QualifiedName()}
	match := func(patterns []string) bool {
		for _, pat := range patterns {
			for _, n := range names {
				if ok, _ := path.Match(pat, n); ok {
					return true
				}
			}
		}
		return false
	}
	return (t.Builtin || match(p.allow)) && !match(p.deny)
}
