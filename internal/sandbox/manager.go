package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codecell/codecell/internal/cgroup"
	"github.com/codecell/codecell/internal/runner"
	"golang.org/x/sys/unix"
)

// Options configure a Manager. Zero values mean the documented defaults.
type Options struct {
	Level    Level  // isolation level; required
	Python   string // interpreter; default /usr/bin/python3
	Limits   Limits // per-execution limits; zero fields take DefaultLimits
	StateDir string // where the runner files and sandbox state live; required
	// PoolSize is how many idle sandboxes are kept warm per workspace
	// while its executions overlap; zero means none (every execution starts
	// one cold).
	PoolSize int
	// IdlePoolSize is how many a workspace keeps once it has run nothing
	// for IdleAfter, at most PoolSize; zero means PoolSize (the pool never
	// shrinks), a negative number none. A workspace's pool grows from it
	// to PoolSize as its executions overlap (see demand).
	IdlePoolSize int
	// IdleAfter is how long a workspace runs nothing before its pool
	// shrinks to IdlePoolSize; zero means a minute.
	IdleAfter time.Duration
	// WarmLimit bounds the warm sandboxes of all workspaces together, and
	// WarmMemory the memory they hold (their processes' PSS, measured once
	// each is ready); zero means no bound (see warm.go).
	WarmLimit  int
	WarmMemory int64
	// Seccomp is the compiled seccomp program for production; required there.
	Seccomp []byte
	// Preload names the modules each fork server imports before it forks
	// (DefaultPreload is the config's default); nil means none.
	Preload []string
	// GenDir is the host directory of the generated servers package; the
	// code imports from it (README, "Your MCP servers as a Python API"). "" means there is none.
	GenDir string
	Logger *slog.Logger // nil means silent
}

// Manager runs executions in sandboxes and keeps the warm pool. It is safe for
// concurrent use.
type Manager struct {
	opts    Options
	limits  Limits
	runtime string // installed runner directory
	// runtimeFiles are the runner's files, which production copies into
	// each sandbox (see bwrapSpec.RuntimeFiles).
	runtimeFiles []runner.File
	extraRO      []string // host directories to expose read-only (Python outside /usr)
	log          *slog.Logger
	// cgroups is where each production sandbox gets a cgroup of its own;
	// nil when the host has none for codecell (cgroupErr says why), and
	// memory is then bounded per process only.
	cgroups   *cgroup.Hierarchy
	cgroupErr error

	mu       sync.Mutex // guards the fields below
	idle     map[target][]sandbox
	starting map[target]int
	// busy counts sandboxes out of the pool: running an execution, or
	// reporting its clean-up, after which they come back in about a
	// millisecond, far sooner than a new one starts.
	busy     map[target]int
	returned chan struct{} // closed and replaced whenever one comes back
	demand   map[target]*demand
	// epochs is each workspace's epoch, that of the targets made since its
	// last Refresh or Release. Those drop it, and the next target takes a
	// new one from epochSeq, which all workspaces share: so a sandbox
	// started before is of an older epoch, never pooled again, and a
	// released workspace leaves nothing here.
	epochs   map[string]uint64
	epochSeq uint64
	// mem is what each sandbox measured holds (for WarmMemory), kindMem
	// the last measure of each kind (preloaded or not), lastUsed when each
	// workspace last started an execution (Unix nanoseconds): the warm
	// bound takes from the workspace used least lately.
	mem      map[sandbox]int64
	kindMem  map[bool]int64
	lastUsed map[string]int64
	unbound  unboundPool // sandboxes started for no namespace yet (unbound.go)
	launch   *launcher   // starts them, from a mount namespace of its own; nil when there is none
	closed   bool
	stop     chan struct{}  // closed by Close: ends the trimmer
	wg       sync.WaitGroup // refill goroutines, kills of dead idle sandboxes and hardened teardowns (goTracked in gvisor.go)

	errMu   sync.Mutex
	errTail bytes.Buffer // the last sandbox stderr, for start errors

	preloads preloads // what the fork servers preloaded

	bytecode struct { // the runner compiled by Options.Python (runnerFor)
		mu     sync.Mutex
		python interpreterID // the interpreter files were compiled by
		files  []runner.File // runtimeFiles and the bytecode; nil when compiling failed
	}

	dirMu    sync.Mutex      // guards prepared
	prepared map[string]bool // workspaces PrepareDir has set up
}

