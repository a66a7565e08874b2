package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReleaseLeftovers: an image whose process is gone (its users' flock
// dropped, its mount left, as a SIGKILL leaves it) is unmounted and its
// loop device detached; an image a live process holds stays mounted, and
// so does an image under another directory.
func TestReleaseLeftovers(t *testing.T) {
	requireImages(t)
	data, other := imageParent(t), imageParent(t)
	vs := imageVolumes(t, VolumeOptions{Quota: 8 << 20, MaxEntries: 1000})
	dead, err := vs.Volume(filepath.Join(data, "workspaces", "dead"))
	must(t, err)
	live, err := vs.Volume(filepath.Join(data, "workspaces", "live"))
	must(t, err)
	elsewhere, err := vs.Volume(filepath.Join(other, "workspaces", "dead"))
	must(t, err)
	// What the kernel does when a process dies: its watches and its flock
	// go, the mount stays.
	deadDev := dead.img.dev
	must(t, dead.close(false))
	must(t, elsewhere.close(false))

	got, err := ReleaseLeftovers(data)
	must(t, err)
	if !slices.Equal(got.Unmounted, []string{dead.Dir()}) {
		t.Errorf("unmounted %q, want only %s", got.Unmounted, dead.Dir())
	}
	for _, v := range []*Volume{live, elsewhere} {
		if _, ok, err := mountedAt(v.Dir(), v.img.file); !ok || err != nil {
			t.Errorf("%s was unmounted (%v)", v.Dir(), err)
		}
	}
	if _, ok, _ := mountedAt(dead.Dir(), dead.img.file); ok {
		t.Errorf("%s is still mounted", dead.Dir())
	}
	// The kernel detaches an autoclear device after the unmount, in
	// work of its own: polled, with no deadline but the test's.
	for strings.HasPrefix(loopBacking(deadDev), data) {
		time.Sleep(10 * time.Millisecond)
	}
	// What it released comes back on the next use (Volume sees it gone).
	again, err := vs.Volume(dead.Dir())
	must(t, err)
	must(t, os.WriteFile(filepath.Join(again.Dir(), "x"), []byte("x"), 0o600))
}

// TestReleaseLeftoversDetaches: a loop device bound to an image under the
// data dir without autoclear, and not mounted (a process killed between
// binding and mounting, or losetup by hand), is detached.
func TestReleaseLeftoversDetaches(t *testing.T) {
	requireImages(t)
	data := imageParent(t)
	imgs := filepath.Join(data, "workspaces", imagesDir)
	must(t, os.MkdirAll(imgs, 0o700))
	file := filepath.Join(imgs, "orphan.ext4")
	must(t, makeImage(file, VolumeOptions{Quota: 1 << 20, MaxEntries: 100}, 0, 0))
	dev := bindLoop(t, file)
	got, err := ReleaseLeftovers(data)
	must(t, err)
	if !slices.Equal(got.Detached, []string{dev}) {
		t.Errorf("detached %q, want %s", got.Detached, dev)
	}
	if b := loopBacking(dev); b != "" {
		t.Errorf("%s is still bound to %s", dev, b)
	}
}

// bindLoop binds a free loop device to file, without autoclear, and
// detaches it when the test ends if it is still bound.
func bindLoop(t *testing.T, file string) string {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	must(t, err)
	defer ctl.Close()
	n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
	must(t, err)
	dev := "/dev/loop" + strconv.Itoa(n)
	lf, err := os.OpenFile(dev, os.O_RDWR, 0)
	must(t, err)
	defer lf.Close()
	cfg := unix.LoopConfig{Fd: uint32(f.Fd())}
	must(t, unix.IoctlLoopConfigure(int(lf.Fd()), &cfg))
	t.Cleanup(func() {
		if loopBacking(dev) == file {
			if lf, err := os.Open(dev); err == nil {
				unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0)
				lf.Close()
			}
		}
	})
	return dev
}

// TestReleaseLeftoversImagesGone: a dead process's image mounted over a
// workspace whose images directory was removed since (a data dir deleted
// under its mounts, as a test's or a benchmark's clean-up does) is released
// too; before, its directory's lock could not be taken, and the mount
// stayed for good.
func TestReleaseLeftoversImagesGone(t *testing.T) {
	requireImages(t)
	data := imageParent(t)
	vs := imageVolumes(t, VolumeOptions{Quota: 8 << 20, MaxEntries: 1000})
	dead, err := vs.Volume(filepath.Join(data, "workspaces", "dead"))
	must(t, err)
	must(t, dead.close(false))
	must(t, os.RemoveAll(filepath.Dir(dead.img.file)))

	got, err := ReleaseLeftovers(data)
	must(t, err)
	if !slices.Equal(got.Unmounted, []string{dead.Dir()}) {
		t.Errorf("unmounted %q, want %s", got.Unmounted, dead.Dir())
	}
	if maybeMountPoint(dead.Dir()) {
		t.Errorf("%s is still mounted", dead.Dir())
	}
}

// TestCloseWaitsForReleases: once Close returns, no image is left mounted,
// even when Releases were under way as it ran (a server stopped while its
// idle namespaces are released); before, Close did not wait for them, and
// the process exited with one image mounted now and then.
func TestCloseWaitsForReleases(t *testing.T) {
	requireImages(t)
	data := imageParent(t)
	vs := imageVolumes(t, VolumeOptions{Quota: 8 << 20, MaxEntries: 1000})
	var dirs []string
	for i := range 12 {
		v, err := vs.Volume(filepath.Join(data, "workspaces", strconv.Itoa(i)))
		must(t, err)
		dirs = append(dirs, v.Dir())
	}
	var wg sync.WaitGroup
	for _, dir := range dirs {
		wg.Go(func() { vs.Release(dir) })
	}
	// Close once every Release has taken its workspace out, while they
	// unmount.
	for taken := false; !taken; {
		vs.mu.Lock()
		taken = len(vs.vols) == 0
		vs.mu.Unlock()
	}
	must(t, vs.Close())
	for _, dir := range dirs {
		if maybeMountPoint(dir) {
			t.Errorf("%s is mounted after Close", dir)
		}
	}
	wg.Wait()
}
