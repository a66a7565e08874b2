package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The index: what each workspace of a process holds (every entry's kind,
// size, allocated bytes, modification time and inode), kept current by
// inotify with one watch per directory, so that neither an execution's
// files nor the quota need a walk. A walk happens once, when a workspace is
// first indexed, and again only after the kernel's event queue overflowed.
//
// One inotify instance serves every workspace of the process (instances
// are few: 128 per user by default), read by one goroutine. Every entry is
// looked at through descriptors opened one component at a time without
// following links, so a path longer than PATH_MAX is indexed like any
// other, and the code cannot point the index outside its workspace by
// swapping a directory for a link.
//
// What it does not see: space held by files the code unlinked while it
// keeps them open (they have no name; they are freed when the execution's
// processes end). Stores through a memory mapping report no event either;
// the only growth they can make, a sparse file's holes filled, is looked
// for by restatSparse (see sparse.go).

// watchMask is what each directory's watch reports. IN_EXCL_UNLINK keeps a
// file that was unlinked but is still open from reporting its writes under
// its old name.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// syncTimeout bounds how long a barrier waits for the watcher to catch up.
const syncTimeout = 10 * time.Second

// dirFDCache is how many directory descriptors the watcher keeps open
// while it applies one batch of events, so that the events of a busy
// directory cost one fstatat each. They are closed after each batch: an
// open descriptor keeps a removed directory's inode, and with it a place
// under the image's cap on entries, until it is closed.
const dirFDCache = 64

// errWatcherClosed is the error of an index whose watcher stopped.
var errWatcherClosed = errors.New("the workspace watcher stopped")

// kind is the type of an indexed entry.
type kind uint8

const (
	kindFile kind = iota
	kindDir
	kindLink
	kindOther // FIFO, socket
)

func kindOf(mode uint32) kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return kindFile
	case unix.S_IFDIR:
		return kindDir
	case unix.S_IFLNK:
		return kindLink
	}
	return kindOther
}

// node is an indexed entry. The tree's root is the workspace itself.
type node struct {
	name   string
	parent *node
	kids   map[string]*node // directories only
	wd     int32            // a directory's watch; 0 for none
	kind   kind
	size   int64 // bytes, as st_size
	alloc  int64 // bytes allocated on disk, as st_blocks counts them
	mtime  int64
	ino    uint64
	// holes is where a sparse file (see sparse.go) had holes when last
	// looked at; nil for any other entry.
	holes *holeMap
}

// path is n's path relative to the workspace, with forward slashes.
func (n *node) path() string {
	if n.parent == nil {
		return "."
	}
	var parts []string
	for p := n; p.parent != nil; p = p.parent {
		parts = append(parts, p.name)
	}
	slices.Reverse(parts)
	return strings.Join(parts, "/")
}

// op is what happened to a path.
type op uint8

const (
	opCreate op = iota
	opModify
	opDelete
)

// change is one entry of a tree's change log.
type change struct {
	path  string
	op    op
	kind  kind
	moved bool  // by a rename: no bytes were written
	prev  int64 // opModify: the size before
	alloc int64 // opCreate: the bytes allocated then
	// opModify of a file: its allocation before, and where its holes
	// were if it was sparse (nil if not).
	prevAlloc int64
	holes     *holeMap
}

// tree is the index of one workspace. The watcher's mutex guards it.
type tree struct {
	dir    string
	rootFD int // the workspace directory, open; -1 once closed
	root   *node
	bytes  int64 // allocated bytes of every entry but the root
	count  int64 // entries but the root
	// log holds the changes since the oldest open run began; seq is the
	// sequence number of log[0]. Nothing is logged while no run is open.
	log  []change
	seq  uint64
	runs map[*Run]struct{}
	// idle holds the changes made while no run was open since the last
	// Begin, the newest maxIdle of them (idleCut says older ones were
	// dropped): a live session's thread or memory mapping can change the
	// workspace between its executions, and Begin undoes those changes
	// when they took it past its limits, so that the next execution is
	// not blamed for them.
	idle    []change
	idleCut bool
	// sparse is the files whose allocation is below their size: their
	// allocation can grow without an event (see sparse.go).
	sparse map[*node]struct{}
	// onChange, when set, is called (with the watcher's mutex held) after
	// every batch of events that changed the tree while a run is open.
	onChange func()
	err      error // the index can no longer be trusted (watch limit, workspace removed)
}

