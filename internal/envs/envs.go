package envs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codecell/codecell/internal/sandbox"
)

// The environment types.
const (
	System = "system"
	Venv   = "venv"
	UV     = "uv"
	Conda  = "conda"
)

// Config is a namespace's environment.
type Config struct {
	Type    string `json:"type" jsonschema:"system, venv, uv or conda"`
	Path    string `json:"path,omitempty" jsonschema:"The environment's directory."`
	Name    string `json:"name,omitempty" jsonschema:"The conda environment's name, when given."`
	Python  string `json:"python" jsonschema:"The interpreter execute_code runs."`
	Managed bool   `json:"managed" jsonschema:"True when codecell created the environment and manages it."`
	// SystemPackages says a venv sees the system's packages (pandas, numpy
	// and the rest of the sandbox's stack) under its own.
	SystemPackages bool `json:"system_packages,omitempty" jsonschema:"True when the venv also sees the system's packages (pandas, numpy, matplotlib ...), under its own."`
}

// Choice is what configure_environment chooses.
type Choice struct {
	Type, Path, Name string
	// SystemPackages, for a venv or uv environment codecell manages: nil
	// means true (installing one package must not lose the stack).
	SystemPackages *bool
}

// Runner runs a command in a sandbox; *sandbox.Manager is the real one.
type Runner interface {
	Run(ctx context.Context, c sandbox.Command) (*sandbox.CommandResult, error)
	PrepareDir(dir string) error
}

// Store persists each namespace's choice of environment; *store.Store is
// the real one. The config is a JSON document whose shape belongs to envs.
type Store interface {
	SetEnvironment(ctx context.Context, ns string, config json.RawMessage) error
	// Environment returns the config of ns, and false if none was set.
	Environment(ctx context.Context, ns string) (json.RawMessage, bool, error)
}

// Options configure a Manager.
type Options struct {
	DataDir string // environments live under DataDir/envs/<namespace>/
	// Store holds the choices. nil keeps them for the life of the Manager
	// only, and leaves files of an earlier codecell where they are.
	Store        Store
	SystemPython string // the "system" environment's interpreter
	Wheelhouse   string // a directory of wheels to install from; "" for none
	IndexURL     string // the package index when neither the call nor a wheelhouse names one; "" = pip's default
	// IndexURLs are the indexes a call's index_url may name besides
	// IndexURL; IndexHosts are further "host:port" pairs the installer may
	// reach (where an index sends downloads).
	IndexURLs, IndexHosts []string
	// AllowBuilds lets the installer build source distributions, which runs
	// their build code; without it only wheels install.
	AllowBuilds bool
	UV, Conda   string // the uv and conda binaries; "" when not installed
	Runner      Runner
	// ExternalRoots are the directories under which configure_environment
	// may choose an existing environment by path (the operator's
	// sandbox.externalEnvironments); none means only managed environments.
	ExternalRoots []string
	// Fresh, when positive, is how long a choice read from the store is
	// trusted before it is read again: the store is shared with other
	// replicas, which may change it. Zero trusts it for the Manager's life
	// (this process is the only one that changes the choices).
	Fresh time.Duration
}

// Manager holds the environments of every namespace. It is safe for
// concurrent use; changes to one namespace's environment, and its first
// read, are serialized.
type Manager struct {
	opts  Options
	mu    sync.Mutex             // guards locks and known
	locks map[string]*sync.Mutex // one per namespace
	// known caches configs read or saved, the default included, so that
	// executions do not query the store, each with the time it was read.
	// Without Options.Fresh it assumes this process is the only one that
	// changes the data dir's choices.
	known map[string]knownConfig
}

type knownConfig struct {
	c    Config
	read time.Time
}

// New returns a Manager.
func New(opts Options) *Manager {
	return &Manager{opts: opts, locks: map[string]*sync.Mutex{}, known: map[string]knownConfig{}}
}

// ErrUnavailable reports an environment type whose tool is not installed.
var ErrUnavailable = errors.New("environment type unavailable")

// Forget drops what the Manager cached of ns's choice, for a namespace that
// has gone idle: the next Get reads it again. Without a store the cache is
// the only record of the choice, and stays.
func (m *Manager) Forget(ns string) {
	if m.opts.Store == nil {
		return
	}
	m.mu.Lock()
	delete(m.known, ns)
	m.mu.Unlock()
}

