package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure a Workspace. The zero value is files owned by the user
// codecell runs as. A Workspace opened with Open has no quota; one opened
// with Volume.Open has its Volume's.
type Options struct {
	// Owner is the uid and gid given to the files and directories the
	// workspace creates, so that the sandbox's user can change them; 0
	// leaves them to the user codecell runs as. A root-run codecell sets
	// 65534, the user its sandboxes run as.
	Owner int
}

// Workspace is a namespace's workspace, open. Its methods are safe for
// concurrent use. Writers to one directory in one process are serialized, so
// that a quota check and the write it admits happen together.
type Workspace struct {
	root *os.Root
	opts Options
	dir  *dirState // shared by every Workspace open on the same directory
	vol  *Volume   // the quota's; nil for none
}

// Entry describes a file or directory of the workspace.
type Entry struct {
	Path    string    // relative to the workspace, with forward slashes
	Size    int64     // bytes; 0 for a directory
	ModTime time.Time // last modification
	IsDir   bool
	Symlink bool // a symbolic link (never followed by List)
}

// dirState is what the Workspaces open on one directory in this process
// share.
type dirState struct {
	mu    sync.Mutex // serializes writers, so a quota check and its write go together
	swept sync.Once  // removeStale ran
}

// dirs maps a workspace's host directory to its *dirState: one entry per
// workspace this process has opened, as there are few.
var dirs sync.Map

// Open opens the workspace at dir (an absolute host path), creating it, as
// the sandbox manager would, when it is missing: private (mode 0700) and
// owned by opts.Owner, under parents that others may search but not list.
// The caller closes it.
func Open(dir string, opts Options) (*Workspace, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("workspace directory %q is not absolute", dir)
	}
	dir = filepath.Clean(dir)
	// The directory is nearly always there (every execution opens it
	// twice), so it is created when opening it finds it missing rather than
	// looked for first: a stat and a mkdir less per open.
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createDir(dir, opts.Owner); err != nil {
			return nil, fmt.Errorf("create the workspace: %w", causeOf(err))
		}
		root, err = os.OpenRoot(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open the workspace: %w", causeOf(err))
	}
	st, _ := dirs.LoadOrStore(dir, new(dirState))
	w := &Workspace{root: root, opts: opts, dir: st.(*dirState)}
	// The first time this process opens a workspace, the writes a killed
	// codecell left unfinished go, before this process writes there, so no
	// half-written file stays visible.
	w.dir.swept.Do(w.removeStale)
	return w, nil
}

// createDir makes the workspace directory dir and its missing parents.
func createDir(dir string, owner int) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return err
	}
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return nil // made meanwhile by another opener, or by the sandbox manager
	}
	if err != nil || owner == 0 {
		return err
	}
	return os.Lchown(dir, owner, owner)
}

