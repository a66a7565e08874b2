package workspace

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Sparse files: the one way a plain directory's allocation grows without an
// inotify event. A file whose size passes its allocation (ftruncate past
// its end, a seek past it and a write) has holes; stores through a shared
// memory mapping fill them, allocating blocks, and no event says so (the
// kernel reports writes through write(2), not page faults). The growth is
// bounded by the file's size, since a store past the end of the file faults
// instead of extending it, so only files whose allocation is below their
// size need looking at again: the index keeps them (tree.sparse), restats
// them at the start and end of every run and whenever the usage is asked
// for, and remembers where their holes were, so that what a run filled can
// be punched out again (FALLOC_FL_PUNCH_HOLE) when it took the workspace
// past its quota: the file reads as it did before the run for every range
// the run filled, and keeps what it held elsewhere.
//
// What it does not see: a file whose allocation is at or above its size
// although it has a hole (metadata blocks counted in st_blocks can cover a
// hole of a block or two); at most those few blocks go unseen per file.

// maxHoles is how many holes of one file are remembered. A file with more
// (holes and data interleaved block by block) is remembered up to the
// offset where the count ran out; past it, undoing its growth empties the
// file, data it held before included.
const maxHoles = 256

// hole is a range of a file with no blocks: [off, end).
type hole struct{ off, end int64 }

// holeMap is where a file had holes when it was last looked at.
type holeMap struct {
	holes []hole
	// cut is the offset past which holes were not listed (maxHoles ran
	// out, or the file could not be read); -1 when the list is whole.
	cut int64
}

// sparse says whether an entry of this size and allocation has holes that
// stores through a mapping could fill.
func sparse(k kind, size, alloc int64) bool {
	return k == kindFile && alloc < size
}

// holesAt lists the holes of the file name in directory dfd, whose inode
// must be ino. It opens it read-only without following a link, and without
// blocking on a FIFO swapped in; a file that cannot be opened is listed as
// unknown from offset 0.
func holesAt(dfd int, name string, ino uint64, size int64) *holeMap {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &holeMap{cut: 0}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Ino != ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &holeMap{cut: 0}
	}
	return holesOf(fd, size)
}

// holesOf lists the holes of the file open at fd, up to size.
func holesOf(fd int, size int64) *holeMap {
	m := &holeMap{cut: -1}
	for off := int64(0); off < size; {
		h, err := unix.Seek(fd, off, unix.SEEK_HOLE)
		if err != nil {
			if !errors.Is(err, unix.ENXIO) { // ENXIO: past the end, which moved
				m.cut = off
			}
			break
		}
		if h >= size {
			break
		}
		if len(m.holes) == maxHoles {
			m.cut = h
			break
		}
		d, err := unix.Seek(fd, h, unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO): // a hole to the end
			d = size
		case err != nil:
			m.cut = h
			return m
		}
		m.holes = append(m.holes, hole{h, min(d, size)})
		off = d
	}
	return m
}

// unfill punches out of f the holes it had (m), up to size: what was
// stored into them since reads as zeros again and takes no space. Past
// m.cut, where the holes were not known, the whole rest is punched. A
// filesystem that cannot punch holes has the file cut to nothing and
// extended back: its size stays, its content is lost.
func unfill(f *os.File, m *holeMap, size int64) error {
	punch := func(off, end int64) error {
		end = min(end, size)
		if end <= off {
			return nil
		}
		return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, end-off)
	}
	var err error
	for _, h := range m.holes {
		if err = punch(h.off, h.end); err != nil {
			break
		}
	}
	if err == nil && m.cut >= 0 {
		err = punch(m.cut, size)
	}
	if errors.Is(err, unix.EOPNOTSUPP) {
		if err = f.Truncate(0); err == nil {
			err = f.Truncate(size)
		}
	}
	return err
}