func (m *Manager) lock(ns string) func() {
	m.mu.Lock()
	l := m.locks[ns]
	if l == nil {
		l = &sync.Mutex{}
		m.locks[ns] = l
	}
	m.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (m *Manager) dir(ns string) string { return filepath.Join(m.opts.DataDir, "envs", ns) }

// legacyFile is where codecell before the store kept a namespace's choice;
// the first read of the namespace moves it into the store.
func (m *Manager) legacyFile(ns string) string {
	return filepath.Join(m.opts.DataDir, "envs", ns+".json")
}

// storeTimeout bounds one read or write of a choice in the store.
const storeTimeout = 30 * time.Second

// Get returns a namespace's environment: the system one unless configured.
//
// Get takes no context because the execution path asks for the environment
// where none is plumbed; only a namespace's first Get reads the store, one
// row, bounded by storeTimeout.
func (m *Manager) Get(ns string) (Config, error) {
	if c, ok := m.cached(ns); ok {
		return c, nil
	}
	defer m.lock(ns)()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	return m.get(ctx, ns)
}

func (m *Manager) cached(ns string) (Config, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.known[ns]
	if ok && m.opts.Fresh > 0 && time.Since(k.read) > m.opts.Fresh {
		return Config{}, false
	}
	return k.c, ok
}

// get is Get for a caller that holds the namespace's lock. Holding it is
// what keeps a migration from overwriting a choice Configure has just made.
func (m *Manager) get(ctx context.Context, ns string) (Config, error) {
	if c, ok := m.cached(ns); ok {
		return c, nil
	}
	c := Config{Type: System, Python: m.opts.SystemPython}
	if m.opts.Store == nil {
		return c, nil
	}
	raw, ok, err := m.opts.Store.Environment(ctx, ns)
	if err != nil {
		return Config{}, fmt.Errorf("read environment: %w", err)
	}
	if ok {
		if err := json.Unmarshal(raw, &c); err != nil {
			return Config{}, fmt.Errorf("read environment of %s: %w", ns, err)
		}
		if err := m.allowed(ns, c); err != nil {
			// A choice made before the rules, or by a config since changed.
			return Config{}, fmt.Errorf("the environment chosen for this namespace is not allowed: %w; choose another with configure_environment", err)
		}
		// The store wins over a file a crash left between copy and
		// removal; removing it is tidying, so a failure is not an error.
		os.Remove(m.legacyFile(ns))
		m.remember(ns, c)
		return c, nil
	}
	if c, ok, err := m.migrate(ctx, ns); err != nil || ok {
		return c, err
	}
	m.remember(ns, c)
	return c, nil
}

// migrate moves a choice kept in a file by an earlier codecell into the
// store: the row is committed before the file is removed, so a crash in
// between leaves both, and the next start's read removes the file.
func (m *Manager) migrate(ctx context.Context, ns string) (Config, bool, error) {
	file := m.legacyFile(ns)
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, false, nil
	}
	if err != nil {
		return Config{}, false, fmt.Errorf("read environment: %w", err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, false, fmt.Errorf("read environment %s: %w", file, err)
	}
	if err := m.allowed(ns, c); err != nil {
		return Config{}, false, fmt.Errorf("the environment chosen for this namespace (in %s) is not allowed: %w; choose another with configure_environment", file, err)
	}
	if err := m.save(ctx, ns, c); err != nil {
		return Config{}, false, err
	}
	// Once the row exists the store wins over the file, so a file that
	// cannot be removed is stale, not wrong; the next start tries again.
	os.Remove(file)
	return c, true, nil
}

func (m *Manager) remember(ns string, c Config) {
	m.mu.Lock()
	m.known[ns] = knownConfig{c: c, read: time.Now()}
	m.mu.Unlock()
}

// SandboxPython is what an execution with c runs: the interpreter and the
// host directories it needs. The system environment is the sandbox's own
// default ("", nil).
func (c Config) SandboxPython() (string, []string) {
	if c.Type == System || c.Python == "" {
		return "", nil
	}
	dirs := []string{c.Path}
	if real, err := filepath.EvalSymlinks(c.Python); err == nil && !strings.HasPrefix(real, "/usr/") && !strings.HasPrefix(real, c.Path+"/") {
		dirs = append(dirs, filepath.Dir(filepath.Dir(real)))
	}
	return c.Python, dirs
}

// Configure chooses a namespace's environment. With path, an existing
// environment is used as it is; without (venv, uv), codecell creates one
// under its data dir, or reuses the one it created before.
func (m *Manager) Configure(ctx context.Context, ns, typ, path, name string) (Config, error) {
	return m.Choose(ctx, ns, Choice{Type: typ, Path: path, Name: name})
}

// Choose is Configure with every choice configure_environment offers.
func (m *Manager) Choose(ctx context.Context, ns string, ch Choice) (Config, error) {
	typ, path, name := ch.Type, ch.Path, ch.Name
	if ch.SystemPackages != nil && (path != "" || (typ != Venv && typ != UV)) {
		return Config{}, errors.New("invalid argument system_packages: only a venv or uv environment codecell makes (no path) takes it")
	}
	defer m.lock(ns)()
	if path != "" && !filepath.IsAbs(path) {
		return Config{}, fmt.Errorf("invalid argument path: %q is not absolute", path)
	}
	var c Config
	switch typ {
	case System:
		if path != "" || name != "" {
			return Config{}, errors.New("invalid argument path: the system environment takes no path or name")
		}
		c = Config{Type: System, Python: m.opts.SystemPython}
	case Venv, UV:
		if typ == UV && m.opts.UV == "" {
			return Config{}, fmt.Errorf("%w: uv is not installed on this host (install it, then restart codecell)", ErrUnavailable)
		}
		if name != "" {
			return Config{}, errors.New("invalid argument name: only conda environments have names")
		}
		if path != "" {
			real, err := m.external(path)
			if err != nil {
				return Config{}, err
			}
			if err := checkEnvDir(real); err != nil {
				return Config{}, err
			}
			c = Config{Type: typ, Path: real, Python: filepath.Join(real, "bin", "python")}
			if err := m.allowed(ns, c); err != nil {
				return Config{}, fmt.Errorf("invalid argument path: %w", err)
			}
			break
		}
		dir := filepath.Join(m.dir(ns), typ)
		c = Config{Type: typ, Path: dir, Python: filepath.Join(dir, "bin", "python"), Managed: true}
		if checkEnvDir(dir) != nil {
			if err := m.create(ctx, ns, typ, dir); err != nil {
				return Config{}, err
			}
		}
		c.SystemPackages = ch.SystemPackages == nil || *ch.SystemPackages
		if err := setSystemPackages(dir, c.SystemPackages); err != nil {
			return Config{}, err
		}
	case Conda:
		if m.opts.Conda == "" {
			return Config{}, fmt.Errorf("%w: conda is not installed on this host (install Miniconda or Miniforge, then restart codecell)", ErrUnavailable)
		}
		if path == "" {
			return Config{}, errors.New("invalid argument path: give the conda environment's prefix directory (conda env list shows them)")
		}
		real, err := m.external(path)
		if err != nil {
			return Config{}, err
		}
		if _, err := os.Stat(filepath.Join(real, "bin", "python")); err != nil {
			return Config{}, fmt.Errorf("invalid argument path: %s has no bin/python", path)
		}
		c = Config{Type: Conda, Path: real, Name: name, Python: filepath.Join(real, "bin", "python")}
		if err := m.allowed(ns, c); err != nil {
			return Config{}, fmt.Errorf("invalid argument path: %w", err)
		}
	default:
		return Config{}, fmt.Errorf("invalid argument type: %q is not one of system, venv, uv, conda", typ)
	}
	if err := m.save(ctx, ns, c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// external resolves the path of an existing environment a caller chose,
// which must lie under one of the operator's ExternalRoots and outside the
// data dir, once every symbolic link is followed: a namespace must never
// get another's environment, workspace or anything else of the data dir
// mounted for it, nor run an interpreter its own code placed.
func (m *Manager) external(path string) (string, error) {
	if len(m.opts.ExternalRoots) == 0 {
		return "", errors.New("invalid argument path: this server allows no existing environments " +
			"(the operator lists their directories in sandbox.externalEnvironments); " +
			"without a path, venv and uv make an environment for this namespace")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("invalid argument path: %s does not exist", path)
	}
	if !m.underExternalRoot(real) {
		return "", fmt.Errorf("invalid argument path: %s is not under a directory the operator allows (%s)",
			path, strings.Join(m.opts.ExternalRoots, ", "))
	}
	return real, nil
}

// underExternalRoot says whether the resolved path p is under an external
// root and outside the data dir.
func (m *Manager) underExternalRoot(p string) bool {
	if within(p, resolved(m.opts.DataDir)) {
		return false
	}
	for _, root := range m.opts.ExternalRoots {
		if within(p, resolved(root)) {
			return true
		}
	}
	return false
}

// allowed checks a choice of environment for namespace ns: a managed one is
// the namespace's own, an external one lies under an external root, and
// either's interpreter resolves into the environment itself, /usr or an
// external root, never into a workspace or another namespace's files.
func (m *Manager) allowed(ns string, c Config) error {
	if c.Type == System {
		return nil
	}
	if c.Managed {
		if c.Path != filepath.Join(m.dir(ns), c.Type) {
			return fmt.Errorf("%s is not this namespace's managed environment", c.Path)
		}
	} else if !m.underExternalRoot(resolved(c.Path)) {
		return fmt.Errorf("%s is not under a directory the operator allows", c.Path)
	}
	python, err := filepath.EvalSymlinks(c.Python)
	if err != nil {
		return fmt.Errorf("%s has no bin/python", c.Path)
	}
	if !within(python, resolved(c.Path)) && !within(python, "/usr") && !m.underExternalRoot(python) {
		return fmt.Errorf("its interpreter %s leads to %s, outside the environment, /usr and the allowed directories", c.Python, python)
	}
	return nil
}

// resolved is p with its symbolic links followed, or p when that fails.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within says whether p is dir or beneath it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

func checkEnvDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "pyvenv.cfg")); err != nil {
		return fmt.Errorf("invalid argument path: %s is not a virtual environment (no pyvenv.cfg)", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "bin", "python")); err != nil {
		return fmt.Errorf("invalid argument path: %s has no bin/python", dir)
	}
	return nil
}

