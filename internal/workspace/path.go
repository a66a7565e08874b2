package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Limits on names, as Linux has them: a component of at most NAME_MAX bytes
// and a path of at most PATH_MAX.
const (
	maxName = 255
	maxPath = 4096
)

var (
	// ErrInvalidPath is a path that is not a usable workspace path: empty,
	// with a NUL byte or too long. Errors wrapping it say which.
	ErrInvalidPath = errors.New("invalid path")
	// ErrOutside is a path that leaves the workspace: absolute, with ".."
	// above the workspace, or through a symbolic link that points out of it
	// or is absolute.
	ErrOutside = errors.New("leaves the workspace")
	// ErrExist is a file that Create found already there.
	ErrExist = fs.ErrExist
	// ErrTooLarge is a file larger than a whole-file read takes.
	ErrTooLarge = errors.New("too large to read whole")
	// ErrNotExist is a path with nothing there.
	ErrNotExist = fs.ErrNotExist
)

// errViaLink is ErrOutside by way of a symbolic link: after Clean, that is
// the only way left.
var errViaLink = fmt.Errorf("%w: a symbolic link on the way points out of it, or is absolute", ErrOutside)

// Error is a failed workspace operation. Its message names the path relative
// to the workspace and never the host path, so it can go to the model as is.
type Error struct {
	Op   string // what was attempted: "write", "read", "list", ...
	Path string // relative to the workspace, as the caller gave it
	Err  error  // ErrInvalidPath, ErrOutside, *QuotaError, an errno, ...
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Op, e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// QuotaError is a write that would take the workspace past its quota or
// its cap on entries.
type QuotaError struct {
	Used       int64 // bytes the workspace takes before the write, less the file it replaces
	Quota      int64 // 0 means none
	Size       int64 // bytes the write needs (whole blocks); 0 when not known
	Entries    int64 // entries before the write
	MaxEntries int64 // 0 means none
}

func (e *QuotaError) Error() string {
	if e.MaxEntries > 0 && (e.Quota == 0 || e.Used+e.Size <= e.Quota) {
		return fmt.Sprintf("workspace entry cap reached: %d files, directories and links of %d; delete some to make room",
			e.Entries, e.MaxEntries)
	}
	if e.Size == 0 {
		return fmt.Sprintf("workspace quota exceeded: %d bytes used of %d; delete files to make room", e.Used, e.Quota)
	}
	return fmt.Sprintf("workspace quota exceeded: %d bytes used of %d, and this write needs %d more; delete files to make room",
		e.Used, e.Quota, e.Size)
}

// Clean checks a path given relative to the workspace and returns it in
// canonical form ("." for the workspace itself). It refuses "", NUL bytes,
// over-long names, absolute paths and ".." that climbs out, but it does not
// look at the file system: symbolic links are checked by each operation.
func Clean(name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("%w: the path is empty", ErrInvalidPath)
	case strings.IndexByte(name, 0) >= 0:
		return "", fmt.Errorf("%w: the path contains a NUL byte", ErrInvalidPath)
	case len(name) > maxPath:
		return "", fmt.Errorf("%w: the path is %d bytes; the limit is %d", ErrInvalidPath, len(name), maxPath)
	case filepath.IsAbs(name):
		return "", fmt.Errorf("%w: the path is absolute; give it relative to the workspace", ErrOutside)
	case !filepath.IsLocal(name):
		return "", fmt.Errorf("%w: .. climbs above the workspace", ErrOutside)
	}
	clean := filepath.Clean(name)
	for part := range strings.SplitSeq(clean, "/") {
		if len(part) > maxName {
			return "", fmt.Errorf("%w: the name %.20q... is %d bytes; the limit is %d", ErrInvalidPath, part, len(part), maxName)
		}
	}
	return clean, nil
}

// escapes is the error os.Root gives for a path that leaves it. The os
// package does not export it; it is taken from os.Root itself the first time
// it is needed (an absolute name fails before any system call).
var escapes = sync.OnceValue(func() error {
	r, err := os.OpenRoot("/")
	if err != nil {
		return nil
	}
	defer r.Close()
	_, err = r.Lstat("/")
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return nil
})

// fail wraps an error from os.Root or from a file opened through it. Errors
// from a file carry its host path, so only the cause is kept; os.Root's
// escape error becomes ErrOutside.
func fail(op, name string, err error) error {
	var we *Error
	if errors.As(err, &we) {
		return err
	}
	err = causeOf(err)
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	if esc := escapes(); esc != nil && errors.Is(err, esc) {
		err = errViaLink
	}
	return &Error{Op: op, Path: name, Err: err}
}