// watcher is a process's inotify instance and the trees it keeps.
type watcher struct {
	f       *os.File // the inotify descriptor, non-blocking, read by loop
	fd      int      // f's descriptor: f.Fd() would put f in blocking mode
	syncDir string   // where barriers create their marker files
	syncWD  int32

	mu      sync.Mutex
	trees   map[*tree]struct{}
	byWD    map[int32]*node
	treeOf  map[*node]*tree // the tree of each watched directory's node
	fds     map[*node]int   // open directory descriptors, at most dirFDCache
	fdOrder []*node         // oldest first
	moves   map[uint32]movedOut
	nextBar uint64
	bars    map[uint64]chan struct{}
	err     error // set when loop ended
	done    chan struct{}
}

// movedOut is an entry renamed away whose destination is not known yet.
type movedOut struct {
	t    *tree
	n    *node
	path string
}

// newWatcher starts an inotify instance. syncDir is a private directory of
// this process for barrier markers; it must exist.
func newWatcher(syncDir string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &watcher{
		f:       os.NewFile(uintptr(fd), "inotify"),
		fd:      fd,
		syncDir: syncDir,
		trees:   map[*tree]struct{}{},
		byWD:    map[int32]*node{},
		treeOf:  map[*node]*tree{},
		fds:     map[*node]int{},
		moves:   map[uint32]movedOut{},
		bars:    map[uint64]chan struct{}{},
		done:    make(chan struct{}),
	}
	// The anchor is what barriers link their markers to (see sync).
	afd, err := unix.Open(filepath.Join(syncDir, syncAnchor), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		w.f.Close()
		return nil, fmt.Errorf("inotify: %w", err)
	}
	unix.Close(afd)
	wd, err := unix.InotifyAddWatch(fd, syncDir, unix.IN_CREATE|unix.IN_ONLYDIR)
	if err != nil {
		w.f.Close()
		return nil, fmt.Errorf("inotify: watch %s: %w", syncDir, err)
	}
	w.syncWD = int32(wd)
	go w.loop()
	return w, nil
}

// close stops the watcher; its trees become unusable.
func (w *watcher) close() {
	w.f.Close()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for t := range w.trees {
		w.dropTreeLocked(t)
	}
}

// loop reads and applies events until the descriptor is closed. It reads
// them with the mutex held, so that events are never out of the queue
// without being applied: sync relies on it.
func (w *watcher) loop() {
	defer close(w.done)
	buf := make([]byte, 256<<10)
	rc, err := w.f.SyscallConn()
	for err == nil {
		var rerr error
		err = rc.Read(func(fd uintptr) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			var n int
			n, rerr = unix.Read(int(fd), buf)
			if rerr == unix.EAGAIN {
				return false // wait until there are events
			}
			if n > 0 {
				w.handle(buf[:n])
			}
			return true
		})
		if err == nil && rerr != nil && rerr != unix.EINTR {
			err = rerr
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = errWatcherClosed
	for t := range w.trees {
		if t.err == nil {
			t.err = errWatcherClosed
		}
	}
	for _, c := range w.bars {
		close(c)
	}
	clear(w.bars)
}

// event is one inotify event, its name copied out.
type event struct {
	wd     int32
	mask   uint32
	cookie uint32
	name   string
}

func parseEvents(buf []byte) []event {
	var evs []event
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		end := off + unix.SizeofInotifyEvent + int(raw.Len)
		if end > len(buf) {
			break
		}
		name := buf[off+unix.SizeofInotifyEvent : end]
		if i := slices.Index(name, 0); i >= 0 {
			name = name[:i]
		}
		evs = append(evs, event{wd: raw.Wd, mask: raw.Mask, cookie: raw.Cookie, name: string(name)})
		off = end
	}
	return evs
}

// dirty is an entry to look at again: (directory, name).
type dirty struct {
	dir  *node
	name string
}