// sandbox is one warm sandbox of any level.
type sandbox interface {
	// run executes req and fills res before it returns. It calls release
	// exactly once, possibly after returning (a fork server reports its
	// clean-up after the result is in), saying whether the sandbox can serve
	// another execution.
	run(ctx context.Context, req *Request, lim Limits, res *Result, release func(reusable bool))
	kill()
	alive() bool
}

var errTimeout = errors.New("execution timeout")

// New checks the options and prepares a Manager. It does not start
// sandboxes; Warm does.
func New(opts Options) (*Manager, error) {
	if opts.Python == "" {
		opts.Python = "/usr/bin/python3"
	}
	if opts.StateDir == "" {
		return nil, errors.New("sandbox: StateDir is required")
	}
	if opts.Level == Production && len(opts.Seccomp) == 0 {
		return nil, errors.New("sandbox: production needs a seccomp program")
	}
	if _, err := ParseLevel(string(opts.Level)); err != nil {
		return nil, err
	}
	if err := checkPython(opts.Python); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt, err := runner.Install(filepath.Join(opts.StateDir, "runtime"))
	if err != nil {
		return nil, err
	}
	rtFiles, err := runner.Files()
	if err != nil {
		return nil, err
	}
	m := &Manager{
		opts:         opts,
		limits:       opts.Limits.withDefaults(),
		runtime:      rt,
		runtimeFiles: rtFiles,
		log:          log,
		idle:         map[target][]sandbox{},
		starting:     map[target]int{},
		busy:         map[target]int{},
		returned:     make(chan struct{}),
		demand:       map[target]*demand{},
		epochs:       map[string]uint64{},
		mem:          map[sandbox]int64{},
		kindMem:      map[bool]int64{},
		lastUsed:     map[string]int64{},
		stop:         make(chan struct{}),
	}
	m.unbound.ready = make(chan struct{})
	if opts.Level == Production && os.Geteuid() == 0 {
		if m.launch, err = newLauncher(); err != nil {
			log.Warn("sandboxes start from codecell's own mount namespace, slower as more workspaces are mounted", "error", err)
		}
	}
	if m.opts.IdleAfter <= 0 {
		m.opts.IdleAfter = time.Minute
	}
	switch {
	case m.opts.IdlePoolSize == 0:
		m.opts.IdlePoolSize = m.opts.PoolSize
	case m.opts.IdlePoolSize < 0:
		m.opts.IdlePoolSize = 0
	}
	m.opts.IdlePoolSize = min(m.opts.IdlePoolSize, m.opts.PoolSize)
	if opts.Level != Development {
		m.cgroups, m.cgroupErr = cgroup.Host()
		if m.cgroupErr != nil {
			log.Warn("sandbox memory is limited per process only", "reason", m.cgroupErr)
		}
	}
	if m.HostUser() == "nobody" && opts.Level == Production && !Reachable(rt) {
		return nil, errUnreachable(rt)
	}
	if real, err := filepath.EvalSymlinks(opts.Python); err == nil && !strings.HasPrefix(real, "/usr/") {
		// A Python outside /usr (a venv, /opt) needs its prefix visible.
		m.extraRO = append(m.extraRO, filepath.Dir(filepath.Dir(real)))
	}
	m.wg.Add(1)
	go m.trim()
	return m, nil
}

// Level returns the isolation level in force.
func (m *Manager) Level() Level { return m.opts.Level }

// Limits returns the limits in force.
func (m *Manager) Limits() Limits { return m.limits }

