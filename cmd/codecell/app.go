package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/envs"
	"github.com/codecell/codecell/internal/gate"
	"github.com/codecell/codecell/internal/procdir"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/seccomp"
	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/skills"
	"github.com/codecell/codecell/internal/store"
	"github.com/codecell/codecell/internal/upstream"
	"github.com/codecell/codecell/internal/workspace"
)

// app is what serve and exec share: the config, the data dir, the sandbox
// manager and the MCP server.
type app struct {
	proc      *procdir.Dir // this process's own directory under state/proc
	db        *store.Store
	cfg       *config.Config
	dataDir   string
	log       *slog.Logger
	sandbox   *sandbox.Manager
	volumes   *workspace.Volumes
	upstreams *upstream.Manager
	server    *server.Server
	replica   string // this process's name among replicas; see replicaName
}

// workspaceImages is the image mode sandbox.workspaceImages asks for on this
// data dir: auto is off on a filesystem several machines may mount, where
// an image must never live.
func workspaceImages(cfg *config.Config, dataDir string) (workspace.ImageMode, string) {
	switch cfg.Sandbox.WorkspaceImages {
	case "on":
		return workspace.ImagesOn, ""
	case "off":
		return workspace.ImagesOff, "sandbox.workspaceImages is off"
	}
	if cfg.Store.URL != "" {
		// Replicas share the database, and so the data dir, perhaps from
		// several machines: an image mounted by one is a block device
		// another must not mount at once.
		return workspace.ImagesOff, "store.url is set: replicas share the data dir"
	}
	if fs := workspace.NetworkFilesystem(dataDir); fs != "" {
		return workspace.ImagesOff, "the data dir is on " + fs + ", which several machines may mount"
	}
	return workspace.ImagesAuto, ""
}

// loadConfig finds, reads and validates the config, and resolves the data dir.
func (g *globals) loadConfig() (*config.Config, string, error) {
	path, err := config.Find(g.configFlag, os.Getenv)
	if err != nil {
		return nil, "", err
	}
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		return nil, "", err
	}
	if path == "" {
		cfg.Searched = config.SearchPath(os.Getenv)
	}
	dataDir, err := config.DataDir(g.dataDirFlag, os.Getenv, os.Geteuid() == 0)
	if err != nil {
		return nil, "", err
	}
	return cfg, dataDir, nil
}

