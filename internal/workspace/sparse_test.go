package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// The red-team case of issue #28 (item 11), at the scale of its report: an
// 8 MiB quota, and 36 MiB stored through a shared mapping into a sparse
// file, which no inotify event reports.
const (
	mapQuota = 8 << 20
	mapSize  = 36 << 20
)

// volumeModes are the two ways a plain directory is kept: watched by
// inotify, and walked around each run where inotify is unavailable.
var volumeModes = []struct {
	name    string
	watched bool
}{{"watched", true}, {"walked", false}}

func newModeVolume(t *testing.T, watched bool, opts VolumeOptions) *Volume {
	t.Helper()
	if watched {
		_, v := newVolume(t, opts)
		return v
	}
	vs, err := NewVolumes(opts)
	must(t, err)
	vs.w.close()
	vs.w, vs.werr = nil, errors.New("no inotify in this test")
	t.Cleanup(func() { vs.Close() })
	v, err := vs.Volume(filepath.Join(t.TempDir(), "ws"))
	must(t, err)
	return v
}

// sparseFile makes a file of mapSize bytes that holds "head" at offset 0
// and "mid" at 20 MiB, holes elsewhere, and maps it shared, as the code in
// a session would; the descriptor is closed, so nothing more is reported
// for it. The mapping lives until the test ends.
func sparseFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o644)
	must(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("head"), 0)
	must(t, err)
	_, err = f.WriteAt([]byte("mid"), 20<<20)
	must(t, err)
	must(t, f.Truncate(mapSize))
	m, err := unix.Mmap(int(f.Fd()), 0, mapSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	must(t, err)
	t.Cleanup(func() { unix.Munmap(m) })
	return m
}

// storeAll stores into every page of the mapping but the two that hold data:
// every hole is filled, and the allocation grows by about mapSize.
func storeAll(m []byte) {
	for off := 4096; off < len(m); off += 4096 {
		if off != 20<<20 {
			m[off] = 'z'
		}
	}
}

// checkUndone checks that the sparse file is back to what it was before the
// stores: its size, its data, and no more allocation than a few blocks.
func checkUndone(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, name)
	var st unix.Stat_t
	must(t, unix.Stat(p, &st))
	if st.Size != mapSize || st.Blocks*512 > 64<<10 {
		t.Errorf("%s: size %d, %d bytes allocated; want %d bytes, holes punched back", name, st.Size, st.Blocks*512, mapSize)
	}
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	for _, c := range []struct {
		off  int64
		want string
	}{{0, "head"}, {20 << 20, "mid"}, {4096, "\x00"}, {mapSize - 4096, "\x00"}} {
		got := make([]byte, len(c.want))
		if _, err := f.ReadAt(got, c.off); err != nil || string(got) != c.want {
			t.Errorf("%s at %d: %q %v, want %q", name, c.off, got, err, c.want)
		}
	}
}

// TestMappedStoresBreach: a run that stores through a shared mapping into
// a sparse file it did not create, past the quota, is the run found past
// it (though no event was reported): its stores are punched out again, the
// file keeps its size and what it held before, the usage matches the disk,
// and the next run is not stopped.
func TestMappedStoresBreach(t *testing.T) {
	for _, mode := range volumeModes {
		t.Run(mode.name, func(t *testing.T) {
			v := newModeVolume(t, mode.watched, VolumeOptions{Quota: mapQuota})
			write(t, v.Dir(), "kept", 1<<20)
			r := v.Begin()
			m := sparseFile(t, v.Dir(), "sparse")
			if rep := r.End(); rep.Breach != nil {
				t.Fatalf("making the sparse file: %+v", rep.Breach)
			}
			r = v.Begin()
			storeAll(m)
			rep := r.End()
			if rep.Breach == nil {
				alloc, _ := walkUsage(t, v.Dir())
				u, _ := v.Usage()
				t.Fatalf("no breach: the workspace holds %d bytes on disk, its usage says %+v", alloc, u)
			}
			if !slices.Equal(rep.Breach.Truncated, []string{"sparse"}) || len(rep.Breach.Removed) != 0 {
				t.Errorf("undone: truncated %q, removed %q", rep.Breach.Truncated, rep.Breach.Removed)
			}
			if rep.Breach.Reached.Bytes <= mapQuota || rep.Breach.Usage.Over() {
				t.Errorf("reached %+v, after %+v", rep.Breach.Reached, rep.Breach.Usage)
			}
			checkUndone(t, v.Dir(), "sparse")
			if alloc, _ := walkUsage(t, v.Dir()); alloc > mapQuota {
				t.Errorf("%d bytes on disk after the breach", alloc)
			}
			if mode.watched {
				checkUsage(t, v)
			}
			r = v.Begin()
			write(t, v.Dir(), "next", 4096)
			if rep := r.End(); rep.Breach != nil || rep.Undone != nil {
				t.Errorf("the next run: %+v", rep)
			}
		})
	}
}