// handle applies one read's worth of events. Events that only say an entry
// changed are gathered and each entry is looked at once, after; a rename
// or a removal is applied in order, after the entries gathered before it.
func (w *watcher) handle(buf []byte) {
	touched := map[*tree]bool{}
	var pending []dirty
	seen := map[dirty]bool{}
	flush := func() {
		dirs := map[*node]bool{}
		for _, d := range pending {
			if t := w.treeOf[d.dir]; t != nil && t.err == nil {
				if w.refresh(t, d.dir, d.name) {
					touched[t] = true
				}
				dirs[d.dir] = true
			}
		}
		// A directory's own size grows with its entries, which no event
		// reports: it is looked at once per batch that changed it.
		for d := range dirs {
			if t := w.treeOf[d]; t != nil && t.err == nil {
				w.restatDir(t, d)
			}
		}
		pending = pending[:0]
		clear(seen)
	}
	for _, ev := range parseEvents(buf) {
		if ev.mask&unix.IN_Q_OVERFLOW != 0 {
			flush()
			w.rescanAllLocked()
			for t := range w.trees {
				touched[t] = true
			}
			continue
		}
		if ev.wd == w.syncWD {
			if ev.mask&unix.IN_CREATE != 0 {
				// Everything before the marker is in: the entries
				// gathered so far are looked at before its waiter wakes.
				flush()
				w.finishMoves(touched)
				if id, err := strconv.ParseUint(ev.name, 10, 64); err == nil {
					if c, ok := w.bars[id]; ok {
						close(c)
						delete(w.bars, id)
					}
				}
			}
			continue
		}
		d := w.byWD[ev.wd]
		if d == nil {
			continue
		}
		t := w.treeOf[d]
		if t == nil || t.err != nil {
			continue
		}
		switch {
		case ev.mask&unix.IN_IGNORED != 0:
			// The directory is gone (or its watch was removed): its
			// parent's events say what became of it.
			if d.wd == ev.wd {
				d.wd = 0
			}
			delete(w.byWD, ev.wd)
			if d == t.root {
				t.err = errors.New("the workspace directory was removed or unmounted")
			}
		case ev.name == "":
			if d == t.root && ev.mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_UNMOUNT) != 0 {
				t.err = errors.New("the workspace directory was removed, moved or unmounted")
			}
		case ev.mask&unix.IN_MOVED_FROM != 0:
			flush()
			if n := d.kids[ev.name]; n != nil {
				p := n.path()
				w.detach(n)
				w.moves[ev.cookie] = movedOut{t: t, n: n, path: p}
			}
			touched[t] = true
		case ev.mask&unix.IN_MOVED_TO != 0:
			flush()
			if m, ok := w.moves[ev.cookie]; ok && m.t == t {
				delete(w.moves, ev.cookie)
				w.moveIn(t, d, ev.name, m)
			} else {
				if ok { // from another workspace of this process: gone from there
					delete(w.moves, ev.cookie)
					w.dropSubtree(m.t, m.n, m.path, true)
				}
				w.refresh(t, d, ev.name)
			}
			touched[t] = true
		default:
			k := dirty{d, ev.name}
			if !seen[k] {
				seen[k] = true
				pending = append(pending, k)
			}
		}
	}
	flush()
	w.closeFDs()
	for t := range touched {
		if t.onChange != nil && len(t.runs) > 0 {
			t.onChange()
		}
	}
}

// closeFDs closes every cached directory descriptor.
func (w *watcher) closeFDs() {
	for _, fd := range w.fds {
		unix.Close(fd)
	}
	clear(w.fds)
	w.fdOrder = w.fdOrder[:0]
}

// finishMoves treats entries renamed away whose destination never came as
// removed: they left the workspace.
func (w *watcher) finishMoves(touched map[*tree]bool) {
	for c, m := range w.moves {
		w.dropSubtree(m.t, m.n, m.path, true)
		touched[m.t] = true
		delete(w.moves, c)
	}
}

// maxIdle bounds the changes kept between runs (tree.idle).
const maxIdle = 4096

// record appends a change to t's log while a run is open, else to the
// changes between runs.
func (t *tree) record(c change) {
	if len(t.runs) > 0 {
		t.log = append(t.log, c)
		return
	}
	if len(t.idle) >= maxIdle {
		// The newest are kept: they are what Begin undoes first.
		t.idle = slices.Delete(t.idle, 0, maxIdle/2)
		t.idleCut = true
	}
	t.idle = append(t.idle, c)
}

// track keeps t.sparse and n.holes in line with n's stat: a sparse file's
// holes are listed (through dfd, its directory), any other entry's dropped.
func (t *tree) track(n *node, dfd int) {
	if !sparse(n.kind, n.size, n.alloc) {
		n.holes = nil
		delete(t.sparse, n)
		return
	}
	n.holes = holesAt(dfd, n.name, n.ino, n.size)
	t.sparse[n] = struct{}{}
}

