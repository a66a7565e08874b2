package workspace

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newVolume sets up a watched plain directory with these limits.
func newVolume(t testing.TB, opts VolumeOptions) (*Volumes, *Volume) {
	t.Helper()
	vs, err := NewVolumes(opts)
	must(t, err)
	t.Cleanup(func() { vs.Close() })
	v, err := vs.Volume(filepath.Join(t.TempDir(), "ws"))
	must(t, err)
	return vs, v
}

// write makes a file with size bytes, its directories too.
func write(t testing.TB, dir, p string, size int) {
	t.Helper()
	full := filepath.Join(dir, p)
	must(t, os.MkdirAll(filepath.Dir(full), 0o755))
	must(t, os.WriteFile(full, []byte(strings.Repeat("x", size)), 0o644))
}

// deepDir makes a chain of directories whose path is longer than PATH_MAX,
// through descriptors (a path that long cannot be named whole), and returns
// its path relative to dir and a descriptor of its last directory.
func deepDir(t testing.TB, dir string) (string, int) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	var parts []string
	for i := 0; len(strings.Join(parts, "/")) <= 4096+200; i++ {
		name := fmt.Sprintf("%03d%s", i, strings.Repeat("d", 200))
		must(t, unix.Mkdirat(fd, name, 0o755))
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		must(t, err)
		unix.Close(fd)
		fd = next
		parts = append(parts, name)
	}
	return strings.Join(parts, "/"), fd
}

// walkUsage measures a directory the slow way, through descriptors, for
// comparing with what the index says.
func walkUsage(t testing.TB, dir string) (alloc, entries int64) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	var walk func(fd int)
	walk = func(fd int) {
		names, err := readNames(fd)
		must(t, err)
		for _, n := range names {
			var st unix.Stat_t
			must(t, unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW))
			alloc += st.Blocks * 512
			entries++
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
				must(t, err)
				walk(sub)
				unix.Close(sub)
			}
		}
	}
	walk(fd)
	return alloc, entries
}

// checkUsage compares the volume's usage with a walk.
func checkUsage(t testing.TB, v *Volume) {
	t.Helper()
	v.settle()
	u, err := v.Usage()
	must(t, err)
	alloc, entries := walkUsage(t, v.Dir())
	if u.Bytes != alloc || u.Entries != entries {
		t.Errorf("usage %d bytes, %d entries; a walk finds %d, %d", u.Bytes, u.Entries, alloc, entries)
	}
}

