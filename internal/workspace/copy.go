package workspace

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// copyTree copies everything beneath the directory src into the directory
// dst, merging with what dst holds (a file of src replaces one of the same
// name): regular files with their holes, directories, symbolic links (as
// links, never followed), FIFOs and hard links, each with its owner, mode
// and times. Sockets are left out (they mean nothing without their
// process). Every entry is reached through descriptors, one component at a
// time, so a path longer than PATH_MAX copies like any other; extended
// attributes are not copied.
func copyTree(src, dst string) error {
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	c := &copier{links: map[[2]uint64]linkAt{}}
	defer func() {
		for _, l := range c.links {
			unix.Close(l.dirFD)
		}
	}()
	return c.dir(sfd, dfd, "")
}

// maxLinks bounds the hard-linked files a copy keeps linked (each holds a
// descriptor); past it their content is copied again.
const maxLinks = 1000

// copier copies one tree.
type copier struct {
	// links remembers the first copy of each file with several links
	// (by device and inode), to link the others to it.
	links map[[2]uint64]linkAt
}

// linkAt is a copied file: its directory, kept open, and its name.
type linkAt struct {
	dirFD int
	name  string
}

// dir copies the entries of the directory open at sfd into the one open at
// dfd; rel names it in errors.
func (c *copier) dir(sfd, dfd int, rel string) error {
	names, err := readNames(sfd)
	if err != nil {
		return fmt.Errorf("%s: %w", shown(rel), err)
	}
	for _, name := range names {
		if err := c.entry(sfd, dfd, name, rel+"/"+name); err != nil {
			return err
		}
	}
	return nil
}

func shown(rel string) string {
	if rel == "" {
		return "."
	}
	return rel[1:]
}

func (c *copier) entry(sfd, dfd int, name, rel string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("%s: %w", shown(rel), err)
	}
	times := []unix.Timespec{st.Atim, st.Mtim}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%s: %w", shown(rel), err)
		}
		s, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", shown(rel), err)
		}
		defer unix.Close(s)
		d, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", shown(rel), err)
		}
		defer unix.Close(d)
		if err := c.dir(s, d, rel); err != nil {
			return err
		}
		return finish(d, &st, times, rel) // after its entries, which change its times
	case unix.S_IFLNK:
		target := make([]byte, st.Size+1)
		n, err := unix.Readlinkat(sfd, name, target)
		if err != nil {
			return fmt.Errorf("%s: %w", shown(rel), err)
		}
		removeAt(dfd, name)
		if err := unix.Symlinkat(string(target[:n]), dfd, name); err != nil {
			return fmt.Errorf("%s: %w", shown(rel), err)
		}
		unix.Fchownat(dfd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
		unix.UtimesNanoAt(dfd, name, times, unix.AT_SYMLINK_NOFOLLOW)
		return nil
	case unix.S_IFIFO:
		removeAt(dfd, name)
		if err := unix.Mkfifoat(dfd, name, st.Mode&0o7777); err != nil {
			return fmt.Errorf("%s: %w", shown(rel), err)
		}
		unix.Fchownat(dfd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
		unix.Fchmodat(dfd, name, st.Mode&0o7777, 0)
		unix.UtimesNanoAt(dfd, name, times, unix.AT_SYMLINK_NOFOLLOW)
		return nil
	case unix.S_IFREG:
		return c.file(sfd, dfd, name, rel, &st, times)
	}
	return nil // a socket or a device: nothing to carry over
}

// removeAt removes what dst has at name, unless it is a directory.
func removeAt(dfd int, name string) {
	unix.Unlinkat(dfd, name, 0)
}

func (c *copier) file(sfd, dfd int, name, rel string, st *unix.Stat_t, times []unix.Timespec) error {
	key := [2]uint64{st.Dev, st.Ino}
	if st.Nlink > 1 {
		if first, ok := c.links[key]; ok {
			removeAt(dfd, name)
			if err := unix.Linkat(first.dirFD, first.name, dfd, name, 0); err == nil {
				return nil
			}
			// A link across directories the copy has closed, or refused:
			// copy the content again instead.
		}
	}
	s, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", shown(rel), err)
	}
	defer unix.Close(s)
	removeAt(dfd, name)
	d, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", shown(rel), err)
	}
	defer unix.Close(d)
	if err := copyData(s, d, st.Size); err != nil {
		return fmt.Errorf("%s: %w", shown(rel), err)
	}
	if err := finish(d, st, times, rel); err != nil {
		return err
	}
	if st.Nlink > 1 && len(c.links) < maxLinks {
		if dup, err := unix.Dup(dfd); err == nil {
			// Kept open for the copy's life: a few per hard-linked file.
			c.links[key] = linkAt{dirFD: dup, name: name}
		}
	}
	return nil
}

// finish gives a copied file or directory its owner, mode and times.
func finish(fd int, st *unix.Stat_t, times []unix.Timespec, rel string) error {
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("%s: %w", shown(rel), err)
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return fmt.Errorf("%s: %w", shown(rel), err)
	}
	if err := unix.UtimesNanoAt(fd, "", times, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("%s: %w", shown(rel), err)
	}
	return nil
}

// copyData copies size bytes from s to d, leaving the holes of s holes.
func copyData(s, d int, size int64) error {
	buf := make([]byte, 1<<20)
	var off int64
	for off < size {
		data, err := unix.Seek(s, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			data = off // no SEEK_DATA: copy everything
		}
		hole, err := unix.Seek(s, data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		for pos := data; pos < hole; {
			n, err := unix.Pread(s, buf[:min(int64(len(buf)), hole-pos)], pos)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			if _, err := unix.Pwrite(d, buf[:n], pos); err != nil {
				return err
			}
			pos += int64(n)
		}
		off = hole
	}
	return unix.Ftruncate(d, size)
}