// restatSparse looks again at every file whose allocation can have grown
// without an event (stores through a memory mapping into its holes),
// bringing the index in line; what changed is recorded like any change, in
// the open runs' log or between runs. It reports whether anything did.
// The watcher's mutex is held.
func (w *watcher) restatSparse(t *tree) bool {
	if t.err != nil || len(t.sparse) == 0 {
		return false
	}
	changed := false
	for n := range t.sparse {
		if n.parent == nil {
			continue // renamed away; its other half says where
		}
		if w.refresh(t, n.parent, n.name) {
			changed = true
		}
	}
	w.closeFDs()
	if changed && t.onChange != nil && len(t.runs) > 0 {
		t.onChange()
	}
	return changed
}

// account adds a node's allocation and count to the tree's totals (sign
// +1) or takes them away (-1).
func (t *tree) account(n *node, sign int64) {
	t.bytes += sign * n.alloc
	t.count += sign
}

// refresh looks at the entry name of directory d again and brings the index
// in line with it: added, updated or dropped. A new directory is watched
// and indexed with what it holds. It reports whether anything changed.
func (w *watcher) refresh(t *tree, d *node, name string) bool {
	dfd, err := w.dirFD(t, d)
	if err != nil {
		return false // d is going away; its events say so
	}
	var st unix.Stat_t
	err = unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	old := d.kids[name]
	if err != nil {
		if old == nil {
			return false
		}
		w.dropSubtree(t, old, old.path(), false)
		return true
	}
	k := kindOf(st.Mode)
	if old != nil && (old.kind != k || (k == kindDir && old.ino != st.Ino)) {
		// Replaced by another kind of entry, or by another directory.
		w.dropSubtree(t, old, old.path(), false)
		old = nil
	}
	if old == nil {
		n := &node{name: name, parent: d, kind: k}
		setStat(n, &st)
		t.track(n, dfd)
		d.kids[name] = n
		t.account(n, +1)
		t.record(change{path: n.path(), op: opCreate, kind: k, alloc: n.alloc})
		if k == kindDir {
			n.kids = map[string]*node{}
			w.watchDir(t, n)
		}
		return true
	}
	if old.size == st.Size && old.mtime == st.Mtim.Nano() && old.ino == st.Ino && old.alloc == st.Blocks*512 {
		return false
	}
	prev, prevAlloc, holes := old.size, old.alloc, old.holes
	t.bytes -= old.alloc
	setStat(old, &st)
	t.bytes += old.alloc
	t.track(old, dfd)
	if k != kindDir {
		t.record(change{path: old.path(), op: opModify, kind: k, prev: prev, prevAlloc: prevAlloc, holes: holes})
	}
	return true
}

// restatDir updates directory d's own size in the index.
func (w *watcher) restatDir(t *tree, d *node) {
	fd, err := w.dirFD(t, d)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Ino != d.ino {
		return
	}
	if d != t.root {
		t.bytes += st.Blocks*512 - d.alloc
	}
	setStat(d, &st)
}

func setStat(n *node, st *unix.Stat_t) {
	n.size, n.alloc, n.mtime, n.ino = st.Size, st.Blocks*512, st.Mtim.Nano(), st.Ino
}

// watchDir watches directory n and indexes what it holds, each entry
// recorded as created while a run is open. A directory that cannot be
// watched makes the whole tree untrustworthy.
func (w *watcher) watchDir(t *tree, n *node) {
	fd, err := w.dirFD(t, n)
	if err != nil {
		return // gone already; its parent's events say so
	}
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return
		}
		if errors.Is(err, unix.ENOSPC) {
			err = fmt.Errorf("%w (the limit of inotify watches, /proc/sys/fs/inotify/max_user_watches, is reached)", err)
		}
		t.err = fmt.Errorf("watch %s: %w", n.path(), err)
		return
	}
	if prev := w.byWD[int32(wd)]; prev != nil && prev != n {
		// The same directory under two nodes: the old node is stale.
		prev.wd = 0
	}
	n.wd = int32(wd)
	w.byWD[n.wd] = n
	w.treeOf[n] = t
	w.scanDir(t, n)
}