func paths(files []File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

// TestRunReport: a run's report is exactly the regular files created,
// changed and deleted, whatever way: renames of files and directories,
// removal of trees, a directory made and filled at once, a path longer than
// PATH_MAX; the usage follows without a walk.
func TestRunReport(t *testing.T) {
	_, v := newVolume(t, VolumeOptions{})
	dir := v.Dir()
	for _, p := range []string{"keep", "touched", "replaced", "gone", "movesrc", "tree/a", "tree/b/c", "moving/x", "moving/y/z", "attr"} {
		write(t, dir, p, 10)
	}
	checkUsage(t, v)
	r := v.Begin()
	write(t, dir, "new/file", 5000)
	must(t, os.WriteFile(filepath.Join(dir, "touched"), []byte("changed"), 0o644))
	write(t, dir, ".tmp-replacement", 3)
	must(t, os.Rename(filepath.Join(dir, ".tmp-replacement"), filepath.Join(dir, "replaced")))
	must(t, os.Remove(filepath.Join(dir, "gone")))
	must(t, os.Rename(filepath.Join(dir, "movesrc"), filepath.Join(dir, "moved")))
	must(t, os.RemoveAll(filepath.Join(dir, "tree")))
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Rename(filepath.Join(dir, "moving"), filepath.Join(dir, "sub", "moved")))
	for i := range 50 {
		write(t, dir, fmt.Sprintf("made/%d/f", i), 1)
	}
	write(t, dir, "temp", 1)
	must(t, os.Remove(filepath.Join(dir, "temp")))
	must(t, os.Symlink("keep", filepath.Join(dir, "link")))
	must(t, os.Chmod(filepath.Join(dir, "attr"), 0o600)) // not a change of content
	deep, fd := deepDir(t, dir)
	f, err := unix.Openat(fd, "deepfile", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(t, err)
	unix.Write(f, make([]byte, 20000))
	unix.Close(f)
	unix.Close(fd)
	rep := r.End()

	want := []string{"moved", "new/file", "replaced", "sub/moved/x", "sub/moved/y/z", "touched", deep + "/deepfile"}
	for i := range 50 {
		want = append(want, fmt.Sprintf("made/%d/f", i))
	}
	slices.Sort(want)
	if got := paths(rep.Files); !slices.Equal(got, want) {
		t.Errorf("files\n%q\nwant\n%q", got, want)
	}
	wantDeleted := []string{"gone", "movesrc", "moving/x", "moving/y/z", "tree/a", "tree/b/c"}
	if !slices.Equal(rep.Deleted, wantDeleted) {
		t.Errorf("deleted %q, want %q", rep.Deleted, wantDeleted)
	}
	if rep.Incomplete || rep.Breach != nil {
		t.Errorf("report %+v", rep)
	}
	for _, f := range rep.Files {
		if f.Path == "new/file" && f.Size != 5000 {
			t.Errorf("new/file size %d", f.Size)
		}
	}
	checkUsage(t, v)

	// A run with nothing in it reports nothing.
	if rep := v.Begin().End(); len(rep.Files)+len(rep.Deleted) != 0 {
		t.Errorf("an empty run: %+v", rep)
	}
}

// TestRunsOverlap: two runs open at once each see what changed while they
// were open; the log is not kept once both are done.
func TestRunsOverlap(t *testing.T) {
	vs, v := newVolume(t, VolumeOptions{})
	a := v.Begin()
	write(t, v.Dir(), "one", 1)
	b := v.Begin()
	write(t, v.Dir(), "two", 1)
	ra := a.End()
	write(t, v.Dir(), "three", 1)
	rb := b.End()
	if got := paths(ra.Files); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("first run %q", got)
	}
	if got := paths(rb.Files); !slices.Equal(got, []string{"three", "two"}) {
		t.Errorf("second run %q", got)
	}
	write(t, v.Dir(), "four", 1)
	v.settle()
	vs.w.mu.Lock()
	n := len(v.t.log)
	vs.w.mu.Unlock()
	if n != 0 {
		t.Errorf("%d changes logged with no run open", n)
	}
}

// TestOverflow: when the kernel drops events (its queue holds 16,384), the
// workspace is walked once and the report is still exact.
func TestOverflow(t *testing.T) {
	vs, v := newVolume(t, VolumeOptions{})
	write(t, v.Dir(), "gone", 1)
	r := v.Begin()
	vs.w.mu.Lock() // the watcher stops reading
	must(t, os.Remove(filepath.Join(v.Dir(), "gone")))
	const n = 20000
	for i := range n {
		write(t, v.Dir(), fmt.Sprintf("d%d/f%d", i%10, i), 0)
	}
	vs.w.mu.Unlock()
	rep := r.End()
	if len(rep.Files) != n || !slices.Equal(rep.Deleted, []string{"gone"}) || rep.Incomplete {
		t.Fatalf("%d files, deleted %q, incomplete %v; want %d and gone", len(rep.Files), rep.Deleted, rep.Incomplete, n)
	}
	checkUsage(t, v)
}