// MemoryScope says what Limits.Memory bounds here: every process of a
// sandbox together (a cgroup of its own), or each process's address space
// alone (no cgroup; the reason is given), in which case n processes may hold
// n times the limit.
func (m *Manager) MemoryScope() (perSandbox bool, how string) {
	switch {
	case m.cgroups != nil:
		return true, fmt.Sprintf("per sandbox: all of a sandbox's processes together, in a cgroup of its own (%s), and each process's address space", m.cgroups)
	case m.opts.Level != Development:
		return false, fmt.Sprintf("per process only (address space, RLIMIT_AS; n processes may hold n times it): %v", m.cgroupErr)
	default:
		return false, fmt.Sprintf("per process only (address space, RLIMIT_AS; n processes may hold n times it): %s isolation makes no cgroup", m.opts.Level)
	}
}

// Exec runs one execution. Everything that can go wrong with the code or the
// sandbox is reported in the Result, never as a panic or a lost server.
func (m *Manager) Exec(ctx context.Context, req Request) *Result {
	start := time.Now()
	res := &Result{Isolation: m.opts.Level}
	defer func() { res.Duration = time.Since(start) }()
	ctx, end, ok := m.begin(ctx, &req, res)
	if !ok {
		return res
	}
	defer end()

	tg := m.targetOf(&req)
	sb, err := m.get(ctx, tg)
	if err != nil {
		if errors.Is(context.Cause(ctx), errTimeout) {
			res.Error = failure(ErrTimeout, "no sandbox could be started within the %s timeout: %v", req.Timeout, err)
		} else {
			res.Error = failure(ErrSandbox, "%v", err)
		}
		return res
	}
	sb.run(ctx, &req, m.limits, res, func(reusable bool) {
		m.mu.Lock()
		m.decLocked(m.busy, tg)
		m.mu.Unlock()
		if reusable {
			m.put(tg, sb)
		} else {
			m.forget(sb)
			m.signalReturned()
			sb.kill()
		}
		m.refill(tg)
		m.refillUnbound()
	})
	return res
}

// begin does what every execution needs before it runs: the workspace is
// there and ctx carries the timeout. (Its quota is its Volume's, in the
// workspace package: the caller passes what is left of it as
// Request.FileSize, and cancels ctx when it is passed.) When it reports
// false it has set res.Error. Otherwise the caller runs the execution with
// the returned context and then calls end.
func (m *Manager) begin(ctx context.Context, req *Request, res *Result) (context.Context, func(), bool) {
	if req.Timeout <= 0 {
		req.Timeout = 30 * time.Second
	}
	if err := m.prepareOnce(req.Workspace); err != nil {
		res.Error = failure(ErrSandbox, "%v", err)
		return nil, nil, false
	}
	ctx, cancel := withClock(ctx, req.Timeout)
	return ctx, cancel, true
}

// WarmFor fills, in the background, the pool of the sandboxes that
// executions like req run in: its workspace, interpreter and skills.
func (m *Manager) WarmFor(req Request) {
	if err := m.PrepareDir(req.Workspace); err != nil {
		m.log.Warn("warm pool", "error", err)
		return
	}
	// Both kinds: code of either may come first.
	tg := m.targetOf(&req)
	tg.preload = false
	m.refill(tg)
	if len(m.opts.Preload) > 0 {
		tg.preload = true
		m.refill(tg)
	}
}

// Close kills every idle sandbox and waits for refills to stop.
func (m *Manager) Close() error {
	m.mu.Lock()
	if !m.closed {
		close(m.stop)
	}
	m.closed = true
	var all []sandbox
	for ws, list := range m.idle {
		all = append(all, list...)
		delete(m.idle, ws)
	}
	for _, z := range m.unbound.idle {
		all = append(all, z)
	}
	m.unbound.idle = nil
	m.mu.Unlock()
	for _, sb := range all {
		sb.kill()
	}
	m.wg.Wait()
	m.mu.Lock()
	for ws, list := range m.idle {
		for _, sb := range list {
			sb.kill()
		}
		delete(m.idle, ws)
	}
	m.mu.Unlock()
	m.launch.close()
	if m.opts.Level == Hardened {
		// Every container is gone: nothing needs runsc's null network
		// namespace until another Manager starts one.
		unmountNullNetNS(filepath.Join(m.opts.StateDir, "gvisor", "state"))
	}
	return nil
}

