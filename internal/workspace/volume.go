package workspace

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ImageMode says whether workspaces live in filesystem images of their own.
type ImageMode int

const (
	// ImagesOff keeps every workspace a plain directory: the quota is
	// watched, not enforced by the kernel.
	ImagesOff ImageMode = iota
	// ImagesAuto puts a workspace in an image when the host allows it
	// (root, loop devices, mkfs.ext4), else keeps it a directory.
	ImagesAuto
	// ImagesOn requires images: a workspace that cannot have one fails.
	ImagesOn
)

// VolumeOptions configure Volumes. The zero value is plain directories
// without a quota, files owned by the user codecell runs as.
type VolumeOptions struct {
	// Quota bounds the disk space of a workspace, in bytes allocated (as
	// du counts them: a small file takes a whole block, a directory too);
	// 0 means none.
	Quota int64
	// MaxEntries bounds the files, directories and links of a workspace;
	// 0 means none.
	MaxEntries int64
	// Owner is the uid and gid given to what codecell creates in a
	// workspace (see Options.Owner).
	Owner  int
	Images ImageMode
	// StateDir is a private directory of this process; the watcher keeps
	// its markers in it. "" makes one under os.TempDir(), removed by Close.
	StateDir string
	Logger   *slog.Logger // nil means silent
}

// Volumes are the workspaces one process uses: where each lives (a plain
// directory or a mounted filesystem image), what it holds, and its quota.
// It is the one place that knows a workspace's size: nothing else walks a
// workspace to measure it. Its methods are safe for concurrent use.
type Volumes struct {
	opts     VolumeOptions
	log      *slog.Logger
	imageErr error // why workspaces are not put in images; nil when they are

	w       *watcher // nil when inotify is unavailable (werr says why)
	werr    error
	syncDir string
	ownSync bool // syncDir was made here and goes with Close

	mu     sync.Mutex
	vols   map[string]*volSlot
	closed bool
	// releasing counts the Releases under way, which Close waits for: a
	// process that exits while one unmounts (a server stopped as its idle
	// namespaces are released) would leave that image mounted.
	releasing sync.WaitGroup
}

// volSlot is a workspace being set up or set up; ready is closed once v or
// err is set.
type volSlot struct {
	ready chan struct{}
	v     *Volume
	err   error
}

// NewVolumes prepares the workspaces of this process. With ImagesOn it fails
// when the host cannot mount images.
func NewVolumes(opts VolumeOptions) (*Volumes, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	vs := &Volumes{opts: opts, log: log, vols: map[string]*volSlot{}}
	switch opts.Images {
	case ImagesOff:
		vs.imageErr = errors.New("turned off (sandbox.workspaceImages is off)")
	default:
		vs.imageErr = imageSupport()
		if vs.imageErr == nil && opts.Quota <= 0 {
			vs.imageErr = errors.New("there is no workspace quota to enforce")
		}
		if vs.imageErr != nil && opts.Images == ImagesOn {
			return nil, fmt.Errorf("workspace images are required (sandbox.workspaceImages is on) but cannot be used: %w", vs.imageErr)
		}
	}
	vs.syncDir = opts.StateDir
	if vs.syncDir == "" {
		d, err := os.MkdirTemp("", "codecell-watch-")
		if err != nil {
			return nil, fmt.Errorf("workspace watcher: %w", err)
		}
		vs.syncDir, vs.ownSync = d, true
	} else {
		vs.syncDir = filepath.Join(vs.syncDir, "watch")
		if err := os.MkdirAll(vs.syncDir, 0o700); err != nil {
			return nil, fmt.Errorf("workspace watcher: %w", err)
		}
	}
	vs.w, vs.werr = newWatcher(vs.syncDir)
	if vs.werr != nil {
		log.Warn("workspaces: no inotify; every execution walks its workspace for its files and quota", "error", vs.werr)
	}
	return vs, nil
}

// ImageError says why workspaces are not put in filesystem images, or nil
// when they are (for codecell doctor).
func (vs *Volumes) ImageError() error { return vs.imageErr }

// WatchError says why workspaces are not watched with inotify, or nil.
func (vs *Volumes) WatchError() error { return vs.werr }

