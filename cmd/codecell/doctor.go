package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codecell/codecell/internal/cgroup"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/gate"
	"github.com/codecell/codecell/internal/proc"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/seccomp"
	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/store"
	"github.com/codecell/codecell/internal/upstream"
	"github.com/codecell/codecell/internal/workspace"
)

func runDoctor(ctx context.Context, g *globals, args []string) error {
	fs := g.flags()
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, dataDir, err := g.loadConfig()
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	defer w.Flush()
	fmt.Fprintf(w, "config\t%s\n", cfg.Source())
	fmt.Fprintf(w, "data dir\t%s\n", dataDir)
	fmt.Fprintf(w, "store\t%s\n", storeState(ctx, cfg, dataDir))
	fmt.Fprintf(w, "python\t%s\n", pythonVersion(ctx, cfg.Sandbox.Python))

	configured, _ := sandbox.ParseLevel(cfg.Sandbox.Isolation)
	var configuredErr error
	for _, level := range sandbox.Levels {
		err := sandbox.Check(ctx, level, cfg.Sandbox.Python)
		if err == nil && level == sandbox.Production {
			if _, serr := seccomp.Program(); serr != nil {
				err = serr
			}
		}
		mark := ""
		if level == configured {
			mark = " (configured)"
			configuredErr = err
		}
		switch {
		case err != nil:
			fmt.Fprintf(w, "isolation %s%s\tUNAVAILABLE: %v\n", level, mark, err)
		case level == sandbox.Development:
			fmt.Fprintf(w, "isolation %s%s\tok: plain subprocess with limits, NO isolation\n", level, mark)
		default:
			fmt.Fprintf(w, "isolation %s%s\tok\n", level, mark)
		}
	}
	fmt.Fprintf(w, "seccomp\t%s\n", seccompSummary(seccomp.Rules()))
	fmt.Fprintf(w, "cgroups\t%s\n", cgroupState(configured, cfg.Sandbox.Memory))
	fmt.Fprintf(w, "environments\t%s\n", environmentTools(ctx, cfg.Sandbox.Python))
	stack, preload := dataStack(ctx, cfg.Sandbox.Python, cfg.Sandbox.Preload)
	fmt.Fprintf(w, "data stack\t%s\n", stack)
	fmt.Fprintf(w, "preload\t%s\n", preload)
	if os.Geteuid() == 0 {
		fmt.Fprintf(w, "sandbox user on host\tnobody (uid 65534)\n")
		if ws := server.WorkspaceDir(dataDir, server.DefaultNamespace); configured == sandbox.Production && !sandbox.Reachable(ws) {
			if configuredErr == nil {
				configuredErr = fmt.Errorf("nobody (uid 65534) cannot reach the data dir %s: every directory above it must be searchable by others; use --data-dir /var/lib/codecell or run codecell as an ordinary user", dataDir)
			}
			fmt.Fprintf(w, "data dir\tUNREACHABLE for the sandbox: %v\n", configuredErr)
		}
	}
	wsState, wsErr := workspaceState(cfg, dataDir)
	fmt.Fprintf(w, "workspaces\t%s\n", wsState)
	sb := cfg.Sandbox
	fmt.Fprintf(w, "limits\tmemory %d MiB, pids %d, cpu %s, timeout %s (max %s), output %d KiB, /tmp %d MiB, file %d MiB, open files %d, pool %d (%d when idle)\n",
		sb.Memory>>20, sb.Pids, sb.CPUTime, sb.Timeout, sb.MaxTimeout, sb.Output>>10, sb.TmpSize>>20, sb.FileSize>>20, sb.OpenFiles, sb.Pool, min(sb.IdlePool, sb.Pool))

	if len(cfg.MCPServers) > 0 {
		// Connect for real, as serve would, with the same startupTimeout
		// each, and say how each one went.
		// What a server writes on stderr goes through the gate, as it does
		// in serve's log: a failing server's last lines may hold a key.
		// (The operators' vault, in memory: doctor keeps no tokens.)
		gt, err := gate.New(cfg.PII, nil)
		if err != nil {
			return err
		}
		ups := upstream.New(upstream.Options{Servers: cfg.MCPServers, BaseEnv: config.BaseEnv(os.Getenv), Redact: gt.Redact})
		ups.Start()
		ups.WaitStarted(ctx)
		for _, st := range ups.Statuses() {
			line := fmt.Sprintf("%s, %s, %d tools", st.State, st.Transport, st.Tools)
			if st.Error != "" {
				line += ": " + gt.Redact(st.Error)
			}
			fmt.Fprintf(w, "upstream %s\t%s\n", st.Name, line)
		}
		ups.Close()
	}
	fmt.Fprintf(w, "network\t%s\n", networkSummary(cfg))
	w.Flush()
	if configuredErr != nil {
		return fmt.Errorf("the configured isolation level %s cannot run here: %v", configured, configuredErr)
	}
	if wsErr != nil {
		return fmt.Errorf("workspace images are required (sandbox.workspaceImages is on) but cannot be used here: %v", wsErr)
	}
	return nil
}