// returnWait bounds how long get waits for a sandbox that is finishing its
// clean-up before it starts a new one instead. A hardened sandbox takes a
// second or more of CPU to start, while one that served an execution is
// back within tens of milliseconds (its fork server's clean-up and next
// fork), or a few hundred on a loaded machine: there get waits longer.
const (
	returnWait         = 100 * time.Millisecond
	hardenedReturnWait = time.Second
)

func (m *Manager) get(ctx context.Context, workspace target) (sandbox, error) {
	wait := returnWait
	if m.opts.Level == Hardened {
		wait = hardenedReturnWait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	waited := false // found none idle: the pool was short
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, errors.New("sandbox manager is closed")
		}
		// Oldest first: a sandbox just put back may still be preparing its
		// next process, one that waited longer is ready.
		for list := m.idle[workspace]; len(list) > 0; list = m.idle[workspace] {
			sb := list[0]
			m.idle[workspace] = list[1:]
			if sb.alive() {
				m.busy[workspace]++
				m.noteDemand(workspace, waited)
				m.mu.Unlock()
				return sb, nil
			}
			delete(m.mem, sb)
			m.wg.Add(1) // Close waits for it; m.closed was checked above
			go func() {
				defer m.wg.Done()
				sb.kill()
			}()
		}
		waiting := m.busy[workspace] > 0
		returned := m.returned
		m.mu.Unlock()
		if !waiting {
			return m.startBusy(ctx, workspace, waited)
		}
		waited = true
		select {
		case <-returned:
		case <-deadline.C:
			return m.startBusy(ctx, workspace, true)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// startBusy starts a sandbox for an execution that found none idle, or
// claims one started ahead for no namespace (unbound.go); waited says the
// execution waited for one of its pool's to come back first.
func (m *Manager) startBusy(ctx context.Context, workspace target, waited bool) (sandbox, error) {
	m.mu.Lock()
	m.busy[workspace]++
	m.mu.Unlock()
	// A new target for a workspace supersedes its others: the namespace's
	// environment or skills directory changed, so their warm sandboxes
	// would never serve again.
	m.dropIdle(workspace.workspace, workspace)
	if z := m.claimUnbound(ctx, workspace); z != nil {
		// An empty pool that a sandbox started ahead served at once (the
		// namespace's first execution, or its first since it went idle)
		// does not show that its executions overlap.
		m.mu.Lock()
		m.noteDemand(workspace, waited)
		m.mu.Unlock()
		return z, nil
	}
	m.mu.Lock()
	m.noteDemand(workspace, true)
	m.mu.Unlock()
	sb, err := m.start(ctx, workspace)
	if err != nil {
		m.mu.Lock()
		m.decLocked(m.busy, workspace)
		m.mu.Unlock()
	}
	return sb, err
}

// signalReturned wakes every get waiting for a sandbox to come back.
func (m *Manager) signalReturned() {
	m.mu.Lock()
	close(m.returned)
	m.returned = make(chan struct{})
	m.mu.Unlock()
}

func (m *Manager) put(workspace target, sb sandbox) {
	// A sandbox of a workspace or skills directory that was removed
	// meanwhile has the old directory mounted: it is of no use.
	stale := dirID(workspace.workspace) != workspace.dir ||
		(workspace.skills != "" && dirID(workspace.skills) != workspace.skillsDir)
	m.measure(workspace, sb)
	m.mu.Lock()
	var evicted []sandbox
	if stale || m.closed || workspace.epoch != m.epochs[workspace.workspace] || len(m.idle[workspace]) >= max(m.opts.PoolSize, 1) ||
		!m.roomLocked(workspace, m.mem[sb], &evicted) {
		delete(m.mem, sb)
		m.mu.Unlock()
		m.killAll(append(evicted, sb))
		return
	}
	m.idle[workspace] = append(m.idle[workspace], sb)
	close(m.returned)
	m.returned = make(chan struct{})
	m.mu.Unlock()
	m.killAll(evicted)
}

// forget drops what the Manager measured of a sandbox that goes.
func (m *Manager) forget(sb sandbox) {
	m.mu.Lock()
	delete(m.mem, sb)
	m.mu.Unlock()
}

// killAll kills sandboxes taken out of the pool, in the background: the
// caller may be an execution's release.
func (m *Manager) killAll(list []sandbox) {
	if len(list) == 0 {
		return
	}
	// Close waits for m.wg once it has set closed: an Add after that
	// would race its Wait, so once closed the kills are done here.
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.wg.Add(1)
	}
	m.mu.Unlock()
	if closed {
		for _, sb := range list {
			sb.kill()
		}
		return
	}
	go func() {
		defer m.wg.Done()
		for _, sb := range list {
			sb.kill()
		}
	}()
}

// refill starts sandboxes in the background until PoolSize wait idle.
func (m *Manager) refill(workspace target) {
	var evicted []sandbox
	defer func() { m.killAll(evicted) }() // after the unlock below
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || workspace.epoch != m.epochs[workspace.workspace] {
		return // a Refresh since: the next execution's target is the one to fill
	}
	// Busy sandboxes count: they come back after their execution.
	need := m.want(workspace) - len(m.idle[workspace]) - m.starting[workspace] - m.busy[workspace]
	for i := 0; i < need; i++ {
		if !m.roomLocked(workspace, m.kindMem[workspace.preload], &evicted) {
			break
		}
		m.starting[workspace]++
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*startTimeout)
			sb, err := m.start(ctx, workspace)
			cancel()
			m.mu.Lock()
			m.decLocked(m.starting, workspace)
			m.mu.Unlock()
			if err != nil {
				m.log.Warn("warm pool: start sandbox", "level", m.opts.Level, "error", err)
				return
			}
			m.put(workspace, sb)
		}()
	}
}