// Options returns the options in force.
func (vs *Volumes) Options() VolumeOptions { return vs.opts }

// Volume returns the workspace at dir (an absolute host path), setting it
// up the first time: created, put in an image (an existing directory's
// content moved in) and indexed. Later calls return at once.
func (vs *Volumes) Volume(dir string) (*Volume, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("workspace directory %q is not absolute", dir)
	}
	dir = filepath.Clean(dir)
	for {
		vs.mu.Lock()
		if vs.closed {
			vs.mu.Unlock()
			return nil, errors.New("workspaces are closed")
		}
		slot, ok := vs.vols[dir]
		if !ok {
			slot = &volSlot{ready: make(chan struct{})}
			vs.vols[dir] = slot
			vs.mu.Unlock()
			slot.v, slot.err = vs.open(dir)
			close(slot.ready)
			if slot.err != nil {
				vs.mu.Lock()
				delete(vs.vols, dir)
				vs.mu.Unlock()
			}
			return slot.v, slot.err
		}
		vs.mu.Unlock()
		<-slot.ready
		if slot.err != nil {
			return nil, slot.err
		}
		if slot.v.current() {
			return slot.v, nil
		}
		// Removed or unmounted behind this process's back: set up again.
		vs.mu.Lock()
		if vs.vols[dir] == slot {
			delete(vs.vols, dir)
		}
		vs.mu.Unlock()
		slot.v.close(false)
	}
}