// workspaceState says how the workspaces' quota holds on this host: in a
// filesystem image of each workspace's own, enforced by the kernel, or in
// a plain directory, watched; and whether inotify can follow them.
func workspaceState(cfg *config.Config, dataDir string) (string, error) {
	sb := cfg.Sandbox
	limits := fmt.Sprintf("limits (%d MiB and %d entries per workspace)", sb.WorkspaceQuota>>20, sb.WorkspaceEntries)
	mode, why := workspaceImages(cfg, dataDir)
	var err error
	switch {
	case mode == workspace.ImagesOff:
		err = errors.New(why)
	default:
		probeDir := filepath.Join(dataDir, "workspaces")
		if os.MkdirAll(probeDir, 0o711) != nil {
			probeDir = os.TempDir()
		}
		err = workspace.ProbeImages(probeDir)
	}
	var b strings.Builder
	if err == nil {
		fmt.Fprintf(&b, "filesystem images (ext4, loop-mounted): the kernel enforces the %s; a write past them fails with ENOSPC", limits)
	} else {
		fmt.Fprintf(&b, "plain directories: the %s are watched, not enforced by the kernel (no images: %v); an execution that passes them is stopped and what it wrote past them removed, and no file it writes is larger than the quota left", limits, err)
		if mode == workspace.ImagesOn {
			b.WriteString("; sandbox.workspaceImages is on, so codecell will not start")
		} else {
			err = nil
		}
	}
	if data, rerr := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); rerr == nil {
		fmt.Fprintf(&b, "; changes tracked with inotify (at most %s directories per user)", strings.TrimSpace(string(data)))
	}
	return b.String(), err
}

// storeState says where the records live and, for PostgreSQL, whether it
// answers; it changes nothing (no migration).
func storeState(ctx context.Context, cfg *config.Config, dataDir string) string {
	if cfg.Store.URL == "" {
		return "SQLite " + dbPath(dataDir)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := store.CheckURL(ctx, cfg.Store.URL)
	if err != nil {
		return fmt.Sprintf("PostgreSQL %s: UNREACHABLE: %v", store.SafeURL(cfg.Store.URL), err)
	}
	return fmt.Sprintf("PostgreSQL %s: ok (schema version %d)", store.SafeURL(cfg.Store.URL), v)
}

func pythonVersion(ctx context.Context, python string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := proc.Command(ctx, python, "-I", "-S", "-c", "import sys; print(sys.version.split()[0])").Output()
	if err != nil {
		return fmt.Sprintf("%s: UNUSABLE: %v", python, err)
	}
	return fmt.Sprintf("%s (Python %s)", python, strings.TrimSpace(string(out)))
}

// cgroupState says what sandbox.memory bounds on this host: each sandbox's
// processes together (a cgroup per sandbox) or each process alone.
func cgroupState(level sandbox.Level, memory int64) string {
	perProcess := fmt.Sprintf("sandbox.memory (%d MiB) bounds each process's address space alone (RLIMIT_AS), so k processes of one execution can hold k times it", memory>>20)
	if level == sandbox.Development {
		return fmt.Sprintf("not used at %s isolation: %s", level, perProcess)
	}
	h, err := cgroup.Host()
	if err != nil {
		return fmt.Sprintf("MEMORY PER PROCESS ONLY: %v; %s, and processes are bounded by RLIMIT_NPROC", err, perProcess)
	}
	extra := sandbox.ForkServerMemory
	if level == sandbox.Hardened {
		extra = sandbox.GVisorMemory
	}
	return fmt.Sprintf("one per sandbox, %s: sandbox.memory (%d MiB) bounds all of a sandbox's processes together (plus %d MiB for what runs beside the code at %s isolation), and each process's address space",
		h, memory>>20, extra>>20, level)
}

// networkSummary says what the code may reach (sandbox.network).
func networkSummary(cfg *config.Config) string {
	n := cfg.Sandbox.Network
	if n.Mode != "allowlist" {
		return "none: the code has no network"
	}
	s := fmt.Sprintf("allowlist through the egress proxy: %s", strings.Join(n.Allow, ", "))
	if len(n.Allow) == 0 {
		s = "allowlist, empty: nothing is reachable"
	}
	if len(n.Namespaces) > 0 {
		s += fmt.Sprintf("; %d namespaces with their own", len(n.Namespaces))
	}
	if len(n.Headers) > 0 {
		s += fmt.Sprintf("; headers added for %d hosts", len(n.Headers))
	}
	if cfg.Sandbox.Isolation == "development" {
		s += " (development isolation: the code has the host's network, the allowlist is not enforced)"
	}
	return s
}

// seccompSummary says what the filter refuses: the calls it refuses
// whatever their arguments, by name, and how many it refuses only for some
// (clone with namespace flags, socket of other families), so that no call
// reads as refused when only some uses of it are.
func seccompSummary(rules []seccomp.Rule) string {
	var always []string
	some := 0
	for _, r := range rules {
		if r.When == "" {
			always = append(always, r.Syscall)
		} else {
			some++
		}
	}
	return fmt.Sprintf("%d calls refused (%s, ...), %d more for some arguments (clone with namespace flags, sockets of other families...); unknown call numbers fail with ENOSYS",
		len(always), strings.Join(always[:min(6, len(always))], ", "), some)
}

// environmentTools says which environment types can be used here.
func environmentTools(ctx context.Context, python string) string {
	parts := []string{"system ok"}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if proc.Command(ctx, python, "-I", "-c", "import ensurepip, venv").Run() == nil {
		parts = append(parts, "venv ok")
	} else {
		parts = append(parts, "venv UNAVAILABLE (install python3-venv)")
	}
	for _, tool := range []string{"uv", "conda"} {
		if p := lookPath(tool); p != "" {
			parts = append(parts, tool+" ok ("+p+")")
		} else {
			parts = append(parts, tool+" not installed")
		}
	}
	return strings.Join(parts, ", ")
}
