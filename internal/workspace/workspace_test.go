package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixture is a workspace beside a directory outside it that holds a secret,
// with symbolic links that try to reach it.
type fixture struct {
	ws      *Workspace
	dir     string // the workspace's host directory
	outside string // a directory beside it
}

const secret = "the secret outside the workspace"

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	return fixtureWith(t, func(dir string) (*Workspace, error) { return Open(dir, opts) })
}

// fixtureWith makes a fixture whose workspace open opens: a directory with
// a secret beside it, and links in the workspace that point out of it.
func fixtureWith(t testing.TB, open func(dir string) (*Workspace, error)) *fixture {
	t.Helper()
	parent := t.TempDir()
	f := &fixture{dir: filepath.Join(parent, "ws"), outside: filepath.Join(parent, "outside")}
	must(t, os.Mkdir(f.outside, 0o755))
	must(t, os.WriteFile(filepath.Join(f.outside, "secret.txt"), []byte(secret), 0o644))
	ws, err := open(f.dir)
	must(t, err)
	t.Cleanup(func() { ws.Close() })
	f.ws = ws
	must(t, os.Symlink("../outside/secret.txt", filepath.Join(f.dir, "outfile")))
	must(t, os.Symlink("../outside", filepath.Join(f.dir, "outdir")))
	must(t, os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.dir, "absfile")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(f.dir, "passwd")))
	return f
}

// newVolumeFixture is newFixture with the workspace opened through a
// Volume (a plain, watched directory) with these limits.
func newVolumeFixture(t testing.TB, quota, maxEntries int64) (*fixture, *Volume) {
	t.Helper()
	vs, err := NewVolumes(VolumeOptions{Quota: quota, MaxEntries: maxEntries})
	must(t, err)
	t.Cleanup(func() { vs.Close() })
	var v *Volume
	f := fixtureWith(t, func(dir string) (*Workspace, error) {
		var err error
		if v, err = vs.Volume(dir); err != nil {
			return nil, err
		}
		return v.Open()
	})
	v.settle()
	return f, v
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tempFiles lists Write's temporary files left anywhere under dir.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && isTemp(d.Name()) {
			left = append(left, p)
		}
		return nil
	})
	return left
}