// create makes a managed environment, sandboxed, writing only into the
// namespace's environment directory.
func (m *Manager) create(ctx context.Context, ns, typ, dir string) error {
	if err := m.opts.Runner.PrepareDir(m.dir(ns)); err != nil {
		return err
	}
	os.RemoveAll(dir) // a half-made one from an interrupted attempt
	args := []string{m.opts.SystemPython, "-m", "venv", dir}
	if typ == UV {
		args = []string{m.opts.UV, "venv", "--python", m.opts.SystemPython, dir}
	}
	res, err := m.opts.Runner.Run(ctx, sandbox.Command{
		Args: args, Writable: []string{m.dir(ns)}, Env: baseEnv(), Timeout: 5 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("create the %s environment: %w", typ, err)
	}
	if res.ExitCode != 0 {
		hint := ""
		if typ == Venv && strings.Contains(res.Output, "ensurepip") {
			hint = " (install python3-venv)"
		}
		return fmt.Errorf("create the %s environment: exit status %d%s: %s", typ, res.ExitCode, hint, lastLines(res.Output, 5))
	}
	return nil
}

// save persists c as the namespace's choice and caches it.
func (m *Manager) save(ctx context.Context, ns string, c Config) error {
	if m.opts.Store != nil {
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("save environment: %w", err)
		}
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		if err := m.opts.Store.SetEnvironment(ctx, ns, b); err != nil {
			return fmt.Errorf("save environment: %w", err)
		}
	}
	m.remember(ns, c)
	return nil
}