func (m *Manager) start(ctx context.Context, workspace target) (sandbox, error) {
	if m.opts.Level == Hardened {
		sb, err := m.startGVisor(ctx, workspace)
		if err != nil && ctx.Err() == nil {
			// runsc occasionally fails to start a sandbox on a loaded host
			// ("cannot read client sync file"); one more try costs 300 ms.
			m.log.Warn("hardened sandbox failed to start; trying again", "error", err)
			sb, err = m.startGVisor(ctx, workspace)
		}
		return sb, err
	}
	if z, ok, err := m.startBound(ctx, workspace); ok {
		if err != nil {
			return nil, err
		}
		return z, nil
	}
	return m.startZygote(ctx, workspace)
}

// target is what a sandbox is started for: a workspace and an interpreter
// with the host directories it needs. Warm sandboxes are pooled per target.
type target struct {
	workspace string
	dir       uint64 // the workspace directory's dirID: a removed and recreated workspace, or another image mounted there, is another target
	python    string
	readOnly  string // host directories exposed read-only at their own path, NUL-separated
	skills    string // the namespace's skills directory (Request.Skills): namespaces never share a sandbox
	skillsDir uint64 // its dirID, as dir is the workspace's
	// preload says the sandbox's fork server imports Options.Preload (see
	// importsBeyondStdlib): a workspace has a pool of each kind.
	preload bool
	epoch   uint64 // the workspace's epoch (Refresh) when the target was made
	network *Network
}

// sameBut says whether tg and other differ in their kind of fork server
// alone: both serve the same workspace, interpreter and skills.
func (tg target) sameBut(other target) bool {
	tg.preload = other.preload
	return tg == other
}

// defaultTarget is the target of a workspace with the Manager's Python, of
// the workspace's epoch.
func (m *Manager) defaultTarget(workspace string) target {
	tg := target{workspace: workspace, dir: dirID(workspace), python: m.opts.Python}
	m.mu.Lock()
	tg.epoch = m.epochs[workspace]
	if tg.epoch == 0 {
		m.epochSeq++
		tg.epoch = m.epochSeq
		m.epochs[workspace] = tg.epoch
	}
	m.mu.Unlock()
	return tg
}

// dirID identifies a directory by its device and inode; 0 when it does
// not exist. The device counts: every workspace image's root has inode 2,
// so an image mounted in place of another is told apart by its device.
func dirID(path string) uint64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Ino ^ st.Dev<<40 ^ st.Dev>>24
	}
	return 0
}

