package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"
)

// Bounds on walks: entries one List returns, and how many directories deep
// a walk goes (the sandbox's code can make a tree of any shape, or swap a
// directory for a link to its parent mid-walk). Writes go no deeper than a
// walk, so that Usage sees every file they make.
const (
	DefaultListLimit = 1000
	maxDepth         = 128
)

// maxVisit bounds the entries a List or Snapshot looks at. It is a
// variable so that a test can reach it without making 100,000 files.
var maxVisit = 100_000

// Listing is what List found.
type Listing struct {
	Entries []Entry
	// Truncated says that more entries matched than were returned, or that
	// the walk stopped after looking at maxVisit entries.
	Truncated bool
}

// List returns the entries beneath the directory dir ("" or "." for the
// whole workspace), recursively, depth first in name order, without
// following symbolic links. A non-empty pattern (path.Match syntax) keeps
// the entries whose path relative to the workspace, or whose base name,
// matches it: "*.csv" finds CSV files at any depth, "data/*.csv" only in
// data. At most limit entries are returned (DefaultListLimit when limit <= 0).
func (w *Workspace) List(dir, pattern string, limit int) (*Listing, error) {
	if dir == "" {
		dir = "."
	}
	clean, err := Clean(dir)
	if err != nil {
		return nil, &Error{Op: "list", Path: dir, Err: err}
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, &Error{Op: "list", Path: dir, Err: fmt.Errorf("pattern %q: %w", pattern, err)}
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	fi, err := w.root.Stat(clean)
	if err != nil {
		return nil, fail("list", dir, err)
	}
	if !fi.IsDir() {
		return nil, &Error{Op: "list", Path: dir, Err: errors.New("is not a directory")}
	}
	l := &Listing{Entries: []Entry{}}
	visited := 0
	err = w.walk(clean, func(rel string, fi fs.FileInfo) error {
		if visited++; visited > maxVisit {
			l.Truncated = true
			return fs.SkipAll
		}
		if pattern != "" {
			full, _ := path.Match(pattern, rel)
			base, _ := path.Match(pattern, path.Base(rel))
			if !full && !base {
				return nil
			}
		}
		if len(l.Entries) == limit {
			l.Truncated = true
			return fs.SkipAll
		}
		e := Entry{Path: rel, ModTime: fi.ModTime(), IsDir: fi.IsDir(), Symlink: fi.Mode()&fs.ModeSymlink != 0}
		if !e.IsDir {
			e.Size = fi.Size()
		}
		l.Entries = append(l.Entries, e)
		return nil
	})
	if err != nil {
		return nil, fail("list", dir, err)
	}
	return l, nil
}

// walk calls fn for each entry beneath the directory dir (a clean path),
// depth first in name order, with its path relative to the workspace (with
// forward slashes) and its Lstat information. Symbolic links are reported,
// not followed. fn may return fs.SkipDir for a directory, to not enter it,
// or fs.SkipAll to stop. Entries that vanish or cannot be read while the
// walk runs (the sandbox's code works in the same tree) are left out.
//
// Each directory is opened as an os.Root of its own, and its entries are
// looked at relative to it, so nothing outside the workspace is ever
// looked at, even when the code swaps a directory for a link mid-walk.
func (w *Workspace) walk(dir string, fn func(rel string, fi fs.FileInfo) error) error {
	r := w.root
	if dir != "." {
		sub, err := w.root.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer sub.Close()
		r = sub
	}
	prefix := ""
	if dir != "." {
		prefix = filepath.ToSlash(dir)
	}
	err := walkRoot(r, prefix, 0, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func walkRoot(r *os.Root, prefix string, depth int, fn func(string, fs.FileInfo) error) error {
	d, err := r.Open(".")
	if err != nil {
		return nil
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil && len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	for _, name := range names {
		fi, err := r.Lstat(name)
		if err != nil {
			continue
		}
		rel := name
		if prefix != "" {
			rel = prefix + "/" + name
		}
		switch err := fn(rel, fi); {
		case errors.Is(err, fs.SkipDir):
			continue
		case err != nil:
			return err
		}
		if !fi.IsDir() || depth >= maxDepth {
			continue
		}
		sub, err := r.OpenRoot(name)
		if err != nil {
			continue
		}
		err = walkRoot(sub, rel, depth+1, fn)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// inode is a file's inode number, to tell a replaced file from a touched one.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// Files returns up to n regular files of the whole workspace, skipping the
// first offset, in the order of List (depth first, name order); more says
// that files remain after them. It pages MCP's resources/list, whose cursor
// is the offset: a page is consistent with the tree as it was when read.
func (w *Workspace) Files(offset, n int) (files []Entry, more bool, err error) {
	seen, visited := 0, 0
	err = w.walk(".", func(rel string, fi fs.FileInfo) error {
		if visited++; visited > maxVisit {
			return fs.SkipAll
		}
		if !fi.Mode().IsRegular() || isTemp(path.Base(rel)) {
			return nil
		}
		if seen++; seen <= offset {
			return nil
		}
		if len(files) == n {
			more = true
			return fs.SkipAll
		}
		files = append(files, Entry{Path: rel, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, false, fail("list", ".", err)
	}
	return files, more, nil
}
