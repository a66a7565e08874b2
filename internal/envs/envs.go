package envs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
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
}

// Runner runs a command in a sandbox; *sandbox.Manager is the real one.
type Runner interface {
	Run(ctx context.Context, c sandbox.Command) (*sandbox.CommandResult, error)
	PrepareDir(dir string) error
}

// Options configure a Manager.
type Options struct {
	DataDir      string // environments live under DataDir/envs/<namespace>/
	SystemPython string // the "system" environment's interpreter
	Wheelhouse   string // a directory of wheels to install from; "" for none
	IndexURL     string // the package index when neither the call nor a wheelhouse names one; "" = pip's default
	UV, Conda    string // the uv and conda binaries; "" when not installed
	Runner       Runner
}

// Manager holds the environments of every namespace. It is safe for
// concurrent use; changes to one namespace's environment are serialized.
type Manager struct {
	opts  Options
	mu    sync.Mutex             // guards locks and known
	locks map[string]*sync.Mutex // one per namespace
	known map[string]Config      // configs read or saved, so executions do not reread the file
}

// New returns a Manager.
func New(opts Options) *Manager {
	return &Manager{opts: opts, locks: map[string]*sync.Mutex{}, known: map[string]Config{}}
}

// ErrUnavailable reports an environment type whose tool is not installed.
var ErrUnavailable = errors.New("environment type unavailable")

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

func (m *Manager) configFile(ns string) string {
	return filepath.Join(m.opts.DataDir, "envs", ns+".json")
}

// Get returns a namespace's environment: the system one unless configured.
func (m *Manager) Get(ns string) (Config, error) {
	m.mu.Lock()
	c, ok := m.known[ns]
	m.mu.Unlock()
	if ok {
		return c, nil
	}
	b, err := os.ReadFile(m.configFile(ns))
	if errors.Is(err, os.ErrNotExist) {
		return Config{Type: System, Python: m.opts.SystemPython}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("read environment: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("read environment %s: %w", m.configFile(ns), err)
	}
	m.remember(ns, c)
	return c, nil
}

func (m *Manager) remember(ns string, c Config) {
	m.mu.Lock()
	m.known[ns] = c
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
			if err := checkEnvDir(path); err != nil {
				return Config{}, err
			}
			c = Config{Type: typ, Path: path, Python: filepath.Join(path, "bin", "python")}
			break
		}
		dir := filepath.Join(m.dir(ns), typ)
		c = Config{Type: typ, Path: dir, Python: filepath.Join(dir, "bin", "python"), Managed: true}
		if checkEnvDir(dir) != nil {
			if err := m.create(ctx, ns, typ, dir); err != nil {
				return Config{}, err
			}
		}
	case Conda:
		if m.opts.Conda == "" {
			return Config{}, fmt.Errorf("%w: conda is not installed on this host (install Miniconda or Miniforge, then restart codecell)", ErrUnavailable)
		}
		if path == "" {
			return Config{}, errors.New("invalid argument path: give the conda environment's prefix directory (conda env list shows them)")
		}
		if _, err := os.Stat(filepath.Join(path, "bin", "python")); err != nil {
			return Config{}, fmt.Errorf("invalid argument path: %s has no bin/python", path)
		}
		c = Config{Type: Conda, Path: path, Name: name, Python: filepath.Join(path, "bin", "python")}
	default:
		return Config{}, fmt.Errorf("invalid argument type: %q is not one of system, venv, uv, conda", typ)
	}
	if err := m.save(ns, c); err != nil {
		return Config{}, err
	}
	return c, nil
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

func (m *Manager) save(ns string, c Config) error {
	if err := os.MkdirAll(filepath.Join(m.opts.DataDir, "envs"), 0o711); err != nil {
		return fmt.Errorf("save environment: %w", err)
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	if err := writeAtomic(m.configFile(ns), b); err != nil {
		return fmt.Errorf("save environment: %w", err)
	}
	m.remember(ns, c)
	return nil
}

// writeAtomic writes a file through a temporary file, fsync and rename, so a
// crash leaves the old content or the new, never a mix.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
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
	c, err := m.Get(ns)
	if err != nil {
		return nil, err
	}
	if c.Type == System {
		return nil, errors.New("the system environment is read-only: call configure_environment with type venv (or uv) first")
	}
	if indexURL != "" {
		u, err := url.Parse(indexURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(indexURL, " \n\t") {
			return nil, fmt.Errorf("invalid argument index_url: %q is not an http(s) URL", indexURL)
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
			out[i].Output = lastLines(res.Output, 8)
		default:
			out[i].OK = true
		}
	}
	return out, nil
}

func (m *Manager) installCommand(c Config, r Requirement, indexURL string) sandbox.Command {
	var source, ro []string
	network := false
	switch {
	case indexURL != "":
		source, network = []string{"--index-url", indexURL}, true
	case m.opts.Wheelhouse != "":
		source, ro = []string{"--no-index", "--find-links", m.opts.Wheelhouse}, []string{m.opts.Wheelhouse}
	case m.opts.IndexURL != "":
		source, network = []string{"--index-url", m.opts.IndexURL}, true
	default:
		network = true // the default index
	}
	env := baseEnv()
	var args []string
	if c.Type == UV {
		args = append([]string{m.opts.UV, "pip", "install", "--python", c.Python}, source...)
		env = append(env, "UV_CACHE_DIR=/tmp/uv-cache", "UV_NO_CONFIG=1")
	} else {
		args = append([]string{c.Python, "-m", "pip", "install", "--isolated", "--no-input",
			"--disable-pip-version-check", "--no-cache-dir"}, source...)
	}
	// "--" ends the options: nothing after it is read as one.
	args = append(args, "--", r.String())
	_, dirs := c.SandboxPython()
	if len(dirs) > 1 {
		ro = append(ro, dirs[1:]...) // a base interpreter outside /usr
	}
	return sandbox.Command{
		Args: args, Writable: []string{c.Path}, ReadOnly: ro,
		Env: env, Network: network, Timeout: 10 * time.Minute,
	}
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
