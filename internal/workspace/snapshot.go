package workspace

import (
	"io/fs"
	"os"
	"path"
	"syscall"
)

// Snapshot records the regular files of a workspace at one moment, by size,
// modification time and inode, and what all its entries take: what a run in
// a workspace that is not watched compares to tell which files an
// execution created, changed or deleted, without reading them.
type Snapshot struct {
	files map[string]fileState
	// holes is where each sparse file had holes (see sparse.go): what
	// undoes a run's stores into them through a memory mapping.
	holes map[string]*holeMap
	// alloc and entries are the bytes allocated to every entry and their
	// number, the root not counted.
	alloc, entries int64
	// Truncated says that the workspace held more than maxVisit entries
	// and the rest were not recorded: changes among them go unseen.
	Truncated bool
}

type fileState struct {
	size, alloc, mtime int64
	ino                uint64
}

// Snapshot walks the workspace (no file is opened, one stat per entry) and
// records its regular files. Write's temporary files are left out. A
// workspace that cannot be walked gives an empty snapshot.
func (w *Workspace) Snapshot() Snapshot {
	s := Snapshot{files: map[string]fileState{}, holes: map[string]*holeMap{}}
	visited := 0
	w.walk(".", func(rel string, fi fs.FileInfo) error {
		if visited++; visited > maxVisit {
			s.Truncated = true
			return fs.SkipAll
		}
		alloc := allocated(fi)
		s.alloc += alloc
		s.entries++
		if fi.Mode().IsRegular() && !isTemp(path.Base(rel)) {
			s.files[rel] = fileState{size: fi.Size(), alloc: alloc, mtime: fi.ModTime().UnixNano(), ino: inode(fi)}
			if sparse(kindFile, fi.Size(), alloc) {
				s.holes[rel] = w.holesOf(rel, inode(fi), fi.Size())
			}
		}
		return nil
	})
	return s
}

// allocated is the disk space an entry takes, as st_blocks counts it.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// Size returns the recorded size of a file in the snapshot, if it is there.
func (s Snapshot) Size(p string) (int64, bool) {
	st, ok := s.files[p]
	return st.size, ok
}

// holesOf lists the holes of the sparse file at rel, whose inode must be
// ino; unknown from offset 0 when it cannot be read.
func (w *Workspace) holesOf(rel string, ino uint64, size int64) *holeMap {
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return &holeMap{cut: 0}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || inode(fi) != ino {
		return &holeMap{cut: 0}
	}
	return holesOf(int(f.Fd()), size)
}