// scanDir brings the index of directory n in line with what it holds now.
func (w *watcher) scanDir(t *tree, n *node) {
	fd, err := w.dirFD(t, n)
	if err != nil {
		return
	}
	names, err := readNames(fd)
	if err != nil {
		return
	}
	present := make(map[string]bool, len(names))
	for _, name := range names {
		present[name] = true
		w.refresh(t, n, name)
	}
	for name, kid := range n.kids {
		if !present[name] {
			w.dropSubtree(t, kid, kid.path(), false)
		}
	}
}

// readNames lists the directory open at fd.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil && err != io.EOF && len(names) == 0 {
		return nil, err
	}
	return names, nil
}

// dirFD returns a descriptor of directory n, opened one component at a
// time from the workspace's root without following links, and checks it is
// still the directory indexed. The watcher owns it; the caller must not
// close it.
func (w *watcher) dirFD(t *tree, n *node) (int, error) {
	if n == t.root {
		if t.rootFD < 0 {
			return -1, errWatcherClosed
		}
		return t.rootFD, nil
	}
	if n.parent == nil {
		return -1, errors.New("renamed away") // its destination is not known yet
	}
	if fd, ok := w.fds[n]; ok {
		return fd, nil
	}
	pfd, err := w.dirFD(t, n.parent)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Openat(pfd, n.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Ino != n.ino {
		unix.Close(fd)
		return -1, errors.New("replaced")
	}
	if len(w.fdOrder) >= dirFDCache {
		old := w.fdOrder[0]
		w.fdOrder = w.fdOrder[1:]
		unix.Close(w.fds[old])
		delete(w.fds, old)
	}
	w.fds[n] = fd
	w.fdOrder = append(w.fdOrder, n)
	return fd, nil
}

// forgetFD closes the cached descriptor of n, if any.
func (w *watcher) forgetFD(n *node) {
	fd, ok := w.fds[n]
	if !ok {
		return
	}
	unix.Close(fd)
	delete(w.fds, n)
	if i := slices.Index(w.fdOrder, n); i >= 0 {
		w.fdOrder = slices.Delete(w.fdOrder, i, i+1)
	}
}

// detach takes n out of its parent, keeping it and its subtree (and their
// watches) for a rename's other half. Its totals go with it.
func (w *watcher) detach(n *node) {
	t := w.treeOf[n.parent]
	delete(n.parent.kids, n.name)
	n.parent = nil
	if t == nil {
		return
	}
	walkNodes(n, func(x *node) {
		t.account(x, -1)
		w.forgetFD(x)
	})
}

// moveIn puts an entry renamed within the workspace at its new place: its
// files are recorded as gone from their old paths and created at the new
// ones (moved: no bytes were written).
func (w *watcher) moveIn(t *tree, d *node, name string, m movedOut) {
	if old := d.kids[name]; old != nil {
		w.dropSubtree(t, old, old.path(), false) // replaced by the rename
	}
	n := m.n
	oldPrefix := m.path
	n.name, n.parent = name, d
	d.kids[name] = n
	newPrefix := n.path()
	walkRel(n, "", func(x *node, rel string) {
		t.account(x, +1)
		if x.kind == kindDir {
			w.treeOf[x] = t
		}
		t.record(change{path: oldPrefix + rel, op: opDelete, kind: x.kind, moved: true})
		t.record(change{path: newPrefix + rel, op: opCreate, kind: x.kind, moved: true, alloc: x.alloc})
	})
	// Whatever changed in it while it moved shows when it is looked at.
	w.refresh(t, d, name)
}

// dropSubtree removes n and everything beneath it from the index, recording
// each entry as deleted at its path (p is n's path). detached says n was
// already taken out of its parent, and out of the totals (a rename away).
func (w *watcher) dropSubtree(t *tree, n *node, p string, detached bool) {
	if !detached && n.parent != nil {
		delete(n.parent.kids, n.name)
	}
	walkRel(n, "", func(x *node, rel string) {
		if !detached {
			t.account(x, -1)
		}
		t.record(change{path: p + rel, op: opDelete, kind: x.kind})
		delete(t.sparse, x)
		w.forgetFD(x)
		if x.wd != 0 {
			if w.byWD[x.wd] == x {
				unix.InotifyRmWatch(w.fd, uint32(x.wd))
				delete(w.byWD, x.wd)
			}
			x.wd = 0
		}
		delete(w.treeOf, x)
	})
	n.parent = nil
}

// walkNodes calls fn for n and every node beneath it, parents first.
func walkNodes(n *node, fn func(*node)) {
	fn(n)
	for _, k := range n.kids {
		walkNodes(k, fn)
	}
}

// walkRel is walkNodes that also gives each node's path below n: "" for n,
// "/a/b" for a node two levels down.
func walkRel(n *node, rel string, fn func(x *node, rel string)) {
	fn(n, rel)
	for name, k := range n.kids {
		walkRel(k, rel+"/"+name, fn)
	}
}

// addTree indexes the workspace at dir: one walk, a watch per directory.
func (w *watcher) addTree(dir string) (*tree, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	t := &tree{dir: dir, rootFD: fd, runs: map[*Run]struct{}{}, sparse: map[*node]struct{}{}}
	t.root = &node{kind: kindDir, kids: map[string]*node{}}
	setStat(t.root, &st)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		unix.Close(fd)
		return nil, w.err
	}
	w.trees[t] = struct{}{}
	w.treeOf[t.root] = t
	w.watchDir(t, t.root)
	w.closeFDs()
	// What the workspace held before it was indexed is not a change
	// between runs: nothing undoes it.
	t.idle, t.idleCut = nil, false
	if t.err != nil {
		err := t.err
		w.dropTreeLocked(t)
		return nil, err
	}
	return t, nil
}