func (m *Manager) targetOf(req *Request) target {
	tg := m.defaultTarget(req.Workspace)
	if req.Python != "" {
		tg.python = req.Python
		tg.readOnly = strings.Join(req.ReadOnly, "\x00")
	}
	if req.Skills != "" {
		tg.skills, tg.skillsDir = req.Skills, dirID(req.Skills)
	}
	tg.preload = len(m.opts.Preload) > 0 && importsBeyondStdlib(req.Code)
	tg.network = req.Network
	return tg
}

// decLocked counts one sandbox fewer of tg in busy or starting, dropping
// the count at zero: each Refresh and Release makes a workspace's targets
// anew (their epoch), so zeros kept would pile up with every namespace and
// every time one goes idle and comes back. m.mu is held.
func (m *Manager) decLocked(counts map[target]int, tg target) {
	if counts[tg]--; counts[tg] <= 0 {
		delete(counts, tg)
	}
}

// readOnlyDirs are the host directories a target's sandbox shows read-only.
func (m *Manager) readOnlyDirs(tg target) []string {
	dirs := append([]string{}, m.extraRO...)
	if tg.readOnly != "" {
		dirs = append(dirs, strings.Split(tg.readOnly, "\x00")...)
	}
	return dirs
}

// prepareOnce is PrepareDir for a workspace, done once: later executions
// only check that it still exists, off the execution path's syscalls.
func (m *Manager) prepareOnce(dir string) error {
	m.dirMu.Lock()
	done := m.prepared[dir]
	m.dirMu.Unlock()
	if done {
		if _, err := os.Stat(dir); err == nil {
			return nil
		}
		// The workspace was removed: warm sandboxes still have the old
		// directory mounted, so they go too.
		m.dropIdle(dir, target{})
	}
	if err := m.PrepareDir(dir); err != nil {
		return err
	}
	m.dirMu.Lock()
	if m.prepared == nil {
		m.prepared = map[string]bool{}
	}
	m.prepared[dir] = true
	m.dirMu.Unlock()
	return nil
}

// dropIdle kills the idle sandboxes of a workspace but those of keep.
func (m *Manager) dropIdle(workspace string, keep target) {
	m.mu.Lock()
	var drop []sandbox
	for tg, list := range m.idle {
		if tg.workspace == workspace && !tg.sameBut(keep) {
			drop = append(drop, list...)
			delete(m.idle, tg)
			for _, sb := range list {
				delete(m.mem, sb)
			}
		}
	}
	m.mu.Unlock()
	for _, sb := range drop {
		sb.kill()
	}
}

// Refresh retires the sandboxes of workspace, of every kind and
// interpreter: what they loaded at start may no longer be what a new one
// would (an environment changed under them). Idle ones are killed now;
// busy ones, and ones starting, finish what they do and are killed rather
// than pooled (their target's epoch is past); the pool starts new ones as
// executions come.
func (m *Manager) Refresh(workspace string) {
	m.mu.Lock()
	delete(m.epochs, workspace) // its next target takes a new epoch
	m.mu.Unlock()
	m.dropIdle(workspace, target{})
}

// Release gives back what the Manager holds for workspace, which its
// caller knows runs nothing now and holds no session: its warm sandboxes
// of every kind and interpreter (as Refresh: one still starting is killed
// when it is ready), and what the pool remembered of it. Its next
// execution starts a sandbox cold, and the pool grows again from there.
func (m *Manager) Release(workspace string) {
	m.Refresh(workspace)
	m.mu.Lock()
	for tg := range m.demand {
		if tg.workspace == workspace {
			delete(m.demand, tg)
		}
	}
	delete(m.lastUsed, workspace)
	m.mu.Unlock()
	m.dirMu.Lock()
	delete(m.prepared, workspace)
	m.dirMu.Unlock()
}