// Outcome is the result of installing one requirement.
type Outcome struct {
	Package string `json:"package" jsonschema:"The requirement as given."`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty" jsonschema:"Why it was refused or failed."`
	Output  string `json:"output,omitempty" jsonschema:"The installer's last lines when it failed."`
}

// Install validates every requirement, then installs the valid ones into
// the namespace's environment, one installer run each, sandboxed. It fails
// as a whole only when the environment cannot take installs.
func (m *Manager) Install(ctx context.Context, ns string, packages []string, indexURL string) ([]Outcome, error) {
	defer m.lock(ns)()
	c, err := m.get(ctx, ns)
	if err != nil {
		return nil, err
	}
	if c.Type == System {
		return nil, errors.New("the system environment is read-only: call configure_environment with type venv (or uv) first")
	}
	if !c.Managed {
		// An external environment is the operator's, shared by every
		// namespace that chooses it: no namespace may change it.
		return nil, fmt.Errorf("the environment at %s is shared and read-only: to install, call configure_environment with type venv (or uv) and no path, which makes one for this namespace", c.Path)
	}
	if indexURL != "" {
		u, err := url.Parse(indexURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(indexURL, " \n\t") {
			return nil, fmt.Errorf("invalid argument index_url: %q is not an http(s) URL", indexURL)
		}
		if indexURL != m.opts.IndexURL && !slices.Contains(m.opts.IndexURLs, indexURL) {
			allowed := append([]string{}, m.opts.IndexURLs...)
			if m.opts.IndexURL != "" {
				allowed = append(allowed, m.opts.IndexURL)
			}
			if len(allowed) == 0 {
				return nil, fmt.Errorf("invalid argument index_url: this server allows no index but its own (the operator lists others in sandbox.indexUrls); leave index_url out")
			}
			return nil, fmt.Errorf("invalid argument index_url: %q is not one of the indexes the operator allows: %s", indexURL, strings.Join(allowed, ", "))
		}
	}
	out := make([]Outcome, len(packages))
	for i, p := range packages {
		out[i].Package = p
		r, err := ParseRequirement(p)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		res, err := m.opts.Runner.Run(ctx, m.installCommand(c, r, indexURL))
		switch {
		case err != nil:
			out[i].Error = err.Error()
		case res.TimedOut:
			out[i].Error = "the installer timed out"
		case res.ExitCode != 0:
			out[i].Error = fmt.Sprintf("the installer failed (exit status %d)", res.ExitCode)
			if len(res.Refused) > 0 {
				// The installer says only "403 Forbidden"; the proxy knows why.
				out[i].Error += ": " + strings.Join(res.Refused, "; ")
			}
			out[i].Output = lastLines(res.Output, 8)
		default:
			out[i].OK = true
		}
	}
	return out, nil
}

// defaultIndexHosts are what pip's default index, PyPI, needs.
var defaultIndexHosts = []string{"pypi.org:443", "files.pythonhosted.org:443"}

func (m *Manager) installCommand(c Config, r Requirement, indexURL string) sandbox.Command {
	var source, ro, egress []string
	switch {
	case indexURL != "":
		source, egress = []string{"--index-url", indexURL}, append(hostPort(indexURL), m.opts.IndexHosts...)
	case m.opts.Wheelhouse != "":
		source, ro = []string{"--no-index", "--find-links", m.opts.Wheelhouse}, []string{m.opts.Wheelhouse}
	case m.opts.IndexURL != "":
		source, egress = []string{"--index-url", m.opts.IndexURL}, append(hostPort(m.opts.IndexURL), m.opts.IndexHosts...)
	default:
		egress = append(append([]string{}, defaultIndexHosts...), m.opts.IndexHosts...)
	}
	env := baseEnv()
	var args []string
	if c.Type == UV {
		// uv takes the proxy from HTTPS_PROXY, which the sandbox sets.
		args = append([]string{m.opts.UV, "pip", "install", "--python", c.Python}, source...)
		if !m.opts.AllowBuilds {
			args = append(args, "--no-build")
		}
		env = append(env, "UV_CACHE_DIR=/tmp/uv-cache", "UV_NO_CONFIG=1")
	} else {
		args = append([]string{c.Python, "-m", "pip", "install", "--isolated", "--no-input",
			"--disable-pip-version-check", "--no-cache-dir"}, source...)
		if len(egress) > 0 {
			// --isolated ignores the environment's proxy variables.
			args = append(args, "--proxy", sandbox.ProxyArg)
		}
		if !m.opts.AllowBuilds {
			// A source distribution runs its build code: only wheels.
			args = append(args, "--only-binary", ":all:")
		}
	}
	// "--" ends the options: nothing after it is read as one.
	args = append(args, "--", r.String())
	_, dirs := c.SandboxPython()
	if len(dirs) > 1 {
		ro = append(ro, dirs[1:]...) // a base interpreter outside /usr
	}
	return sandbox.Command{
		Args: args, Writable: []string{c.Path}, ReadOnly: ro,
		Env: env, Egress: egress, Timeout: 10 * time.Minute,
	}
}

// hostPort is the "host:port" an index URL reaches.
func hostPort(index string) []string {
	u, err := url.Parse(index)
	if err != nil || u.Host == "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return []string{net.JoinHostPort(u.Hostname(), port)}
}

func baseEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "PIP_NO_INPUT=1"}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