// dropTree stops indexing t.
func (w *watcher) dropTree(t *tree) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropTreeLocked(t)
}

func (w *watcher) dropTreeLocked(t *tree) {
	if _, ok := w.trees[t]; !ok {
		return
	}
	delete(w.trees, t)
	walkNodes(t.root, func(x *node) {
		w.forgetFD(x)
		if x.wd != 0 && w.byWD[x.wd] == x {
			unix.InotifyRmWatch(w.fd, uint32(x.wd))
			delete(w.byWD, x.wd)
		}
		delete(w.treeOf, x)
	})
	if t.rootFD >= 0 {
		unix.Close(t.rootFD)
		t.rootFD = -1
	}
	if t.err == nil {
		t.err = errWatcherClosed
	}
}

// rescanAllLocked brings every tree in line with its workspace after the
// kernel dropped events: a walk of each, recording what differs.
func (w *watcher) rescanAllLocked() {
	for t := range w.trees {
		if t.err == nil {
			w.rescan(t, t.root)
		}
	}
}

func (w *watcher) rescan(t *tree, n *node) {
	w.scanDir(t, n)
	for _, k := range n.kids {
		if k.kind == kindDir && t.err == nil {
			if k.wd == 0 {
				w.watchDir(t, k)
			}
			w.rescan(t, k)
		}
	}
}

// syncAnchor is the file in the sync directory that barrier markers are
// hard links to; its name is not a number, so its own event is no barrier's.
const syncAnchor = "anchor"

// sync returns once every event that happened before it was called has been
// applied, or reports false after syncTimeout. It links a marker file into
// the sync directory: its event comes after all of those.
func (w *watcher) sync() bool {
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return false
	}
	// Events are queued by the system call that caused them, before it
	// returns, and loop takes them out of the queue only with the mutex
	// held, applying them at once. So with the queue empty now (and no
	// rename waiting for its other half, which a marker would settle),
	// every event that happened before this call is applied already. That
	// is the common case, an execution that changed nothing; the marker's
	// round trip through loop took 0.1 ms at p50 but 10 ms at p99 on a
	// loaded machine, twice per execution.
	if n, err := unix.IoctlGetInt(w.fd, unix.TIOCINQ); err == nil && n == 0 && len(w.moves) == 0 {
		w.mu.Unlock()
		return true
	}
	w.nextBar++
	id := w.nextBar
	c := make(chan struct{})
	w.bars[id] = c
	w.mu.Unlock()
	// The marker is a hard link to the anchor, not a new file: creating
	// an inode took up to 1.7 ms on ext4 under load, twice per execution,
	// where a link takes about 15 us. IN_CREATE reports both alike.
	p := filepath.Join(w.syncDir, strconv.FormatUint(id, 10))
	err := unix.Link(filepath.Join(w.syncDir, syncAnchor), p)
	if err == nil {
		unix.Unlink(p)
	}
	ok := err == nil
	if ok {
		timer := time.NewTimer(syncTimeout)
		select {
		case <-c:
		case <-timer.C:
			ok = false
		}
		timer.Stop()
	}
	w.mu.Lock()
	delete(w.bars, id)
	if w.err != nil {
		ok = false
	}
	w.mu.Unlock()
	return ok
}