// PrepareDir makes sure a directory a sandbox writes (a workspace, an
// environment) exists and that the sandbox user
// can reach and write it.
func (m *Manager) PrepareDir(dir string) error {
	if dir == "" || !filepath.IsAbs(dir) {
		return fmt.Errorf("workspace %q is not an absolute path", dir)
	}
	// Parents searchable (not listable) by others, so a sandbox running as
	// nobody can reach the workspace; the workspace itself is private.
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("workspace: %w", err)
	}
	if m.HostUser() != "nobody" {
		return nil
	}
	if m.opts.Level == Production && !Reachable(dir) {
		return errUnreachable(dir)
	}
	if err := os.Chown(dir, sandboxUID, sandboxUID); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// stderrSink collects the tail of what sandboxes print on their own stderr
// (bubblewrap's or Python's start-up errors) for error messages and the log.
func (m *Manager) stderrSink() io.Writer { return tailWriter{m} }

type tailWriter struct{ m *Manager }

func (t tailWriter) Write(p []byte) (int, error) {
	t.m.errMu.Lock()
	defer t.m.errMu.Unlock()
	t.m.errTail.Write(p)
	if t.m.errTail.Len() > 4096 {
		tail := append([]byte{}, t.m.errTail.Bytes()[t.m.errTail.Len()-2048:]...)
		t.m.errTail.Reset()
		t.m.errTail.Write(tail)
	}
	t.m.log.Debug("sandbox stderr", "text", strings.TrimSpace(string(p)))
	return len(p), nil
}

func (m *Manager) lastStderr() string {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	s := strings.TrimSpace(m.errTail.String())
	if s == "" {
		return ""
	}
	if i := strings.LastIndex(s, "\n"); i >= 0 && len(s)-i < 400 {
		s = s[i+1:]
	}
	return ": " + s
}

// PoolStats counts a Manager's sandboxes at one moment, summed over every
// workspace and interpreter the pool serves.
type PoolStats struct {
	Size     int // idle sandboxes kept warm per workspace (Options.PoolSize)
	Idle     int // started and waiting for an execution
	Starting int // being started for the pool
	Busy     int // out of the pool: running an execution, or cleaning up after one
	// Unbound are started for no namespace yet, ready or starting
	// (KeepUnbound); not counted in Idle or Starting.
	Unbound int
}

// PoolStats returns the pool's counts now.
func (m *Manager) PoolStats() PoolStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := PoolStats{Size: m.opts.PoolSize}
	for _, list := range m.idle {
		st.Idle += len(list)
	}
	for _, n := range m.starting {
		st.Starting += n
	}
	for _, n := range m.busy {
		st.Busy += n
	}
	st.Unbound = len(m.unbound.idle) + m.unbound.starting
	return st
}

// runnerFor is what a production sandbox of python is given of the runner,
// and the file it runs: the sources, and for Options.Python their bytecode
// too (runner.Compile), so that a start does not compile the runner: about
// a quarter of its CPU. The bytecode is made at the first start, and again
// when the interpreter's file changed (an upgrade to another version would
// not run the old). An environment's interpreter is never run on the host
// (runner.Compile), so its sandboxes compile the runner as they start; so
// do all when compiling failed.
func (m *Manager) runnerFor(python string) ([]runner.File, string) {
	if python != m.opts.Python {
		return m.runtimeFiles, runner.Script
	}
	b := &m.bytecode
	b.mu.Lock()
	defer b.mu.Unlock()
	if id := interpreterOf(python); id != b.python {
		b.python, b.files = id, nil
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		pyc, err := runner.Compile(ctx, python, m.runtime, RuntimeMount)
		if err != nil {
			m.log.Warn("sandboxes compile the runner as they start", "error", err)
		} else {
			b.files = append(slices.Clip(m.runtimeFiles), pyc...)
		}
	}
	if b.files == nil {
		return m.runtimeFiles, runner.Script
	}
	return b.files, runner.CompiledScript
}

// interpreterID tells an interpreter's file from the one it replaced.
type interpreterID struct {
	dev, ino uint64
	mtime    int64
}

func interpreterOf(python string) interpreterID {
	var st unix.Stat_t
	if unix.Stat(python, &st) != nil {
		return interpreterID{}
	}
	return interpreterID{uint64(st.Dev), st.Ino, st.Mtim.Nano()}
}