func TestClean(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
		msg      string
	}{
		{in: "a.txt", want: "a.txt"},
		{in: "a//b/./c/", want: "a/b/c"},
		{in: "a/../b", want: "b"},
		{in: ".", want: "."},
		{in: "a/..", want: "."},
		{in: "", err: ErrInvalidPath, msg: "empty"},
		{in: "a\x00b", err: ErrInvalidPath, msg: "NUL"},
		{in: strings.Repeat("a/", 2100), err: ErrInvalidPath, msg: "the limit is 4096"},
		{in: strings.Repeat("x", 256), err: ErrInvalidPath, msg: "the limit is 255"},
		{in: "/etc/passwd", err: ErrOutside, msg: "absolute"},
		{in: "..", err: ErrOutside, msg: ".."},
		{in: "../x", err: ErrOutside, msg: ".."},
		{in: "a/../../x", err: ErrOutside, msg: ".."},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Clean(tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("Clean(%q) = %q, %v; want %v mentioning %q", tt.in, got, err, tt.err, tt.msg)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Clean(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestRefusals tries every operation on every way out of the workspace.
func TestRefusals(t *testing.T) {
	f := newFixture(t, Options{})
	paths := []string{
		"../outside/secret.txt", // .. out
		f.outside + "/secret.txt",
		"/etc/passwd",       // absolute
		"outfile",           // a symlinked file pointing out
		"absfile",           // an absolute symlink
		"passwd",            // an absolute symlink to a system file
		"outdir",            // a symlinked directory
		"outdir/secret.txt", // a symlinked directory component
		"outdir/new.txt",
	}
	ops := map[string]func(p string) error{
		"read":    func(p string) error { _, err := f.ws.Read(p, 0, 0); return err },
		"readall": func(p string) error { _, err := f.ws.ReadFile(p, 1<<20); return err },
		"write":   func(p string) error { _, err := f.ws.Write(p, []byte("x")); return err },
		"create":  func(p string) error { _, err := f.ws.Create(p, []byte("x")); return err },
		"append":  func(p string) error { _, err := f.ws.Append(p, []byte("x"), true); return err },
		"list":    func(p string) error { _, err := f.ws.List(p, "", 0); return err },
		"delete":  func(p string) error { return f.ws.Delete(p, true) },
	}
	for name, op := range ops {
		for _, p := range paths {
			if name == "delete" && !strings.Contains(p, "/") {
				continue // deleting a link removes the link itself: see TestDelete
			}
			if name == "create" && !strings.Contains(p, "/") {
				continue // something is there: ErrExist, see below
			}
			t.Run(name+"/"+p, func(t *testing.T) {
				err := op(p)
				if !errors.Is(err, ErrOutside) {
					t.Fatalf("%s(%q) = %v, want ErrOutside", name, p, err)
				}
				var we *Error
				if !errors.As(err, &we) || we.Path != p {
					t.Errorf("error %v does not name the path %q", err, p)
				}
				if strings.Contains(err.Error(), f.dir) {
					t.Errorf("error %q names the host directory", err)
				}
			})
		}
	}
	for _, p := range []string{"outfile", "absfile"} {
		if _, err := f.ws.Create(p, []byte("x")); !errors.Is(err, ErrExist) {
			t.Errorf("create(%q) = %v, want ErrExist", p, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(f.outside, "secret.txt"))
	if err != nil || string(got) != secret {
		t.Fatalf("the secret changed: %q, %v", got, err)
	}
	if ents, _ := os.ReadDir(f.outside); len(ents) != 1 {
		t.Fatalf("something was created outside: %v", ents)
	}
	if left := tempFiles(t, filepath.Dir(f.dir)); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestWriteRead(t *testing.T) {
	f := newFixture(t, Options{})
	e, err := f.ws.Write("deep/er/a.txt", []byte("hello"))
	must(t, err)
	if e.Path != "deep/er/a.txt" || e.Size != 5 || time.Since(e.ModTime) > time.Minute {
		t.Fatalf("entry %+v", e)
	}
	must(t, os.Chmod(filepath.Join(f.dir, "deep/er/a.txt"), 0o755))
	if _, err := f.ws.Write("deep/er/../er/a.txt", []byte("hello, world")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(f.dir, "deep/er/a.txt"))
	must(t, err)
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v after a rewrite, want the old 0755", fi.Mode())
	}
	c, err := f.ws.Read("deep/er/a.txt", 0, 0)
	must(t, err)
	if string(c.Data) != "hello, world" || !c.Text || c.More || c.Size != 12 || c.MIMEType != "text/plain; charset=utf-8" {
		t.Fatalf("chunk %+v", c)
	}
	// A symlink inside the workspace is followed for reading, refused for
	// writing (it would be replaced, not written through).
	must(t, os.Symlink("deep/er/a.txt", filepath.Join(f.dir, "link")))
	if c, err := f.ws.Read("link", 0, 0); err != nil || string(c.Data) != "hello, world" {
		t.Fatalf("read through an inner link: %v %v", c, err)
	}
	if _, err := f.ws.Write("link", []byte("x")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("write over a link: %v", err)
	}
	for name, want := range map[string]string{"deep": "is a directory", ".": "workspace itself"} {
		if _, err := f.ws.Write(name, []byte("x")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("write %q: %v, want %q", name, err, want)
		}
	}
	if _, err := f.ws.Read("missing", 0, 0); !errors.Is(err, ErrNotExist) {
		t.Errorf("read missing: %v", err)
	}
	if left := tempFiles(t, f.dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestCreateAppend(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.ws.Create("c/x.py", []byte("a = 1"))
	must(t, err)
	if _, err := f.ws.Create("c/x.py", []byte("b")); !errors.Is(err, ErrExist) {
		t.Fatalf("create over a file: %v", err)
	}
	_, err = f.ws.Append("c/x.py", []byte("b = 2\n"), true)
	must(t, err)
	_, err = f.ws.Append("c/x.py", []byte("c = 3"), false)
	must(t, err)
	got, err := f.ws.ReadFile("c/x.py", 100)
	must(t, err)
	if string(got) != "a = 1\nb = 2\nc = 3" {
		t.Fatalf("content %q", got)
	}
	if _, err := f.ws.ReadFile("c/x.py", 5); err == nil || !strings.Contains(err.Error(), "the limit is 5") {
		t.Fatalf("ReadFile over its limit: %v", err)
	}
	if _, err := f.ws.Append("c/missing.py", []byte("x"), true); !errors.Is(err, ErrNotExist) {
		t.Fatalf("append to a missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "c/missing.py")); err == nil {
		t.Fatal("append created a file")
	}
	if left := tempFiles(t, f.dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestQuota(t *testing.T) {
	const block = 4096
	f, v := newVolumeFixture(t, 5*block, 0)
	_, err := f.ws.Write("a", bytes.Repeat([]byte("a"), 60))
	must(t, err)
	// Replacing a file counts only its new size: three blocks.
	_, err = f.ws.Write("a", bytes.Repeat([]byte("a"), 2*block+1))
	must(t, err)
	_, err = f.ws.Write("b", bytes.Repeat([]byte("b"), 2*block+1))
	var qe *QuotaError
	if !errors.As(err, &qe) || qe.Used != 3*block || qe.Quota != 5*block || qe.Size != 3*block {
		t.Fatalf("write over quota: %v (%+v)", err, qe)
	}
	for _, want := range []string{fmt.Sprint(3 * block), fmt.Sprint(5 * block), `"b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the refused write left a file: %v", err)
	}
	if _, err := f.ws.Append("a", bytes.Repeat([]byte("a"), 3*block), false); !errors.As(err, &qe) {
		t.Fatalf("append over quota: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "a")); len(got) != 2*block+1 {
		t.Fatalf("the refused append changed the file: %d bytes", len(got))
	}
	_, err = f.ws.Write("b", bytes.Repeat([]byte("b"), block+1))
	must(t, err)
	_, err = f.ws.Write("c", []byte("c"))
	if !errors.As(err, &qe) {
		t.Fatalf("create over quota: %v", err)
	}
	if u, _ := v.Usage(); u.Bytes != 5*block || u.Quota != 5*block || u.Entries != 6 {
		t.Errorf("usage %+v, want 5 blocks and 6 entries (2 files, 4 links)", u)
	}
	if left := tempFiles(t, f.dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestEntryCap: a write that would make more entries than the cap, the
// directories it creates included, is refused.
func TestEntryCap(t *testing.T) {
	f, _ := newVolumeFixture(t, 0, 7) // the fixture's 4 links are entries
	_, err := f.ws.Write("a", []byte("a"))
	must(t, err)
	_, err = f.ws.Write("d/e/f", []byte("f"))
	var qe *QuotaError
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "entry cap") {
		t.Fatalf("three entries past a cap of 7 with 5: %v", err)
	}
	_, err = f.ws.Write("d/f", []byte("f"))
	must(t, err)
	_, err = f.ws.Write("a", []byte("replaced, not added"))
	must(t, err)
}

// TestFailedWriteLeavesNothing fails a write after its temporary file was
// made.
func TestFailedWriteLeavesNothing(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.ws.Write("a.txt", []byte("old"))
	must(t, err)
	boom := errors.New("boom")
	_, err = f.ws.put(modeWrite, "a.txt", 3, func(tmp, _ *os.File) error {
		tmp.Write([]byte("ne"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "a.txt")); string(got) != "old" {
		t.Fatalf("content %q after a failed write", got)
	}
	if left := tempFiles(t, f.dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestRead(t *testing.T) {
	f := newFixture(t, Options{})
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...)
	must(t, os.WriteFile(filepath.Join(f.dir, "img"), png, 0o644))
	must(t, os.WriteFile(filepath.Join(f.dir, "d.json"), []byte(`{"a": 1}`), 0o644))
	must(t, os.WriteFile(filepath.Join(f.dir, "u.txt"), []byte("aé€😀z"), 0o644)) // 1+2+3+4+1 bytes
	must(t, syscall.Mkfifo(filepath.Join(f.dir, "fifo"), 0o644))
	must(t, os.Mkdir(filepath.Join(f.dir, "dir"), 0o755))

	c, err := f.ws.Read("img", 0, 0)
	must(t, err)
	if c.Text || c.MIMEType != "image/png" || !bytes.Equal(c.Data, png) {
		t.Errorf("png: %+v", c)
	}
	// A later page of a file without an extension is typed by the file's
	// start, not by the page's.
	c, err = f.ws.Read("img", 8, 0)
	must(t, err)
	if c.Text || c.MIMEType != "image/png" || !bytes.Equal(c.Data, png[8:]) {
		t.Errorf("png from offset 8: %+v", c)
	}
	c, err = f.ws.Read("d.json", 0, 0)
	must(t, err)
	if !c.Text || c.MIMEType != "application/json" {
		t.Errorf("json: %+v", c)
	}
	// Pages of 4 bytes never cut a character.
	var got []byte
	for off := int64(0); ; {
		c, err := f.ws.Read("u.txt", off, 4)
		must(t, err)
		if !c.Text || len(c.Data) == 0 {
			t.Fatalf("page at %d: %+v", off, c)
		}
		got = append(got, c.Data...)
		off += int64(len(c.Data))
		if !c.More {
			break
		}
	}
	if string(got) != "aé€😀z" {
		t.Errorf("pages joined: %q", got)
	}
	c, err = f.ws.Read("u.txt", 11, 0)
	if err != nil || len(c.Data) != 0 || c.More {
		t.Errorf("read at the end: %+v %v", c, err)
	}
	if _, err := f.ws.Read("u.txt", 12, 0); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("read past the end: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := f.ws.Read("fifo", 0, 0); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("read a FIFO: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	if _, err := f.ws.Read("dir", 0, 0); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("read a directory: %v", err)
	}
}

func TestList(t *testing.T) {
	f := newFixture(t, Options{})
	for _, p := range []string{"a.csv", "data/b.csv", "data/c.txt", "data/sub/d.csv"} {
		_, err := f.ws.Write(p, []byte("1234"))
		must(t, err)
	}
	paths := func(l *Listing) string {
		var ps []string
		for _, e := range l.Entries {
			ps = append(ps, e.Path)
		}
		return strings.Join(ps, " ")
	}
	tests := []struct {
		dir, pattern string
		limit        int
		want         string
		truncated    bool
	}{
		{dir: "", pattern: "*.csv", want: "a.csv data/b.csv data/sub/d.csv"},
		{dir: "data", pattern: "", want: "data/b.csv data/c.txt data/sub data/sub/d.csv"},
		{dir: ".", pattern: "data/*.csv", want: "data/b.csv"},
		{dir: "", pattern: "", limit: 3, want: "a.csv absfile data", truncated: true},
		{dir: "", pattern: "out*", want: "outdir outfile"}, // links are listed, not followed
	}
	for _, tt := range tests {
		l, err := f.ws.List(tt.dir, tt.pattern, tt.limit)
		must(t, err)
		if got := paths(l); got != tt.want || l.Truncated != tt.truncated {
			t.Errorf("List(%q, %q, %d) = %q truncated=%v, want %q %v", tt.dir, tt.pattern, tt.limit, got, l.Truncated, tt.want, tt.truncated)
		}
	}
	l, err := f.ws.List("data", "", 0)
	must(t, err)
	if e := l.Entries[0]; e.Size != 4 || e.IsDir || e.ModTime.IsZero() {
		t.Errorf("file entry %+v", e)
	}
	if e := l.Entries[2]; !e.IsDir || e.Size != 0 {
		t.Errorf("directory entry %+v", e)
	}
	if l, _ := f.ws.List("", "outfile", 0); len(l.Entries) != 1 || !l.Entries[0].Symlink {
		t.Errorf("symlink entry %+v", l.Entries)
	}
	if _, err := f.ws.List("a.csv", "", 0); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("list a file: %v", err)
	}
	if _, err := f.ws.List("", "[", 0); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestDelete(t *testing.T) {
	f := newFixture(t, Options{})
	for _, p := range []string{"f.txt", "full/x.txt"} {
		_, err := f.ws.Write(p, []byte("x"))
		must(t, err)
	}
	must(t, os.Mkdir(filepath.Join(f.dir, "empty"), 0o755))
	must(t, f.ws.Delete("f.txt", false))
	must(t, f.ws.Delete("empty", false))
	if err := f.ws.Delete("full", false); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("delete a full directory: %v", err)
	}
	must(t, f.ws.Delete("full", true))
	// A link pointing out goes itself; its target stays.
	must(t, f.ws.Delete("outdir", true))
	must(t, f.ws.Delete("outfile", false))
	if _, err := os.Stat(filepath.Join(f.outside, "secret.txt")); err != nil {
		t.Fatalf("deleting a link removed its target: %v", err)
	}
	for _, p := range []string{".", "a/.."} {
		if err := f.ws.Delete(p, true); err == nil || !strings.Contains(err.Error(), "workspace itself") {
			t.Errorf("delete %q: %v", p, err)
		}
	}
	if err := f.ws.Delete("f.txt", false); !errors.Is(err, ErrNotExist) {
		t.Errorf("delete a missing file: %v", err)
	}
	ents, _ := os.ReadDir(f.dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if got := strings.Join(left, " "); got != "absfile passwd" {
		t.Errorf("left %q", got)
	}
}

func TestSnapshot(t *testing.T) {
	f := newFixture(t, Options{})
	for _, p := range []string{"same", "touched", "replaced", "gone"} {
		_, err := f.ws.Write(p, []byte("1234"))
		must(t, err)
	}
	before := f.ws.Snapshot()
	must(t, os.WriteFile(filepath.Join(f.dir, "touched"), []byte("5678"), 0o644))
	future := time.Now().Add(time.Hour)
	must(t, os.Chtimes(filepath.Join(f.dir, "touched"), future, future))
	_, err := f.ws.Write("replaced", []byte("1234"))
	must(t, err)
	_, err = f.ws.Write("new/file", []byte("x"))
	must(t, err)
	must(t, os.Remove(filepath.Join(f.dir, "gone")))
	var got []string
	for _, c := range diffSnapshots(before, f.ws.Snapshot()) {
		got = append(got, fmt.Sprint(c.op, ":", c.path))
	}
	slices.Sort(got)
	// 0 created, 1 modified, 2 deleted
	if want := "0:new/file 1:replaced 1:touched 2:gone"; strings.Join(got, " ") != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if n, ok := before.Size("same"); !ok || n != 4 {
		t.Errorf("size %d %v", n, ok)
	}
}

func TestOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing owners needs root")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "ws")
	ws, err := Open(dir, Options{Owner: 65534})
	must(t, err)
	defer ws.Close()
	_, err = ws.Write("a/b/c.txt", []byte("x"))
	must(t, err)
	_, err = ws.Create("a/d.txt", []byte("x"))
	must(t, err)
	for _, p := range []string{"", "a", "a/b", "a/b/c.txt", "a/d.txt"} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%q owned by %d:%d, want 65534", p, st.Uid, st.Gid)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("workspace mode %v, want 0700", fi.Mode())
	}
}

// BenchmarkOpenSnapshot is what execute_code adds to every execution, twice:
// opening the workspace and recording its files.
func BenchmarkOpenSnapshot(b *testing.B) {
	for _, n := range []int{0, 100, 1000} {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "ws")
			ws, err := Open(dir, Options{})
			must(b, err)
			for i := range n {
				_, err := ws.Write(fmt.Sprintf("d%d/f%d", i%10, i), []byte("x"))
				must(b, err)
			}
			ws.Close()
			for b.Loop() {
				ws, err := Open(dir, Options{})
				must(b, err)
				ws.Snapshot()
				ws.Close()
			}
		})
	}
}

func TestOpenRemovesUnfinishedWrites(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	stale := []string{".codecell-0123456789abcdef.tmp", "sub/.codecell-fedcba9876543210.tmp"}
	for _, p := range stale {
		must(t, os.WriteFile(filepath.Join(dir, p), []byte("half"), 0o600))
	}
	must(t, os.WriteFile(filepath.Join(dir, "keep.tmp"), []byte("mine"), 0o600))
	// Only regular files are Write's: a directory of the code's with such a
	// name stays.
	must(t, os.Mkdir(filepath.Join(dir, ".codecell-dir.tmp"), 0o755))
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range stale {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
	for _, p := range []string{"keep.tmp", ".codecell-dir.tmp"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s, the code's, was removed: %v", p, err)
		}
	}
}

// TestDepth: a write goes no deeper than a walk looks, so every file it
// makes counts against the quota; a deeper tree the code made is walked to
// the bound and no further.
func TestDepth(t *testing.T) {
	f, v := newVolumeFixture(t, 1<<20, 0)
	deepest := strings.Repeat("d/", maxDepth) + "f"
	_, err := f.ws.Write(deepest, bytes.Repeat([]byte("x"), 60))
	must(t, err)
	if u, err := v.Usage(); err != nil || u.Entries != maxDepth+1+4 || u.Bytes < 4096*(maxDepth+1) {
		t.Fatalf("usage %+v, %v; want the file %d directories deep and its directories", u, err, maxDepth)
	}
	if l, err := f.ws.List("", "f", 0); err != nil || len(l.Entries) != 1 || l.Entries[0].Path != deepest {
		t.Fatalf("list: %+v %v", l, err)
	}
	tooDeep := strings.Repeat("e/", maxDepth+1) + "f"
	for name, op := range map[string]func() error{
		"write":  func() error { _, err := f.ws.Write(tooDeep, []byte("x")); return err },
		"create": func() error { _, err := f.ws.Create(tooDeep, []byte("x")); return err },
	} {
		if err := op(); !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), "directories deep") {
			t.Errorf("%s %d directories deep: %v, want ErrInvalidPath", name, maxDepth+1, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "e")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused deep write made directories: %v", err)
	}

	// The code's tree, deeper than the bound: listed down to it.
	must(t, os.MkdirAll(filepath.Join(f.dir, strings.Repeat("c/", maxDepth+10)), 0o755))
	l, err := f.ws.List("c", "", 0)
	must(t, err)
	if n := len(l.Entries); n != maxDepth+1 || l.Entries[n-1].Path != strings.Repeat("c/", maxDepth+1)+"c" {
		t.Fatalf("listed %d entries down to %q", n, l.Entries[len(l.Entries)-1].Path)
	}
}

func TestOpen(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "workspaces")
	dir := filepath.Join(parent, "ns")
	ws, err := Open(dir, Options{})
	must(t, err)
	_, err = ws.Write("a.txt", []byte("kept"))
	must(t, err)
	ws.Close()
	for p, want := range map[string]fs.FileMode{parent: 0o711, dir: 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, fi.Mode(), err, want)
		}
	}

	// An existing workspace is opened as it is.
	must(t, os.Chmod(dir, 0o750))
	ws, err = Open(dir+"/", Options{})
	must(t, err)
	defer ws.Close()
	if got, err := ws.ReadFile("a.txt", 10); err != nil || string(got) != "kept" {
		t.Fatalf("reopened: %q %v", got, err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o750 {
		t.Errorf("reopening changed the mode to %v", fi.Mode())
	}

	must(t, os.WriteFile(filepath.Join(parent, "file"), nil, 0o644))
	for _, bad := range []string{"relative/ws", filepath.Join(parent, "file"), filepath.Join(parent, "file", "ws")} {
		if ws, err := Open(bad, Options{}); err == nil {
			ws.Close()
			t.Errorf("Open(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), parent) {
			t.Errorf("Open(%q): %q names the host path", bad, err)
		}
	}
}

// TestFIFO: a FIFO the code put in the workspace blocks no operation and is
// never taken for a file.
func TestFIFO(t *testing.T) {
	f, _ := newVolumeFixture(t, 1<<20, 0)
	must(t, syscall.Mkfifo(filepath.Join(f.dir, "fifo"), 0o644))
	ops := []struct {
		name string
		op   func() error
		want string
	}{
		{"read", func() error { _, err := f.ws.Read("fifo", 0, 0); return err }, "not a regular file"},
		{"readall", func() error { _, err := f.ws.ReadFile("fifo", 10); return err }, "not a regular file"},
		{"write", func() error { _, err := f.ws.Write("fifo", []byte("x")); return err }, "not a regular file"},
		{"append", func() error { _, err := f.ws.Append("fifo", []byte("x"), true); return err }, "not a regular file"},
		{"create", func() error { _, err := f.ws.Create("fifo", []byte("x")); return err }, "exists"},
		{"list", func() error {
			l, err := f.ws.List("", "fifo", 0)
			if err == nil && (len(l.Entries) != 1 || l.Entries[0].IsDir || l.Entries[0].Symlink) {
				err = fmt.Errorf("listed as %+v", l.Entries)
			}
			return err
		}, ""},
		{"snapshot", func() error {
			if _, ok := f.ws.Snapshot().Size("fifo"); ok {
				return errors.New("in the snapshot")
			}
			return nil
		}, ""},
		{"delete", func() error { return f.ws.Delete("fifo", false) }, ""},
	}
	for _, tt := range ops {
		done := make(chan error, 1)
		go func() { done <- tt.op() }()
		select {
		case err := <-done:
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("%s a FIFO: %v, want %q", tt.name, err, tt.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s a FIFO blocked", tt.name)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.dir, "fifo")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the FIFO is still there after delete: %v", err)
	}
	if left := tempFiles(t, f.dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestReadLimits(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.ws.Write("big.txt", bytes.Repeat([]byte("x"), MaxReadLimit+10))
	must(t, err)
	for _, tt := range []struct{ limit, want int64 }{
		{0, DefaultReadLimit},
		{-1, DefaultReadLimit},
		{10, 10},
		{MaxReadLimit + 1, MaxReadLimit},
	} {
		c, err := f.ws.Read("big.txt", 0, tt.limit)
		must(t, err)
		if int64(len(c.Data)) != tt.want || !c.More || c.Size != MaxReadLimit+10 {
			t.Errorf("Read with limit %d: %d bytes, more=%v size=%d; want %d", tt.limit, len(c.Data), c.More, c.Size, tt.want)
		}
	}
	if _, err := f.ws.Read("big.txt", -1, 0); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative offset: %v", err)
	}
}

// TestCreateRace: Create never replaces what appears at its path while it
// writes, and leaves no temporary file.
func TestCreateRace(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.ws.put(modeCreate, "x.py", 3, func(tmp, _ *os.File) error {
		if err := os.WriteFile(filepath.Join(f.dir, "x.py"), []byte("the code's"), 0o644); err != nil {
			return err
		}
		_, err := tmp.Write([]byte("new"))
		return err
	})
	if !errors.Is(err, ErrExist) {
		t.Fatalf("create over a file that appeared: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "x.py")); string(got) != "the code's" {
		t.Fatalf("the file that appeared now holds %q", got)
	}
	if left := tempFiles(t, f.dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestDeleteKeepsLinkTargets: deleting a directory recursively removes the
// links in it, never what they point to, inside or out.
func TestDeleteKeepsLinkTargets(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.ws.Write("keep/inner.txt", []byte("x"))
	must(t, err)
	_, err = f.ws.Write("tree/sub/f.txt", []byte("x"))
	must(t, err)
	must(t, os.Symlink("../../outside", filepath.Join(f.dir, "tree", "out")))
	must(t, os.Symlink(f.outside, filepath.Join(f.dir, "tree", "sub", "abs")))
	must(t, os.Symlink("../keep", filepath.Join(f.dir, "tree", "in")))
	must(t, f.ws.Delete("tree", true))
	if _, err := os.Lstat(filepath.Join(f.dir, "tree")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("tree is still there: %v", err)
	}
	for _, p := range []string{filepath.Join(f.outside, "secret.txt"), filepath.Join(f.dir, "keep", "inner.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a link's target went with it: %v", err)
		}
	}
}

// TestVisitBound: List and Snapshot stop after maxVisit entries and say so.
func TestVisitBound(t *testing.T) {
	f := newFixture(t, Options{})
	for i := range 10 {
		_, err := f.ws.Write(fmt.Sprintf("d/f%d", i), nil)
		must(t, err)
	}
	defer func(v int) { maxVisit = v }(maxVisit)
	maxVisit = 5
	l, err := f.ws.List("d", "", 0)
	must(t, err)
	if len(l.Entries) != 5 || !l.Truncated {
		t.Errorf("list: %d entries, truncated=%v; want 5, true", len(l.Entries), l.Truncated)
	}
	// Entries that do not match count too: the bound is on the walk.
	if l, err := f.ws.List("d", "nothing", 0); err != nil || len(l.Entries) != 0 || !l.Truncated {
		t.Errorf("list matching nothing: %+v %v; want truncated", l, err)
	}
	if s := f.ws.Snapshot(); !s.Truncated || len(s.files) > 5 {
		t.Errorf("snapshot: %d files, truncated=%v", len(s.files), s.Truncated)
	}
	maxVisit = 100
	if l, _ := f.ws.List("d", "", 0); l.Truncated || len(l.Entries) != 10 {
		t.Errorf("under the bound: %d entries, truncated=%v", len(l.Entries), l.Truncated)
	}
}
