package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codecell/codecell/internal/mountinfo"
)

// Leftovers is what ReleaseLeftovers gave back.
type Leftovers struct {
	Unmounted []string // mount points, deepest first
	Detached  []string // loop devices
}

// ReleaseLeftovers unmounts the workspace images under dataDir that no live
// process uses, and detaches the loop devices bound to image files under
// it: what a codecell process killed with SIGKILL left behind (a process
// that exits unmounts its own; see Volumes.Close). It runs at start, before
// this process mounts anything.
//
// It touches only loop-mounted images whose image file lies under dataDir,
// and of those only the ones no process holds the users' flock on (every
// codecell process holds it on each image it uses, and the kernel drops it
// when the process dies, however it died), checked under the images
// directory's lock that mounting takes too; so a live process sharing the
// data dir keeps its mounts. It does not touch other mounts under dataDir
// (a volume the operator mounted, gVisor's network namespace), nor loop
// devices of files elsewhere.
func ReleaseLeftovers(dataDir string) (Leftovers, error) {
	var out Leftovers
	dataDir = filepath.Clean(dataDir)
	if real, err := filepath.EvalSymlinks(dataDir); err == nil {
		dataDir = real // mountinfo names real paths
	}
	f, err := os.Open(mountTable)
	if err != nil {
		return out, err
	}
	mounts, err := mountinfo.Parse(f)
	f.Close()
	if err != nil {
		return out, err
	}
	// Deepest first, and the topmost of several mounts at one point first
	// (mountinfo lists them in the order they were stacked).
	slices.Reverse(mounts)
	slices.SortStableFunc(mounts, func(a, b mountinfo.Mount) int {
		return strings.Count(b.Point, "/") - strings.Count(a.Point, "/")
	})
	var errs []error
	for _, m := range mounts {
		if !under(dataDir, m.Point) || m.FSType != "ext4" || !strings.HasPrefix(m.Source, "/dev/loop") {
			continue
		}
		file := loopBacking(m.Source)
		if !under(dataDir, file) {
			continue
		}
		done, err := releaseUnused(file, func() error {
			if err := unix.Unmount(m.Point, 0); err != nil {
				// Busy (a process of ours still in it): gone from the
				// tree now, and the filesystem once the last user leaves.
				return unix.Unmount(m.Point, unix.MNT_DETACH)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m.Point, err))
		} else if done {
			out.Unmounted = append(out.Unmounted, m.Point)
		}
	}
	// The devices: autoclear detaches an image's device at its last
	// unmount, but a device bound without it, or one a killed process had
	// bound and not mounted yet, stays.
	for _, name := range boundLoops() {
		dev := "/dev/" + name
		file := loopBacking(dev)
		if !under(dataDir, file) || mountedDevice(dev) {
			continue
		}
		done, err := releaseUnused(file, func() error {
			lf, err := os.OpenFile(dev, os.O_RDONLY, 0)
			if err != nil {
				return err
			}
			defer lf.Close()
			return unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0)
		})
		switch {
		case errors.Is(err, unix.ENXIO):
			// Detached meanwhile (autoclear).
		case err != nil:
			errs = append(errs, fmt.Errorf("detach %s: %w", dev, err))
		case done:
			out.Detached = append(out.Detached, dev)
		}
	}
	return out, errors.Join(errs...)
}

// releaseUnused runs release when no process uses the image file: under
// the lock of its directory (which mounting holds), and holding the users'
// flock exclusively, which fails while any process holds it shared. It
// says whether release ran.
func releaseUnused(file string, release func() error) (bool, error) {
	lock, err := lockDir(filepath.Dir(file))
	if errors.Is(err, fs.ErrNotExist) {
		// The images directory itself is gone (the data dir was removed
		// under its mounts): nothing can mount from it again, nor hold
		// its lock. Kept, such mounts would stay until reboot, and every
		// sandbox start reads the mount table they lengthen.
		return true, release()
	}
	if err != nil {
		return false, err
	}
	defer lock.Close()
	users, err := os.Open(strings.TrimSuffix(file, " (deleted)"))
	if err == nil {
		defer users.Close()
		if unix.Flock(int(users.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			return false, nil // a live process uses it
		}
	}
	// An image file that is gone has no users to ask: it was replaced
	// (a rebuild) or removed, and nothing can mount it again.
	return true, release()
}

// loopBacking is the file bound to a loop device (/dev/loopN), or "".
func loopBacking(dev string) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// mountedDevice says whether a device is mounted in this mount namespace.
func mountedDevice(dev string) bool {
	f, err := os.Open(mountTable)
	if err != nil {
		return true // unknown: leave it
	}
	defer f.Close()
	mounts, _ := mountinfo.Parse(f)
	return slices.ContainsFunc(mounts, func(m mountinfo.Mount) bool { return m.Source == dev })
}

// under says whether path lies strictly beneath dir.
func under(dir, path string) bool {
	return path != "" && strings.HasPrefix(path, dir+"/")
}

// mountTable is the mount table of the calling thread's mount namespace,
// codecell's: /proc/self would show the main thread's, which need not be
// in it (a thread of the sandbox package's own may be).
const mountTable = "/proc/thread-self/mountinfo"
