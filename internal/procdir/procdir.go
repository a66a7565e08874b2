package procdir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// lockName is the lock file inside each directory.
const lockName = "lock"

// newPrefix starts the name of a directory being made: it gets its final
// name only once its lock is held, so a sweep never mistakes it for a dead
// process's.
const newPrefix = ".new-"

// abandonedAfter is how old a directory still being made must be before a
// sweep takes it for abandoned (its maker died in the instant between
// making it and naming it).
const abandonedAfter = 10 * time.Minute

// Dir is a directory held by this process. It is safe for concurrent use.
type Dir struct {
	path string
	lock *os.File // holds the flock; closing it releases the directory
}

// Claim makes a directory of this process's own under parent (created if
// missing, mode 0755 so that a sandbox user can reach what is mounted from
// it) and holds it until Release or the end of the process. It first removes
// the directories of processes that are gone.
func Claim(parent string) (*Dir, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("process directory: %w", err)
	}
	Sweep(parent)
	var err error
	for range 5 {
		var d *Dir
		if d, err = claim(parent); err == nil {
			return d, nil
		}
	}
	return nil, fmt.Errorf("process directory under %s: %w", parent, err)
}

// claim makes one attempt: a directory with a new name, its lock taken, then
// renamed to its final name. A sweep that raced it makes it fail; Claim then
// tries again.
func claim(parent string) (*Dir, error) {
	tmp, err := os.MkdirTemp(parent, newPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(tmp, lockName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	path := filepath.Join(parent, fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(rnd[:])))
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.RemoveAll(tmp)
		return nil, err
	}
	// The lock file under the final name must be the one we hold: if a
	// sweep removed ours in between, this directory is not protected.
	held, err1 := f.Stat()
	named, err2 := os.Stat(filepath.Join(path, lockName))
	if err := errors.Join(err1, err2); err != nil || !os.SameFile(held, named) {
		f.Close()
		os.RemoveAll(path)
		return nil, fmt.Errorf("the lock of %s was replaced while it was made (%v)", path, err)
	}
	return &Dir{path: path, lock: f}, nil
}

// Path returns the directory.
func (d *Dir) Path() string { return d.path }

// Release removes the directory and lets it go. Whatever the process still
// has in it (a mount of a sandbox) must be done with first. Calling it again
// does nothing.
func (d *Dir) Release() error {
	if d == nil || d.lock == nil {
		return nil
	}
	// Removed while still held, so that no sweep takes it for abandoned
	// half-way.
	err := os.RemoveAll(d.path)
	d.lock.Close()
	d.lock = nil
	return err
}

// Sweep removes the directories under parent whose process is gone, and
// reports how many it removed. It leaves alone those whose lock is held and
// those still being made; it never fails, as what it cannot remove now a
// later sweep will.
func Sweep(parent string) int {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(parent, e.Name())
		if strings.HasPrefix(e.Name(), newPrefix) {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > abandonedAfter {
				os.RemoveAll(path)
				removed++
			}
			continue
		}
		if removeIfAbandoned(path) {
			removed++
		}
	}
	return removed
}

// removeIfAbandoned removes a directory whose lock nobody holds. One without
// a lock file was never a live process's (Claim names a directory only with
// its lock held in it), or is being removed by another sweep.
func removeIfAbandoned(path string) bool {
	f, err := os.Open(filepath.Join(path, lockName))
	if errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(path) == nil
	}
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false // held: its process is alive
	}
	// Removed while we hold its lock, so nothing else takes it meanwhile.
	return os.RemoveAll(path) == nil
}
