package workspace

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codecell/codecell/internal/mountinfo"
)

// requireImages skips a test on a host that cannot mount images (not root,
// no loop devices, no mkfs.ext4).
func requireImages(t testing.TB) {
	t.Helper()
	if err := imageSupport(); err != nil {
		t.Skipf("workspace images unavailable: %v", err)
	}
}

// imageParent returns a directory for workspaces whose images are
// unmounted when the test ends, before the directory is removed.
func imageParent(t testing.TB) string {
	t.Helper()
	parent := t.TempDir()
	t.Cleanup(func() { unmountBelow(parent) })
	return parent
}

// unmountBelow detaches every mount beneath dir.
func unmountBelow(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	mounts, _ := mountinfo.Parse(f)
	for _, m := range mounts {
		if strings.HasPrefix(m.Point, dir+"/") {
			unix.Unmount(m.Point, unix.MNT_DETACH)
		}
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func imageVolumes(t testing.TB, opts VolumeOptions) *Volumes {
	t.Helper()
	opts.Images = ImagesOn
	opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	vs, err := NewVolumes(opts)
	must(t, err)
	t.Cleanup(func() { vs.Close() })
	return vs
}

// fill writes until the filesystem refuses, with write making the n-th
// entry; it returns how many it made and the error that stopped it.
func fill(t testing.TB, max int, write func(i int) error) (int, error) {
	t.Helper()
	for i := range max {
		if err := write(i); err != nil {
			return i, err
		}
	}
	return max, nil
}

func isFull(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// TestImageLimitsHard: in an image, a write past the quota or the cap on
// entries fails with ENOSPC, whatever the pattern, and the usage never
// passes the quota.
func TestImageLimitsHard(t *testing.T) {
	requireImages(t)
	const quota = 8 << 20
	const maxEntries = 300
	vs := imageVolumes(t, VolumeOptions{Quota: quota, MaxEntries: maxEntries})
	v, err := vs.Volume(filepath.Join(imageParent(t), "ws"))
	must(t, err)
	dir := v.Dir()
	within := func(what string) {
		t.Helper()
		u, err := v.Usage()
		must(t, err)
		if u.Enforcement != "kernel" || u.Bytes > quota || u.Entries > maxEntries+32 {
			t.Errorf("%s: usage %+v passes the limits", what, u)
		}
		t.Logf("%s: %s", what, u)
	}
	clean := func() {
		t.Helper()
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			must(t, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
		v.settle()
		if u, _ := v.Usage(); u.Bytes > 64<<10 || u.Entries != 0 {
			t.Fatalf("emptied: %+v", u)
		}
	}

	t.Run("one big file", func(t *testing.T) {
		f, err := os.Create(filepath.Join(dir, "big"))
		must(t, err)
		_, err = f.Write(make([]byte, 2*quota))
		f.Close()
		if !isFull(err) {
			t.Errorf("a write of twice the quota: %v", err)
		}
		within("one big file")
		clean()
	})
	t.Run("many small files", func(t *testing.T) {
		n, err := fill(t, 10000, func(i int) error {
			return os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i)), make([]byte, 64<<10), 0o644)
		})
		if !isFull(err) || n*64<<10 > quota {
			t.Errorf("%d files of 64 KiB: %v", n, err)
		}
		within("many small files")
		clean()
	})
	t.Run("empty files", func(t *testing.T) {
		n, err := fill(t, 10000, func(i int) error {
			return os.WriteFile(filepath.Join(dir, fmt.Sprint("e", i)), nil, 0o644)
		})
		if !isFull(err) || n < maxEntries || n > maxEntries+16 {
			t.Errorf("%d empty files for a cap of %d: %v", n, maxEntries, err)
		}
		within("empty files")
		clean()
	})
	t.Run("directories", func(t *testing.T) {
		n, err := fill(t, 10000, func(i int) error { return os.Mkdir(filepath.Join(dir, fmt.Sprint("d", i)), 0o755) })
		if !isFull(err) || n > maxEntries+32 {
			t.Errorf("%d directories: %v", n, err)
		}
		within("directories")
		clean()
	})
	t.Run("symlinks", func(t *testing.T) {
		long := strings.Repeat("x", 4000) // a slow symlink: it takes a block
		n, err := fill(t, 10000, func(i int) error { return os.Symlink(long, filepath.Join(dir, fmt.Sprint("l", i))) })
		if !isFull(err) || n > maxEntries+32 {
			t.Errorf("%d symlinks: %v", n, err)
		}
		within("symlinks")
		clean()
	})
	t.Run("path longer than PATH_MAX", func(t *testing.T) {
		_, fd := deepDir(t, dir)
		f, err := unix.Openat(fd, "big", unix.O_CREAT|unix.O_WRONLY, 0o644)
		unix.Close(fd) // open, it would keep the removed directories' inodes
		must(t, err)
		_, werr := unix.Write(f, make([]byte, 2*quota))
		for werr == nil {
			_, werr = unix.Write(f, make([]byte, 1<<20))
		}
		unix.Close(f)
		if !isFull(werr) {
			t.Errorf("deep write: %v", werr)
		}
		within("path longer than PATH_MAX")
		clean()
	})
	t.Run("unlinked while open", func(t *testing.T) {
		f, err := os.Create(filepath.Join(dir, "ghost"))
		must(t, err)
		must(t, os.Remove(f.Name()))
		_, err = f.Write(make([]byte, 2*quota))
		if !isFull(err) {
			t.Errorf("a write to an unlinked file: %v", err)
		}
		within("unlinked while open")
		f.Close()
		clean()
	})
}

// TestImageMigration: a plain directory's content moves into the image
// whole (files, holes, modes, owners, times, links of both kinds, FIFOs,
// a path longer than PATH_MAX), stays across unmount and mount, and the
// last user to leave unmounts it.
func TestImageMigration(t *testing.T) {
	requireImages(t)
	dir := filepath.Join(imageParent(t), "ws")
	must(t, os.Mkdir(dir, 0o700))
	populate(t, dir, 65534)
	before := treeState(t, dir)

	opts := VolumeOptions{Quota: 64 << 20, MaxEntries: 1000, Owner: 65534}
	vs := imageVolumes(t, opts)
	v, err := vs.Volume(dir)
	must(t, err)
	if v.img == nil {
		t.Fatal("not an image")
	}
	sameTree(t, before, treeState(t, dir))
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(dir, "sparse"), &st))
	if st.Blocks*512 > 1<<20 {
		t.Errorf("the sparse file takes %d bytes in the image", st.Blocks*512)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), imagesDir, "ws.import*")); len(leftovers) != 0 {
		t.Errorf("left over: %q", leftovers)
	}
	must(t, unix.Stat(dir, &st))
	if st.Uid != 65534 || st.Mode&0o777 != 0o700 {
		t.Errorf("workspace root %d %o", st.Uid, st.Mode)
	}

	// A second user (another process) keeps it mounted when the first
	// leaves; the last unmounts it.
	vs2 := imageVolumes(t, opts)
	if _, err := vs2.Volume(dir); err != nil {
		t.Fatal(err)
	}
	must(t, vs.Close())
	if _, ok, _ := mountedAt(dir, v.img.file); !ok {
		t.Fatal("unmounted while another user has it")
	}
	must(t, vs2.Close())
	if _, ok, _ := mountedAt(dir, v.img.file); ok {
		t.Fatal("still mounted after the last user left")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the unmounted directory holds %d entries", len(ents))
	}
	vs3 := imageVolumes(t, opts)
	if _, err := vs3.Volume(dir); err != nil {
		t.Fatal(err)
	}
	sameTree(t, before, treeState(t, dir))
}