// newApp loads everything and checks that the configured isolation level can
// run here; if it cannot, nothing starts. On an error, what it had started
// is closed by app.close, in its order.
func (g *globals) newApp(ctx context.Context, mutate func(*config.Config) error) (_ *app, err error) {
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	cfg, dataDir, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	if mutate != nil {
		if err := mutate(cfg); err != nil {
			return nil, err
		}
	}
	level, err := sandbox.ParseLevel(cfg.Sandbox.Isolation)
	if err != nil {
		return nil, err
	}
	if err := sandbox.Check(ctx, level, cfg.Sandbox.Python); err != nil {
		return nil, fmt.Errorf("isolation level %s cannot run on this host: %w", level, err)
	}
	// Searchable, not listable, by others: a root-run sandbox runs as
	// nobody and must reach its workspace; everything else in it is private.
	if err := os.MkdirAll(dataDir, 0o711); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	// What a predecessor killed with SIGKILL left mounted (workspace
	// images and their loop devices) goes before this process mounts
	// anything; images a live process on the data dir uses stay.
	if os.Geteuid() == 0 {
		left, err := workspace.ReleaseLeftovers(dataDir)
		if n := len(left.Unmounted) + len(left.Detached); n > 0 {
			log.Info("released the workspace mounts a killed process left", "unmounted", len(left.Unmounted), "loop_devices", len(left.Detached))
		}
		if err != nil {
			log.Warn("release the workspace mounts a killed process left", "error", err)
		}
	}
	replica := g.replicaName(cfg)
	db, err := store.OpenWith(store.Options{Path: dbPath(dataDir), URL: cfg.Store.URL, Replica: replica})
	if err != nil {
		return nil, fmt.Errorf("open the database: %w", err)
	}
	a := &app{db: db, cfg: cfg, dataDir: dataDir, log: log, replica: replica}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	// The gate (README, "Personal data stays out of the model") before
	// anything logs: every log line passes it, and so does what upstream
	// servers write on stderr.
	gate, err := gate.New(cfg.PII, db)
	if err != nil {
		return nil, err
	}
	log = slog.New(gate.LogHandler(log.Handler()))
	a.log = log
	var prog []byte
	if level == sandbox.Production {
		if prog, err = seccomp.Program(); err != nil {
			return nil, fmt.Errorf("isolation level production cannot run on this host: %w", err)
		}
	}
	sb := cfg.Sandbox
	stateDir := filepath.Join(dataDir, "state")
	// What this process generates for its own sandboxes (the servers
	// package of its upstreams) goes in a directory of its own: other
	// processes on this data dir (a server per desktop window, exec, tools)
	// generate theirs, and must not replace it under this one's code.
	proc, err := procdir.Claim(filepath.Join(stateDir, "proc"))
	if err != nil {
		return nil, err
	}
	a.proc = proc
	genDir := filepath.Join(proc.Path(), "gen")
	mgr, err := sandbox.New(sandbox.Options{
		Level:  level,
		Python: sb.Python,
		Limits: sandbox.Limits{
			Memory: sb.Memory, Pids: sb.Pids, CPUTime: sb.CPUTime, FileSize: sb.FileSize,
			OpenFiles: sb.OpenFiles, Output: sb.Output, TmpSize: sb.TmpSize,
			Flood: server.OutputFlood(sb.Output),
		},
		StateDir: stateDir,
		PoolSize: sb.Pool,
		// config's 0 (keep none warm when idle) is Options' negative.
		IdlePoolSize: cmp.Or(sb.IdlePool, -1),
		WarmLimit:    sb.WarmLimit,
		WarmMemory:   sb.WarmMemory,
		Preload:      sb.Preload,
		Seccomp:      prog,
		GenDir:       genDir,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	a.sandbox = mgr
	images, why := workspaceImages(cfg, dataDir)
	volOpts := workspace.VolumeOptions{
		Quota: sb.WorkspaceQuota, MaxEntries: int64(sb.WorkspaceEntries), Images: images,
		StateDir: proc.Path(), Logger: log,
	}
	if mgr.HostUser() == "nobody" {
		volOpts.Owner = sandbox.UID
	}
	vols, err := workspace.NewVolumes(volOpts)
	if err != nil {
		return nil, err
	}
	a.volumes = vols
	if err := vols.ImageError(); err != nil && images != workspace.ImagesOff {
		log.Warn("workspaces are plain directories: the quota is watched, not enforced by the kernel", "reason", err)
	} else if images == workspace.ImagesOff && why != "" {
		log.Debug("workspaces are plain directories", "reason", why)
	}
	// The upstreams tell the server when their tools change; the server
	// exists only after them, hence the indirection.
	var srv *server.Server
	ups := upstream.New(upstream.Options{
		Servers: cfg.MCPServers,
		BaseEnv: config.BaseEnv(os.Getenv),
		OnChange: func() {
			if srv != nil {
				srv.RefreshTools()
			}
		},
		Logger:    log,
		Version:   version,
		InProcess: g.inProcess,
		Redact:    gate.Redact,
	})
	a.upstreams = ups
	environments := envs.New(envs.Options{
		DataDir: dataDir, SystemPython: sb.Python, Wheelhouse: sb.Wheelhouse, IndexURL: sb.IndexURL,
		UV: lookPath("uv"), Conda: lookPath("conda"), Runner: mgr, Store: db, ExternalRoots: sb.ExternalEnvironments,
		IndexURLs: sb.IndexURLs, IndexHosts: sb.IndexHosts, AllowBuilds: sb.AllowBuilds,
		Fresh: envFresh(cfg),
	})
	skillsMgr, err := skills.New(skills.Options{Store: db, Dir: skillsDir(dataDir), Logger: log})
	if err != nil {
		return nil, err
	}
	// No interpreter outlives the process that ran it: this replica's
	// session records are of a process that ran before.
	clearCtx, cancel := context.WithTimeout(ctx, server.StoreWriteTimeout)
	if err := db.ClearSessions(clearCtx); err != nil {
		log.Warn("clear session records", "error", err)
	}
	// Nor does an execution: tasks this replica ran before are over.
	if n, err := db.FailReplicaTasks(clearCtx, "the server restarted while the task ran", time.Now()); err != nil {
		log.Warn("end earlier tasks", "error", err)
	} else if n > 0 {
		log.Info("tasks of an earlier run marked failed", "count", n)
	}
	if err := db.DeleteExpiredTasks(clearCtx, time.Now()); err != nil {
		log.Warn("delete expired tasks", "error", err)
	}
	cancel()
	srv, err = server.New(server.Options{Config: cfg, Executor: mgr, Upstreams: ups, Envs: environments, Store: db, Skills: skillsMgr, GenDir: genDir, DataDir: dataDir, Volumes: vols, Version: version, Logger: log, Gate: gate, Replica: replica,
		Packages: sandbox.Importable(ctx, sb.Python, sandbox.NotablePackages)})
	if err != nil {
		return nil, err
	}
	a.server = srv
	ups.Start()
	if level == sandbox.Development {
		log.Warn("isolation level development: code runs as a plain subprocess with limits only, not in a sandbox")
	}
	return a, nil
}

// replicaName is this process's name among replicas: --replica; else, with
// store.url (replicas share the database), the host's name (a Kubernetes
// pod's name), which stays the same across a restart in place, so that a
// restarted replica clears its own session records; else "" (a lone
// server: no replica label on its metrics).
func (g *globals) replicaName(cfg *config.Config) string {
	if g.replica != "" || cfg.Store.URL == "" {
		return g.replica
	}
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// envFresh is how long a replica trusts a namespace's environment choice it
// read: with store.url another replica may change it (configure_environment
// on a session that lives there), so it is read again after this; a lone
// server is the only writer and trusts it for good.
func envFresh(cfg *config.Config) time.Duration {
	if cfg.Store.URL == "" {
		return 0
	}
	return 2 * time.Second
}

// lookPath is the absolute path of a program on PATH, or "".
func lookPath(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return abs
}

// close closes what newApp started, in the one order that is safe; a field
// still nil (newApp failed before it) is skipped.
func (a *app) close() {
	if a.server != nil {
		a.server.Close() // its sessions hold sandboxes of the manager
	}
	if a.upstreams != nil {
		a.upstreams.Close()
	}
	if a.sandbox != nil {
		a.sandbox.Close()
	}
	if a.volumes != nil {
		a.volumes.Close() // after the sandboxes: the last process to leave unmounts the images
	}
	if a.db != nil {
		a.db.Close()
	}
	a.proc.Release() // last: the sandboxes mounted what is in it (nil-safe)
}