// open sets up the workspace at dir.
func (vs *Volumes) open(dir string) (*Volume, error) {
	v := &Volume{vs: vs, dir: dir, quota: vs.opts.Quota, maxEntries: vs.opts.MaxEntries}
	if vs.imageErr == nil {
		img, err := mountImage(dir, vs.opts, vs.log)
		switch {
		case err == nil:
			v.img = img
		case vs.opts.Images == ImagesOn:
			return nil, err
		default:
			vs.log.Warn("workspace: no filesystem image; the quota is watched, not enforced by the kernel", "error", err)
		}
	}
	if v.img == nil {
		if err := createDir(dir, vs.opts.Owner); err != nil {
			return nil, fmt.Errorf("create the workspace: %w", causeOf(err))
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		v.close(false)
		return nil, fmt.Errorf("open the workspace: %w", err)
	}
	v.dev, v.ino = st.Dev, st.Ino
	if vs.w != nil {
		t, err := vs.w.addTree(dir)
		if err != nil {
			vs.log.Warn("workspace: not watched; every execution walks it", "error", err)
			v.pollErr = err
		} else {
			v.t = t
			vs.w.mu.Lock()
			t.onChange = v.checkBreachLocked
			vs.w.mu.Unlock()
		}
	} else {
		v.pollErr = vs.werr
	}
	return v, nil
}

// Release stops watching the workspace at dir and unmounts its image if
// no other process uses it; its next Volume sets it up again. The caller
// makes sure nothing uses it meanwhile (no execution, session or file
// operation): a Volume of it that is still held goes on naming a
// directory that no longer is its workspace.
func (vs *Volumes) Release(dir string) error {
	dir = filepath.Clean(dir)
	vs.mu.Lock()
	slot := vs.vols[dir]
	delete(vs.vols, dir)
	if slot != nil {
		vs.releasing.Add(1) // Close has not taken the slots: it waits
	}
	vs.mu.Unlock()
	if slot == nil {
		return nil
	}
	defer vs.releasing.Done()
	<-slot.ready
	if slot.v == nil {
		return nil
	}
	return slot.v.close(true)
}

// Close stops watching and unmounts the images no other process uses.
func (vs *Volumes) Close() error {
	vs.mu.Lock()
	vs.closed = true
	slots := vs.vols
	vs.vols = map[string]*volSlot{}
	vs.mu.Unlock()
	var errs []error
	for _, s := range slots {
		<-s.ready
		if s.v != nil {
			errs = append(errs, s.v.close(true))
		}
	}
	vs.releasing.Wait()
	if vs.w != nil {
		vs.w.close()
	}
	if vs.ownSync {
		os.RemoveAll(vs.syncDir)
	}
	return errors.Join(errs...)
}

// Volume is one workspace, set up. Its methods are safe for concurrent use.
type Volume struct {
	vs         *Volumes
	dir        string
	img        *image // nil: a plain directory
	t          *tree  // nil: not watched (pollErr says why); guarded by vs.w.mu
	pollErr    error
	dev, ino   uint64 // the directory when set up
	quota      int64
	maxEntries int64
	reclaimMu  sync.Mutex // one reclaim at a time

	walkMu   sync.Mutex
	lastWalk *Snapshot // not watched: the workspace when the last run ended
}

// Dir returns the workspace's host directory.
func (v *Volume) Dir() string { return v.dir }

// current says whether v is still the workspace at its directory.
func (v *Volume) current() bool {
	var st unix.Stat_t
	if unix.Stat(v.dir, &st) != nil || st.Dev != v.dev || st.Ino != v.ino {
		return false
	}
	if v.t != nil {
		v.vs.w.mu.Lock()
		err := v.t.err
		v.vs.w.mu.Unlock()
		if err != nil && !errors.Is(err, errWatcherClosed) {
			return false
		}
	}
	return true
}

func (v *Volume) close(unmount bool) error {
	if v.t != nil {
		v.vs.w.dropTree(v.t)
	}
	if v.img != nil {
		return v.img.release(unmount)
	}
	return nil
}

// Usage is what a workspace holds against its limits.
type Usage struct {
	Bytes      int64 `json:"bytes"`       // disk space taken, allocated bytes as du counts them
	Entries    int64 `json:"entries"`     // files, directories and links
	Quota      int64 `json:"quota"`       // bytes; 0 means none
	MaxEntries int64 `json:"max_entries"` // 0 means none
	// Enforcement says how the limits hold: "kernel" (a filesystem image
	// of the workspace's own: a write past them fails with ENOSPC) or
	// "watcher" (a plain directory: an execution that passes them is
	// stopped and what it wrote past them removed).
	Enforcement string `json:"enforcement"`
}

// Over says whether the usage passes a limit.
func (u Usage) Over() bool {
	return (u.Quota > 0 && u.Bytes > u.Quota) || (u.MaxEntries > 0 && u.Entries > u.MaxEntries)
}

// String renders the usage in a line, for the model.
func (u Usage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s used", sizeText(u.Bytes))
	if u.Quota > 0 {
		fmt.Fprintf(&b, " of %s", sizeText(u.Quota))
	}
	fmt.Fprintf(&b, ", %d entries", u.Entries)
	if u.MaxEntries > 0 {
		fmt.Fprintf(&b, " of %d", u.MaxEntries)
	}
	return b.String()
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Usage returns what the workspace holds now: from the filesystem's own
// counters for an image, from the index for a watched directory, and by a
// walk only for a directory that cannot be watched.
func (v *Volume) Usage() (Usage, error) {
	u := Usage{Quota: v.quota, MaxEntries: v.maxEntries, Enforcement: "watcher"}
	switch {
	case v.img != nil:
		u.Enforcement = "kernel"
		b, e, err := v.img.usage(v.dir)
		if err != nil {
			return u, err
		}
		u.Bytes, u.Entries = b, e
	case v.t != nil:
		v.vs.w.mu.Lock()
		// The one growth no event reports (stores through a mapping into
		// a sparse file's holes) is looked for whenever usage is asked.
		v.vs.w.restatSparse(v.t)
		u.Bytes, u.Entries = v.t.bytes, v.t.count
		err := v.t.err
		v.vs.w.mu.Unlock()
		if err != nil {
			return v.walkUsage(u)
		}
	default:
		return v.walkUsage(u)
	}
	return u, nil
}

func (v *Volume) walkUsage(u Usage) (Usage, error) {
	s, err := v.snapshot()
	if err != nil {
		return u, err
	}
	u.Bytes, u.Entries = s.alloc, s.entries
	return u, nil
}

func (v *Volume) snapshot() (Snapshot, error) {
	ws, err := Open(v.dir, Options{Owner: v.vs.opts.Owner})
	if err != nil {
		return Snapshot{}, err
	}
	defer ws.Close()
	return ws.Snapshot(), nil
}

// settle waits until the index has applied every change made so far, so
// that Usage counts them; in an image, so that the descriptors the index
// held on what was removed are closed. It reports false when the watcher
// did not catch up.
func (v *Volume) settle() bool {
	if v.t == nil {
		return true
	}
	return v.vs.w.sync()
}

// Open opens the workspace for the file operations of Workspace, with the
// quota checked against Usage.
func (v *Volume) Open() (*Workspace, error) {
	w, err := Open(v.dir, Options{Owner: v.vs.opts.Owner})
	if err != nil {
		return nil, err
	}
	w.vol = v
	return w, nil
}

// A Run is one execution's time in the workspace: what changed in it, and
// whether the workspace passed its limits meanwhile.
type Run struct {
	v      *Volume
	start  uint64   // the tree's log sequence when it began
	before Snapshot // a workspace that is not watched: its state when it began
	left   int64

	undone     *Breach       // changes made between runs, undone by Begin
	breach     chan struct{} // closed when a limit is passed (a watched directory)
	breachOnce sync.Once
	stopPoll   chan struct{}
	polled     chan struct{}
}

// Begin starts a run: an execution is about to start. When the workspace
// is past its limits because of what changed since the last run ended (a
// live session's thread, or its stores through a memory mapping, which no
// run was open to be blamed for), those changes are undone first, newest
// first, so that this run starts under them and is not stopped for them;
// Report.Undone says what was undone.
func (v *Volume) Begin() *Run {
	r := &Run{v: v, breach: make(chan struct{}), left: -1}
	// What changed before (a tool's write, another process) is applied
	// first, so that it is not taken for the run's.
	v.settle()
	r.undone = v.undoIdle()
	if v.t != nil {
		w := v.vs.w
		w.mu.Lock()
		if v.t.err == nil {
			r.start = v.t.seq + uint64(len(v.t.log))
			v.t.runs[r] = struct{}{}
			v.t.idle, v.t.idleCut = nil, false
		}
		w.mu.Unlock()
	}
	if !r.watched() {
		r.before, _ = v.snapshot()
		if r.undone == nil {
			if r.undone = v.undoSinceWalk(r.before); r.undone != nil {
				r.before, _ = v.snapshot()
			}
		}
	}
	u, err := v.Usage()
	if err == nil && v.quota > 0 {
		r.left = max(0, v.quota-u.Bytes)
	}
	// A workspace that is not watched is walked while the run is open; a
	// watched one is asked for its usage, which looks again at its sparse
	// files, whose growth no event reports.
	if v.img == nil && (v.quota > 0 || v.maxEntries > 0) {
		r.stopPoll, r.polled = make(chan struct{}), make(chan struct{})
		go r.poll()
	}
	return r
}

// overLocked says whether the index shows the workspace past its limits.
// The watcher's mutex is held.
func (v *Volume) overLocked() bool {
	return (v.quota > 0 && v.t.bytes > v.quota) || (v.maxEntries > 0 && v.t.count > v.maxEntries)
}

// undoIdle undoes the changes made in a watched directory since the last
// run ended, when they took it past its limits.
func (v *Volume) undoIdle() *Breach {
	if v.t == nil || v.img != nil {
		return nil
	}
	w := v.vs.w
	w.mu.Lock()
	var changes []netChange
	if v.t.err == nil {
		w.restatSparse(v.t)
		if len(v.t.runs) == 0 && v.overLocked() {
			changes = v.t.net(v.t.idle)
		}
		v.t.idle, v.t.idleCut = nil, false
	}
	w.mu.Unlock()
	return v.undoBetween(changes)
}

// undoSinceWalk is undoIdle for a directory that is not watched: the
// changes are those between the walk at the end of the last run and now.
func (v *Volume) undoSinceWalk(now Snapshot) *Breach {
	if v.img != nil || !((v.quota > 0 && now.alloc > v.quota) || (v.maxEntries > 0 && now.entries > v.maxEntries)) {
		return nil
	}
	v.walkMu.Lock()
	last := v.lastWalk
	v.walkMu.Unlock()
	if last == nil {
		return nil
	}
	return v.undoBetween(diffSnapshots(*last, now))
}

func (v *Volume) undoBetween(changes []netChange) *Breach {
	if len(changes) == 0 {
		return nil
	}
	b := v.reclaim(changes)
	v.vs.log.Warn("workspace: changes made between executions (a session's thread or memory mapping) took it past its limits; undone before the next execution",
		"removed", len(b.Removed), "truncated", len(b.Truncated), "reached", b.Reached.String(), "usage", b.Usage.String())
	return b
}

// watched says whether the run's changes come from the index.
func (r *Run) watched() bool {
	if r.v.t == nil {
		return false
	}
	r.v.vs.w.mu.Lock()
	defer r.v.vs.w.mu.Unlock()
	_, ok := r.v.t.runs[r]
	return ok
}

// FileSizeLimit is the largest file the execution may write: what is left
// of the quota when it began (RLIMIT_FSIZE), or -1 for no quota.
func (r *Run) FileSizeLimit() int64 { return r.left }

// Breach is closed when the workspace passes a limit while the run is open,
// in a workspace whose limits the kernel does not enforce: the execution is
// to be stopped, and End then removes what it wrote past them.
func (r *Run) Breach() <-chan struct{} { return r.breach }

func (r *Run) breached() bool {
	select {
	case <-r.breach:
		return true
	default:
		return false
	}
}

// checkBreachLocked closes the breach channel of every open run of v when
// the index shows a limit passed. The watcher's mutex is held.
func (v *Volume) checkBreachLocked() {
	if v.img != nil {
		return
	}
	over := (v.quota > 0 && v.t.bytes > v.quota) || (v.maxEntries > 0 && v.t.count > v.maxEntries)
	if !over {
		return
	}
	for r := range v.t.runs {
		r.breachOnce.Do(func() { close(r.breach) })
	}
}

// pollInterval is how often a workspace that cannot be watched is walked
// for its quota while an execution runs, and a watched one's sparse files
// looked at again; a slow round is repeated less often, so the watcher
// takes about a tenth of a core at most.
const pollInterval = 50 * time.Millisecond

func (r *Run) poll() {
	defer close(r.polled)
	wait := pollInterval
	for {
		timer := time.NewTimer(wait)
		select {
		case <-r.stopPoll:
			timer.Stop()
			return
		case <-timer.C:
		}
		start := time.Now()
		if r.watched() {
			// A breach comes from the index (checkBreachLocked), as for
			// a change an event reported.
			w := r.v.vs.w
			w.mu.Lock()
			w.restatSparse(r.v.t)
			w.mu.Unlock()
		} else if u, err := r.v.Usage(); err == nil && u.Over() {
			r.breachOnce.Do(func() { close(r.breach) })
			return
		}
		wait = max(pollInterval, 10*time.Since(start))
	}
}

// File is a workspace file an execution created or changed.
type File struct {
	Path string
	Size int64
}

// Report is what a run changed in the workspace.
type Report struct {
	Files   []File   // regular files created or changed, by path
	Deleted []string // regular files deleted, sorted
	// Incomplete says that changes may be missing from Files and Deleted
	// (the watcher did not catch up in time, or a walk was cut short).
	Incomplete bool
	// Breach is set when the workspace passed a limit during the run.
	Breach *Breach
	// Undone is set when, before the run began, changes made since the
	// last run ended had taken the workspace past its limits and were
	// undone (see Begin).
	Undone *Breach
}

// Breach says how a run passed the workspace's limits and what was undone.
type Breach struct {
	Reached   Usage    // when the run ended, before anything was undone
	Usage     Usage    // after what was removed
	Removed   []string // entries the run created, removed (newest first)
	Truncated []string // files the run grew, cut back to their size before it
}

// End closes the run, after the execution's processes are gone: it reports
// what the run changed and, when it passed the workspace's limits, removes
// what it wrote past them, newest first, until the workspace is back under
// them.
func (r *Run) End() Report {
	if r.stopPoll != nil {
		close(r.stopPoll)
		<-r.polled
	}
	rep := Report{Undone: r.undone}
	var changes []netChange
	var after Snapshot
	if r.watched() {
		complete := r.v.vs.w.sync()
		var broken bool
		changes, broken = r.takeLog()
		rep.Incomplete = !complete || broken
	} else {
		var err error
		after, err = r.v.snapshot()
		rep.Incomplete = err != nil || r.before.Truncated || after.Truncated
		changes = diffSnapshots(r.before, after)
		if r.v.img == nil && r.v.quota > 0 {
			if u, err := r.v.Usage(); err == nil && u.Over() {
				r.breachOnce.Do(func() { close(r.breach) })
			}
		}
	}
	for _, c := range changes {
		if c.kind != kindFile {
			continue
		}
		switch c.op {
		case opCreate, opModify:
			rep.Files = append(rep.Files, File{Path: c.path, Size: c.size})
		case opDelete:
			rep.Deleted = append(rep.Deleted, c.path)
		}
	}
	slices.SortFunc(rep.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(rep.Deleted)
	if r.breached() || (r.v.img == nil && r.overNow()) {
		rep.Breach = r.v.reclaim(changes)
	}
	if after.files != nil {
		if rep.Breach != nil {
			after, _ = r.v.snapshot()
		}
		r.v.walkMu.Lock()
		r.v.lastWalk = &after
		r.v.walkMu.Unlock()
	}
	return rep
}

// overNow says whether the workspace is over its limits at the end of a
// watched run whose breach the watcher had not signalled yet.
func (r *Run) overNow() bool {
	if r.v.t == nil {
		return false
	}
	u, err := r.v.Usage()
	return err == nil && u.Over() && r.v.img == nil
}

// netChange is the net effect of a run on one path.
type netChange struct {
	path  string
	op    op
	kind  kind
	moved bool  // it came by a rename: no bytes were written to it
	prev  int64 // opModify: its size before the run
	// opModify of a file: its allocation before the run, and where its
	// holes were then if it was sparse (nil if not or not known).
	prevAlloc int64
	holes     *holeMap
	size      int64 // its size now (files)
	alloc     int64 // bytes allocated now
	mtime     int64 // its modification time now (files and directories)
	order     int   // when it last changed in the log; later is larger
}

// takeLog removes r from its tree and returns the net changes of its part
// of the log, with the files' sizes now; broken says the index stopped
// following the workspace meanwhile (a watch could not be added).
func (r *Run) takeLog() (_ []netChange, broken bool) {
	w, t := r.v.vs.w, r.v.t
	w.mu.Lock()
	defer w.mu.Unlock()
	// Stores through a memory mapping made no event: the files they can
	// have grown are looked at now, so that the growth is this run's.
	w.restatSparse(t)
	var entries []change
	if r.start >= t.seq {
		entries = t.log[min(len(t.log), int(r.start-t.seq)):]
	}
	out := t.net(entries)
	delete(t.runs, r)
	t.trim()
	return out, t.err != nil
}

// net gives the net changes of a part of t's log, with the files' sizes
// now, oldest first. The watcher's mutex is held.
func (t *tree) net(entries []change) []netChange {
	byPath := map[string]*netChange{}
	for i, c := range entries {
		n := byPath[c.path]
		if n == nil {
			nc := netChange{path: c.path, op: c.op, kind: c.kind, moved: c.moved, prev: c.prev, prevAlloc: c.prevAlloc, holes: c.holes, order: i}
			byPath[c.path] = &nc
			continue
		}
		n.order = i
		switch {
		case n.op == opCreate && c.op == opDelete:
			delete(byPath, c.path)
		case n.op == opDelete && c.op == opCreate:
			n.op, n.kind, n.moved = opModify, c.kind, c.moved
		case n.op == opModify && c.op == opDelete:
			n.op = opDelete
		default: // a modification after a creation or a modification: no change of state
			n.kind = c.kind
		}
	}
	out := make([]netChange, 0, len(byPath))
	for _, n := range byPath {
		if n.op != opDelete {
			if x := t.lookup(n.path); x != nil {
				n.size, n.alloc, n.kind, n.mtime = x.size, x.alloc, x.kind, x.mtime
			}
		}
		out = append(out, *n)
	}
	// Oldest first by modification time, then by the log: an entry found
	// by the scan of a new directory (written before its watch was added)
	// is logged after entries written later than it.
	slices.SortFunc(out, func(a, b netChange) int { return cmp.Or(cmp.Compare(a.mtime, b.mtime), a.order-b.order) })
	return out
}

// lookup finds the node at a path relative to the workspace.
func (t *tree) lookup(p string) *node {
	n := t.root
	for part := range strings.SplitSeq(p, "/") {
		if n = n.kids[part]; n == nil {
			return nil
		}
	}
	return n
}

// trim drops the part of the log no open run needs.
func (t *tree) trim() {
	if len(t.runs) == 0 {
		t.seq += uint64(len(t.log))
		t.log = nil
		return
	}
	oldest := t.seq + uint64(len(t.log))
	for r := range t.runs {
		oldest = min(oldest, r.start)
	}
	if drop := int(oldest - t.seq); drop > 0 {
		t.log = slices.Clone(t.log[drop:])
		t.seq = oldest
	}
}

// diffSnapshots gives the net changes between two walks of a workspace that
// is not watched, ordered by modification time.
func diffSnapshots(before, after Snapshot) []netChange {
	var out []netChange
	for p, st := range after.files {
		old, ok := before.files[p]
		switch {
		case !ok:
			out = append(out, netChange{path: p, op: opCreate, kind: kindFile, size: st.size, alloc: st.alloc, order: int(st.mtime)})
		case old != st:
			out = append(out, netChange{path: p, op: opModify, kind: kindFile, prev: old.size, prevAlloc: old.alloc, holes: before.holes[p],
				size: st.size, alloc: st.alloc, order: int(st.mtime)})
		}
	}
	for p := range before.files {
		if _, ok := after.files[p]; !ok {
			out = append(out, netChange{path: p, op: opDelete, kind: kindFile})
		}
	}
	slices.SortFunc(out, func(a, b netChange) int { return a.order - b.order })
	return out
}

// grew says whether a run grew a file it did not create: its size, or its
// allocation alone (holes filled, through a memory mapping or by writes
// past a seek; blocks preallocated past its end, fallocate with
// FALLOC_FL_KEEP_SIZE).
func (c netChange) grew() bool {
	return c.size > c.prev || c.alloc > c.prevAlloc
}

// undoGrowth takes back what a run added to a file it did not create: it
// is cut back to its size before (which also frees blocks preallocated past
// its end, even at the same size), and the holes it had before, within
// that size, are punched out again, so that what the run stored into them
// is gone and what the file held before stays.
func undoGrowth(f *os.File, c netChange) error {
	size := min(c.prev, c.size) // never extended: a file the run shrank stays shrunk
	if err := f.Truncate(size); err != nil {
		return err
	}
	if c.holes != nil {
		return unfill(f, c.holes, size)
	}
	return nil
}

// reclaim brings a workspace that a run took past its limits back under
// them: the entries the run created are removed and the files it grew cut
// back to their size before it (and the holes it filled punched out
// again), newest first, until it is under them.
// Entries that came by a rename (no bytes were written) are left alone.
// What each step frees is counted from the index as it goes, and the
// workspace measured again (after the index caught up) only once that
// count says it is under.
func (v *Volume) reclaim(changes []netChange) *Breach {
	v.reclaimMu.Lock()
	defer v.reclaimMu.Unlock()
	b := &Breach{}
	b.Reached, _ = v.Usage()
	root, err := os.OpenRoot(v.dir)
	if err != nil {
		b.Usage = b.Reached
		return b
	}
	defer root.Close()
	u := b.Reached
	for i := len(changes) - 1; i >= 0 && u.Over(); i-- {
		c := changes[i]
		switch {
		case c.moved:
			continue
		case c.op == opCreate:
			if err := root.Remove(filepath.FromSlash(c.path)); err != nil {
				continue // a directory not empty: what is in it was not the run's
			}
			b.Removed = append(b.Removed, c.path)
			u.Bytes -= c.alloc
			u.Entries--
		case c.op == opModify && c.kind == kindFile && c.grew():
			f, err := root.OpenFile(filepath.FromSlash(c.path), os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
			if err != nil {
				continue
			}
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && undoGrowth(f, c) == nil {
				b.Truncated = append(b.Truncated, c.path)
				u.Bytes -= c.alloc - min(c.alloc, c.prevAlloc, allocFor(c.prev))
			}
			f.Close()
		default:
			continue
		}
		if !u.Over() {
			v.settle()
			if now, err := v.Usage(); err == nil {
				u = now
			}
		}
	}
	v.settle()
	b.Usage, _ = v.Usage()
	return b
}