// TestStoresBetweenRuns: stores through a mapping that a live session keeps
// between its executions are undone when the next run begins, so that run,
// innocent, is not stopped for them; a workspace under its quota after
// such stores keeps them.
func TestStoresBetweenRuns(t *testing.T) {
	for _, mode := range volumeModes {
		t.Run(mode.name, func(t *testing.T) {
			v := newModeVolume(t, mode.watched, VolumeOptions{Quota: mapQuota})
			r := v.Begin()
			m := sparseFile(t, v.Dir(), "sparse")
			small := sparseFile(t, v.Dir(), "small")
			r.End()
			small[8192] = 's' // a page's growth, under the quota: kept

			r = v.Begin()
			if rep := r.End(); rep.Breach != nil || rep.Undone != nil {
				t.Fatalf("a run under the quota: %+v", rep)
			}
			storeAll(m) // no run is open
			r = v.Begin()
			u, err := v.Usage()
			must(t, err)
			if u.Over() {
				t.Errorf("the run begins over the quota: %+v", u)
			}
			write(t, v.Dir(), "innocent", 4096)
			rep := r.End()
			if rep.Breach != nil {
				t.Errorf("the innocent run was blamed: %+v", rep.Breach)
			}
			if rep.Undone == nil || !slices.Contains(rep.Undone.Truncated, "sparse") || rep.Undone.Usage.Over() {
				t.Errorf("undone before the run: %+v", rep.Undone)
			}
			checkUndone(t, v.Dir(), "sparse")
			if alloc, _ := walkUsage(t, v.Dir()); alloc > mapQuota {
				t.Errorf("%d bytes on disk after the run", alloc)
			}
			if _, err := os.Stat(filepath.Join(v.Dir(), "innocent")); err != nil {
				t.Errorf("the innocent run's file: %v", err)
			}
			if mode.watched {
				checkUsage(t, v)
			}
		})
	}
}

// TestHolesCut: a file with more holes than are remembered has the rest of
// it, past the last one listed, punched whole when its growth is undone.
func TestHolesCut(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	must(t, err)
	defer f.Close()
	const n = maxHoles + 10
	size := int64(2*n) * 4096
	for i := range n { // data, hole, data, hole...
		_, err := f.WriteAt([]byte("d"), int64(2*i)*4096)
		must(t, err)
	}
	must(t, f.Truncate(size))
	m := holesOf(int(f.Fd()), size)
	if len(m.holes) != maxHoles || m.cut != int64(2*maxHoles+1)*4096 {
		t.Fatalf("%d holes, cut at %d", len(m.holes), m.cut)
	}
	if m.holes[0] != (hole{4096, 8192}) {
		t.Errorf("first hole %+v", m.holes[0])
	}
	for i := range n { // fills every hole
		_, err := f.WriteAt([]byte("h"), int64(2*i+1)*4096)
		must(t, err)
	}
	must(t, unfill(f, m, size))
	cut := m.cut / 4096
	got := make([]byte, 1)
	for b := range int64(2 * n) {
		_, err := f.ReadAt(got, b*4096)
		must(t, err)
		want := byte(0) // a hole punched again, or anything past the cut
		if b%2 == 0 && b < cut {
			want = 'd'
		}
		if got[0] != want {
			t.Fatalf("block %d holds %q, want %q", b, got, want)
		}
	}
	fi, _ := f.Stat()
	if fi.Size() != size {
		t.Errorf("size %d, want %d", fi.Size(), size)
	}
}

// TestPreallocationBreach: a run that passes the quota by preallocating
// blocks past the end of a file it did not create (its size unchanged)
// has them freed, and the file keeps what it held.
func TestPreallocationBreach(t *testing.T) {
	for _, mode := range volumeModes {
		t.Run(mode.name, func(t *testing.T) {
			v := newModeVolume(t, mode.watched, VolumeOptions{Quota: mapQuota})
			write(t, v.Dir(), "pre", 100)
			r := v.Begin()
			f, err := os.OpenFile(filepath.Join(v.Dir(), "pre"), os.O_WRONLY, 0)
			must(t, err)
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, mapSize); err != nil {
				f.Close()
				t.Skipf("fallocate: %v", err)
			}
			f.Close()
			rep := r.End()
			if rep.Breach == nil || !slices.Equal(rep.Breach.Truncated, []string{"pre"}) || rep.Breach.Usage.Over() {
				t.Fatalf("breach %+v", rep.Breach)
			}
			if alloc, _ := walkUsage(t, v.Dir()); alloc > mapQuota {
				t.Errorf("%d bytes on disk after the breach", alloc)
			}
			if b, err := os.ReadFile(filepath.Join(v.Dir(), "pre")); err != nil || len(b) != 100 || b[99] != 'x' {
				t.Errorf("pre: %d bytes, %v", len(b), err)
			}
			r = v.Begin()
			if rep := r.End(); rep.Breach != nil {
				t.Errorf("the next run: %+v", rep.Breach)
			}
		})
	}
}