// sameTree reports how two treeStates differ.
func sameTree(t testing.TB, want, got map[string]string) {
	t.Helper()
	if maps.Equal(want, got) {
		return
	}
	for k := range want {
		if want[k] != got[k] {
			t.Errorf("%.60s...: %s, was %s", k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%.60s...: new", k)
		}
	}
}

// TestImageLimitsChange: a new quota applies in place; one past what the
// image holds, or a new cap on entries, rebuilds it with its content; a
// quota below what it holds leaves it over, with writes refused and
// deletes working.
func TestImageLimitsChange(t *testing.T) {
	requireImages(t)
	dir := filepath.Join(imageParent(t), "ws")
	open := func(quota, maxEntries int64) (*Volumes, *Volume) {
		t.Helper()
		vs, err := NewVolumes(VolumeOptions{Quota: quota, MaxEntries: maxEntries, Images: ImagesOn})
		must(t, err)
		v, err := vs.Volume(dir)
		must(t, err)
		return vs, v
	}
	vs, _ := open(8<<20, 500)
	write(t, dir, "keep", 6<<20)
	state := treeState(t, dir)
	vs.Close()

	vs, v := open(4<<20, 500)
	u, _ := v.Usage()
	if !u.Over() || u.Quota != 4<<20 {
		t.Errorf("after a smaller quota: %+v", u)
	}
	if err := os.WriteFile(filepath.Join(dir, "more"), make([]byte, 8192), 0o644); !isFull(err) {
		t.Errorf("a write over the quota: %v", err)
	}
	os.Remove(filepath.Join(dir, "more"))
	vs.Close()

	vs, v = open(64<<20, 2000) // past the image's 16 MiB, and more entries: a new image
	sameTree(t, state, treeState(t, dir))
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 40<<20), 0o644); err != nil {
		t.Errorf("a write within the new quota: %v", err)
	}
	n, err := fill(t, 5000, func(i int) error { return os.WriteFile(filepath.Join(dir, fmt.Sprint("e", i)), nil, 0o644) })
	if !isFull(err) || n < 2000-2 || n > 2000+64 {
		t.Errorf("%d entries for a cap of 2000: %v", n, err)
	}
	u, _ = v.Usage()
	t.Logf("after the rebuild: %s", u)
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), imagesDir, "*")); !slices.Equal(left, []string{filepath.Join(filepath.Dir(dir), imagesDir, "ws.ext4")}) {
		t.Errorf("in %s: %q", imagesDir, left)
	}
	vs.Close()
}