// causeOf drops the host path from an error of the os package.
func causeOf(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Close releases the workspace's directory.
func (w *Workspace) Close() error { return w.root.Close() }

// Write replaces the content of the file name, or creates it with its
// parent directories. The file is replaced atomically, keeping its
// permissions; a symbolic link in its place is refused, not followed.
func (w *Workspace) Write(name string, data []byte) (Entry, error) {
	return w.put(modeWrite, name, int64(len(data)), func(f, _ *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// Create is Write for a file that must not exist yet: it fails with an
// error wrapping ErrExist when something is there, even if it appears
// while the file is written.
func (w *Workspace) Create(name string, data []byte) (Entry, error) {
	return w.put(modeCreate, name, int64(len(data)), func(f, _ *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// Append adds data at the end of the existing file name, atomically: the old
// content and data are written to a new file that replaces the old one. With
// newline, a non-empty file that does not end in a newline gets one first.
func (w *Workspace) Append(name string, data []byte, newline bool) (Entry, error) {
	grow := int64(len(data))
	if newline {
		grow++
	}
	return w.put(modeAppend, name, grow, func(f, old *os.File) error {
		n, err := io.Copy(f, old)
		if err != nil {
			return err
		}
		if newline && n > 0 {
			last := make([]byte, 1)
			if _, err := old.ReadAt(last, n-1); err != nil {
				return err
			}
			if last[0] != '\n' {
				if _, err := f.Write([]byte{'\n'}); err != nil {
					return err
				}
			}
		}
		_, err = f.Write(data)
		return err
	})
}

// putMode is how put treats the file it writes.
type putMode int

const (
	modeWrite  putMode = iota // replace it or create it
	modeCreate                // create it; it must not exist
	modeAppend                // extend it; it must exist
)

var opNames = [...]string{modeWrite: "write", modeCreate: "create", modeAppend: "append"}

// put writes a file atomically: fill writes the new content into a
// temporary file beside the target (given the old file open for reading in
// modeAppend), which then takes the target's place. grow is at most how many
// bytes the write adds beyond the old content (all of the new content in
// modeWrite, where the old content goes).
func (w *Workspace) put(mode putMode, name string, grow int64, fill func(tmp, old *os.File) error) (Entry, error) {
	op := opNames[mode]
	clean, err := Clean(name)
	if err != nil {
		return Entry{}, &Error{Op: op, Path: name, Err: err}
	}
	if clean == "." {
		return Entry{}, &Error{Op: op, Path: name, Err: errors.New("is the workspace itself; name a file in it")}
	}
	// Walks descend maxDepth directories, so a file deeper would escape
	// Usage, and with it the quota, as well as List and Snapshot.
	if depth := strings.Count(clean, "/"); depth > maxDepth {
		return Entry{}, &Error{Op: op, Path: name, Err: fmt.Errorf("%w: the path is %d directories deep; the limit is %d", ErrInvalidPath, depth, maxDepth)}
	}
	w.dir.mu.Lock()
	defer w.dir.mu.Unlock()

	var old *os.File
	perm := fs.FileMode(0o644)
	var oldSize int64
	fi, err := w.root.Lstat(clean)
	switch {
	case err == nil && mode == modeCreate:
		return Entry{}, &Error{Op: op, Path: name, Err: ErrExist}
	case err == nil:
		if err := w.checkTarget(clean, fi); err != nil {
			return Entry{}, &Error{Op: op, Path: name, Err: err}
		}
		perm, oldSize = fi.Mode().Perm(), fi.Size()
		if mode == modeAppend {
			if old, fi, err = w.openRegular(clean); err != nil {
				return Entry{}, fail(op, name, err)
			}
			defer old.Close()
			oldSize = fi.Size()
		}
	case errors.Is(err, fs.ErrNotExist) && mode == modeAppend:
		return Entry{}, &Error{Op: op, Path: name, Err: ErrNotExist}
	case !errors.Is(err, fs.ErrNotExist):
		return Entry{}, fail(op, name, err)
	}
	newSize := grow
	if mode == modeAppend {
		newSize += oldSize
	}
	if err := w.checkQuota(clean, fi, newSize); err != nil {
		return Entry{}, &Error{Op: op, Path: name, Err: err}
	}
	dir := filepath.Dir(clean)
	if err := w.mkdirAll(dir); err != nil {
		return Entry{}, fail(op, name, err)
	}
	tmp, fi, err := w.writeTemp(dir, perm, func(f *os.File) error { return fill(f, old) })
	if err != nil {
		return Entry{}, w.failFull(op, name, err)
	}
	if mode == modeCreate {
		// A link never replaces anything: whatever appeared meanwhile stays.
		err = w.root.Link(tmp, clean)
		w.root.Remove(tmp)
	} else {
		err = w.root.Rename(tmp, clean)
	}
	if err != nil {
		w.root.Remove(tmp)
		return Entry{}, fail(op, name, err)
	}
	if err := w.syncDir(dir); err != nil {
		return Entry{}, fail(op, name, err)
	}
	if w.vol != nil {
		w.vol.settle() // the next check counts this write
	}
	return Entry{Path: filepath.ToSlash(clean), Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// blockSize is the unit files are allocated in, for estimating what a
// write will take before it is made.
const blockSize = 4096

// allocFor is the disk space a file of size bytes takes, in whole blocks.
func allocFor(size int64) int64 {
	return (size + blockSize - 1) / blockSize * blockSize
}

// checkQuota refuses a write that would take the workspace past its
// Volume's limits: newSize is the file's size after it, old what is there
// now (nil for nothing), which the write replaces.
func (w *Workspace) checkQuota(clean string, old fs.FileInfo, newSize int64) error {
	if w.vol == nil {
		return nil
	}
	u, err := w.vol.Usage()
	if err != nil {
		return err
	}
	used, entries := u.Bytes, u.Entries
	if old != nil {
		if st, ok := old.Sys().(*syscall.Stat_t); ok {
			used -= st.Blocks * 512 // replaced, not added to
		}
	} else {
		entries++
		for d := filepath.Dir(clean); d != "."; d = filepath.Dir(d) {
			if _, err := w.root.Lstat(d); err == nil {
				break
			}
			entries++ // a directory the write creates
		}
	}
	need := allocFor(newSize)
	if (u.Quota > 0 && used+need > u.Quota) || (u.MaxEntries > 0 && entries > u.MaxEntries) {
		return &QuotaError{Used: used, Quota: u.Quota, Size: need, Entries: u.Entries, MaxEntries: u.MaxEntries}
	}
	return nil
}

// failFull is fail for a write that may have run out of room: in a
// workspace whose quota the kernel enforces, ENOSPC is the quota.
func (w *Workspace) failFull(op, name string, err error) error {
	if w.vol != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		u, _ := w.vol.Usage()
		return &Error{Op: op, Path: name, Err: &QuotaError{Used: u.Bytes, Quota: u.Quota, Entries: u.Entries, MaxEntries: u.MaxEntries}}
	}
	return fail(op, name, err)
}

// checkTarget refuses to write over what is not a regular file.
func (w *Workspace) checkTarget(clean string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, err := w.root.Stat(clean); err != nil {
			if esc := escapes(); esc != nil && errors.Is(err, esc) {
				return errViaLink
			}
		}
		return errors.New("is a symbolic link; write to the file it points to")
	case fi.IsDir():
		return errors.New("is a directory")
	case !fi.Mode().IsRegular():
		return errors.New("is not a regular file")
	}
	return nil
}

// mkdirAll creates dir and its missing parents, owned by the sandbox's user.
func (w *Workspace) mkdirAll(dir string) error {
	if dir == "." {
		return nil
	}
	p := ""
	for part := range strings.SplitSeq(dir, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		err := w.root.Mkdir(p, 0o755)
		switch {
		case err == nil:
			if w.opts.Owner != 0 {
				if err := w.root.Lchown(p, w.opts.Owner, w.opts.Owner); err != nil {
					return err
				}
			}
		case errors.Is(err, fs.ErrExist):
		default:
			return err
		}
	}
	return nil
}

// tempPrefix and tempSuffix frame the names of temporary files, which are
// fixed in length so that the target's name can use all of NAME_MAX.
const (
	tempPrefix = ".codecell-"
	tempSuffix = ".tmp"
)

// isTemp says whether a base name is one of Write's temporary files.
func isTemp(base string) bool {
	return strings.HasPrefix(base, tempPrefix) && strings.HasSuffix(base, tempSuffix)
}

// writeTemp creates a new file in dir with O_EXCL, lets fill write it,
// syncs it and returns its name and final state. On failure nothing is left.
func (w *Workspace) writeTemp(dir string, perm fs.FileMode, fill func(*os.File) error) (string, fs.FileInfo, error) {
	var name string
	var f *os.File
	for range 10 {
		var rnd [8]byte
		rand.Read(rnd[:])
		name = filepath.Join(dir, tempPrefix+hex.EncodeToString(rnd[:])+tempSuffix)
		var err error
		f, err = w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, err
		}
	}
	if f == nil {
		return "", nil, errors.New("no unused temporary name")
	}
	fi, err := writeAndSync(f, w.opts.Owner, perm, fill)
	if err != nil {
		w.root.Remove(name)
		return "", nil, err
	}
	return name, fi, nil
}

func writeAndSync(f *os.File, owner int, perm fs.FileMode, fill func(*os.File) error) (fs.FileInfo, error) {
	defer f.Close()
	if owner != 0 {
		if err := f.Chown(owner, owner); err != nil {
			return nil, err
		}
	}
	if err := f.Chmod(perm); err != nil {
		return nil, err
	}
	if err := fill(f); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return fi, f.Close()
}

// syncDir makes a rename in dir durable.
func (w *Workspace) syncDir(dir string) error {
	d, err := w.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// openRegular opens a regular file for reading. O_NONBLOCK keeps a FIFO the
// sandbox's code put in the file's place from blocking the open.
func (w *Workspace) openRegular(clean string) (*os.File, fs.FileInfo, error) {
	f, err := w.root.OpenFile(clean, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, nil, errors.New("is a directory")
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, nil, errors.New("is not a regular file")
	}
	return f, fi, nil
}

// ReadFile returns the whole content of the regular file name, which may
// be at most max bytes.
func (w *Workspace) ReadFile(name string, max int64) ([]byte, error) {
	clean, err := Clean(name)
	if err != nil {
		return nil, &Error{Op: "read", Path: name, Err: err}
	}
	f, fi, err := w.openRegular(clean)
	if err != nil {
		return nil, fail("read", name, err)
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, &Error{Op: "read", Path: name, Err: fmt.Errorf("%w: it is %d bytes; the limit is %d", ErrTooLarge, fi.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fail("read", name, err)
	}
	if int64(len(data)) > max {
		return nil, &Error{Op: "read", Path: name, Err: fmt.Errorf("grew past the limit of %d bytes while read", max)}
	}
	return data, nil
}

// Delete removes the file, symbolic link (never its target) or empty
// directory name; with recursive, a directory goes with everything in it.
// The workspace itself cannot be deleted.
func (w *Workspace) Delete(name string, recursive bool) error {
	clean, err := Clean(name)
	if err != nil {
		return &Error{Op: "delete", Path: name, Err: err}
	}
	if clean == "." {
		return &Error{Op: "delete", Path: name, Err: errors.New("is the workspace itself; name something in it")}
	}
	w.dir.mu.Lock()
	defer w.dir.mu.Unlock()
	fi, err := w.root.Lstat(clean)
	if err != nil {
		return fail("delete", name, err)
	}
	if fi.IsDir() && recursive {
		err = w.root.RemoveAll(clean)
	} else {
		err = w.root.Remove(clean)
		if fi.IsDir() && errors.Is(err, syscall.ENOTEMPTY) {
			err = errors.New("is a directory that is not empty; delete it recursively")
		}
	}
	if err != nil {
		return fail("delete", name, err)
	}
	if w.vol != nil {
		defer w.vol.settle() // the next quota check counts the room made
	}
	return w.syncDir(filepath.Dir(clean))
}

// removeStale removes the temporary files of writes that never finished:
// a codecell killed between creating one and renaming it into place leaves
// it behind. Writes go no deeper than the walk, so it finds them all.
func (w *Workspace) removeStale() {
	w.dir.mu.Lock()
	defer w.dir.mu.Unlock()
	var stale []string
	w.walk(".", func(rel string, fi fs.FileInfo) error {
		if fi.Mode().IsRegular() && isTemp(path.Base(rel)) {
			stale = append(stale, rel)
		}
		return nil
	})
	for _, p := range stale {
		w.root.Remove(p)
	}
}