// TestBreachReclaim: in a watched directory, a run that passes the quota
// is told at once, and its end removes what it wrote past it, newest
// first, and cuts back a file it grew; what was there before stays.
func TestBreachReclaim(t *testing.T) {
	const quota = 256 << 10
	_, v := newVolume(t, VolumeOptions{Quota: quota})
	write(t, v.Dir(), "old", 64<<10)
	write(t, v.Dir(), "grown", 4096)
	v.settle()
	r := v.Begin()
	if left := r.FileSizeLimit(); left <= 0 || left > quota-64<<10 {
		t.Errorf("file size limit %d", left)
	}
	f, err := os.OpenFile(filepath.Join(v.Dir(), "grown"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	f.Write(make([]byte, 8192))
	f.Close()
	for i := range 40 {
		write(t, v.Dir(), fmt.Sprintf("new/f%02d", i), 8<<10)
	}
	select {
	case <-r.Breach():
	case <-time.After(10 * time.Second):
		t.Fatal("no breach signalled")
	}
	f, err = os.OpenFile(filepath.Join(v.Dir(), "grown"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	f.Write(make([]byte, 100<<10)) // the newest change: cut back first
	f.Close()
	rep := r.End()
	if rep.Breach == nil {
		t.Fatal("no breach reported")
	}
	u := rep.Breach.Usage
	if u.Bytes > quota || u.Over() {
		t.Errorf("after reclaim: %+v", u)
	}
	if !slices.Equal(rep.Breach.Truncated, []string{"grown"}) {
		t.Errorf("truncated %q", rep.Breach.Truncated)
	}
	if fi, err := os.Stat(filepath.Join(v.Dir(), "grown")); err != nil || fi.Size() != 4096 {
		t.Errorf("grown: %v %v, want cut back to 4096 bytes", fi, err)
	}
	for _, p := range []string{"old", "new/f00", "new/f01"} {
		if _, err := os.Stat(filepath.Join(v.Dir(), p)); err != nil {
			t.Errorf("%s was removed: %v; breach %+v", p, err, rep.Breach)
		}
	}
	if len(rep.Breach.Removed) == 0 || rep.Breach.Removed[0] != "new/f39" {
		t.Errorf("removed %q, want the newest first", rep.Breach.Removed)
	}
	for _, p := range rep.Breach.Removed {
		if _, err := os.Stat(filepath.Join(v.Dir(), p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s reported removed: %v", p, err)
		}
	}
	checkUsage(t, v)
	// The next run starts at or under the quota, and is not stopped.
	r = v.Begin()
	must(t, os.Remove(filepath.Join(v.Dir(), "old")))
	write(t, v.Dir(), "after", 8<<10)
	if rep := r.End(); r.FileSizeLimit() < 0 || rep.Breach != nil || !slices.Equal(paths(rep.Files), []string{"after"}) {
		t.Errorf("next run: %d left, %+v", r.FileSizeLimit(), rep)
	}
}

// TestEntryBreach: a run that passes the cap on entries with empty files,
// directories and links is stopped and its newest entries removed.
func TestEntryBreach(t *testing.T) {
	_, v := newVolume(t, VolumeOptions{MaxEntries: 100})
	r := v.Begin()
	for i := range 60 {
		must(t, os.Mkdir(filepath.Join(v.Dir(), fmt.Sprint("d", i)), 0o755))
		must(t, os.Symlink("nowhere", filepath.Join(v.Dir(), fmt.Sprint("d", i), "l")))
	}
	select {
	case <-r.Breach():
	case <-time.After(10 * time.Second):
		t.Fatal("no breach signalled")
	}
	rep := r.End()
	if rep.Breach == nil || rep.Breach.Usage.Entries > 100 {
		t.Fatalf("breach %+v", rep.Breach)
	}
	checkUsage(t, v)
}

// TestNotWatched: without inotify, a run walks the workspace, and its
// report and breach still hold.
func TestNotWatched(t *testing.T) {
	vs, err := NewVolumes(VolumeOptions{Quota: 64 << 10})
	must(t, err)
	vs.w.close()
	vs.w, vs.werr = nil, errors.New("no inotify in this test")
	t.Cleanup(func() { vs.Close() })
	v, err := vs.Volume(filepath.Join(t.TempDir(), "ws"))
	must(t, err)
	write(t, v.Dir(), "gone", 1)
	write(t, v.Dir(), "keep", 1)
	r := v.Begin()
	must(t, os.Remove(filepath.Join(v.Dir(), "gone")))
	write(t, v.Dir(), "small", 10)
	time.Sleep(20 * time.Millisecond) // mtimes apart, for newest first
	write(t, v.Dir(), "big", 200<<10)
	select {
	case <-r.Breach():
	case <-time.After(10 * time.Second):
		t.Fatal("no breach signalled")
	}
	rep := r.End()
	if got := paths(rep.Files); !slices.Equal(got, []string{"big", "small"}) || !slices.Equal(rep.Deleted, []string{"gone"}) {
		t.Errorf("files %q deleted %q", got, rep.Deleted)
	}
	if rep.Breach == nil || !slices.Equal(rep.Breach.Removed, []string{"big"}) || rep.Breach.Usage.Over() {
		t.Errorf("breach %+v", rep.Breach)
	}
}

// treeState describes every entry beneath dir (type, mode, owner, size,
// modification time, content or link target), through descriptors.
func treeState(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	var walk func(fd int, rel string)
	walk = func(fd int, rel string) {
		names, err := readNames(fd)
		must(t, err)
		for _, n := range names {
			var st unix.Stat_t
			must(t, unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW))
			desc := fmt.Sprintf("%o %d:%d", st.Mode, st.Uid, st.Gid)
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				f, err := unix.Openat(fd, n, unix.O_RDONLY, 0)
				must(t, err)
				h := sha256.New()
				buf := make([]byte, 1<<16)
				for {
					k, _ := unix.Read(f, buf)
					if k <= 0 {
						break
					}
					h.Write(buf[:k])
				}
				unix.Close(f)
				desc += fmt.Sprintf(" size=%d mtime=%d links=%d %x", st.Size, st.Mtim.Nano(), st.Nlink, h.Sum(nil)[:8])
			case unix.S_IFLNK:
				buf := make([]byte, 4096)
				k, _ := unix.Readlinkat(fd, n, buf)
				desc += " -> " + string(buf[:k])
			case unix.S_IFDIR:
				sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
				must(t, err)
				walk(sub, rel+n+"/")
				unix.Close(sub)
				desc += fmt.Sprintf(" mtime=%d", st.Mtim.Nano())
			}
			out[rel+n] = desc
		}
	}
	walk(fd, "")
	return out
}

// populate fills dir with one of everything a workspace may hold.
func populate(t testing.TB, dir string, owner int) {
	t.Helper()
	write(t, dir, "a.txt", 100)
	write(t, dir, "sub/b.bin", 300000)
	must(t, os.Chmod(filepath.Join(dir, "sub/b.bin"), 0o751))
	must(t, os.MkdirAll(filepath.Join(dir, "empty/dir"), 0o700))
	must(t, os.Symlink("../a.txt", filepath.Join(dir, "sub/rel-link")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "abs-link")))
	must(t, os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "sub/hard")))
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o640))
	sparse, err := os.Create(filepath.Join(dir, "sparse"))
	must(t, err)
	sparse.WriteAt([]byte("end"), 100<<20)
	sparse.Close()
	deep, fd := deepDir(t, dir)
	_ = deep
	f, err := unix.Openat(fd, "deep.txt", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(t, err)
	unix.Write(f, []byte("at the bottom"))
	unix.Close(f)
	unix.Close(fd)
	if owner != 0 {
		must(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				os.Lchown(p, owner, owner)
			}
			return nil
		}))
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 789, time.UTC)
	must(t, os.Chtimes(filepath.Join(dir, "a.txt"), old, old))
}

// BenchmarkRun is what the workspace adds to every execution: a run begun
// and ended (two barriers through the watcher, the quota left, the changes)
// around nothing, in a watched directory of 0, 10,000 and 100,000 files,
// and the heap the index of each takes.
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "ws")
			for i := range n {
				if i%1000 == 0 {
					must(b, os.MkdirAll(filepath.Join(dir, fmt.Sprint("d", i/1000)), 0o755))
				}
				must(b, os.WriteFile(filepath.Join(dir, fmt.Sprint("d", i/1000), fmt.Sprint("f", i)), []byte("x"), 0o644))
			}
			must(b, os.MkdirAll(dir, 0o755))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			vs, err := NewVolumes(VolumeOptions{Quota: 1 << 30})
			must(b, err)
			b.Cleanup(func() { vs.Close() })
			v, err := vs.Volume(dir)
			must(b, err)
			runtime.GC()
			runtime.ReadMemStats(&after)
			for b.Loop() {
				r := v.Begin()
				r.End()
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "index-MiB")
		})
	}
}