// TestImageWatched: the index works on an image as on a directory.
func TestImageWatched(t *testing.T) {
	requireImages(t)
	vs := imageVolumes(t, VolumeOptions{Quota: 16 << 20})
	v, err := vs.Volume(filepath.Join(imageParent(t), "ws"))
	must(t, err)
	write(t, v.Dir(), "gone", 1)
	r := v.Begin()
	if left := r.FileSizeLimit(); left < 15<<20 || left > 16<<20 {
		t.Errorf("file size limit %d", left)
	}
	write(t, v.Dir(), "a/b", 100)
	must(t, os.Remove(filepath.Join(v.Dir(), "gone")))
	rep := r.End()
	if got := paths(rep.Files); !slices.Equal(got, []string{"a/b"}) || !slices.Equal(rep.Deleted, []string{"gone"}) {
		t.Errorf("files %q deleted %q", got, rep.Deleted)
	}
}

// TestImageOutlivesUnmount: when another mount namespace holds a copy of
// the mount (a process that unshared it meanwhile), the filesystem outlives
// the unmount; mounting it again must use the same live filesystem, not a
// second one on the same file, or what was written last is lost.
func TestImageOutlivesUnmount(t *testing.T) {
	requireImages(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	dir := filepath.Join(imageParent(t), "ws")
	opts := VolumeOptions{Quota: 64 << 20}
	vs := imageVolumes(t, opts)
	if _, err := vs.Volume(dir); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(unshare, "-m", "--propagation", "private", "sleep", "30")
	must(t, holder.Start())
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	// The copy is made once unshare has run; wait for its namespace.
	for deadline := time.Now().Add(10 * time.Second); ; {
		self, _ := os.Readlink("/proc/self/ns/mnt")
		other, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", holder.Process.Pid))
		if other != "" && other != self {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unshare did not make its mount namespace")
		}
		time.Sleep(10 * time.Millisecond)
	}
	write(t, dir, "written last", 1<<20)
	must(t, vs.Close())
	vs2 := imageVolumes(t, opts)
	if _, err := vs2.Volume(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "written last")); err != nil {
		t.Fatalf("after mounting again: %v", err)
	}
}

// TestBoundLoops: the loop devices named as maybe bound (/proc/partitions)
// include a mounted image's, which boundLoop finds by its file; partitions
// of a loop device are not loop devices.
func TestBoundLoops(t *testing.T) {
	for name, want := range map[string]bool{"loop0": true, "loop127": true, "loop": false, "loop1p1": false, "sda": false, "loopx": false} {
		if isLoop(name) != want {
			t.Errorf("isLoop(%q) = %v", name, !want)
		}
	}
	requireImages(t)
	dir := filepath.Join(imageParent(t), "ws")
	vs := imageVolumes(t, VolumeOptions{Quota: 64 << 20})
	v, err := vs.Volume(dir)
	if err != nil {
		t.Fatal(err)
	}
	dev := v.img.dev
	if !slices.Contains(boundLoops(), strings.TrimPrefix(dev, "/dev/")) {
		t.Fatalf("%s is not among %v", dev, boundLoops())
	}
	var st unix.Stat_t
	must(t, unix.Stat(v.img.file, &st))
	if got := boundLoop(st.Dev, st.Ino); got != dev {
		t.Fatalf("boundLoop: %q, want %q", got, dev)
	}
}

// TestMaybeMountPoint: a mount point is one, a plain directory and a
// missing one are not (the mount table is then not read).
func TestMaybeMountPoint(t *testing.T) {
	dir := t.TempDir()
	for path, want := range map[string]bool{"/proc": true, dir: false, filepath.Join(dir, "gone"): false} {
		if got := maybeMountPoint(path); got != want {
			t.Errorf("maybeMountPoint(%s) = %v, want %v", path, got, want)
		}
	}
}
