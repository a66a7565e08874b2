package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config is codecell's configuration. Every field is filled: a value the file
// did not set holds its default, so consumers never apply defaults themselves.
type Config struct {
	File string // the file it came from; "" for defaults
	// Searched are the places looked at, in order, when no file was named
	// and none was found (set by the caller that searched, with SearchPath).
	Searched   []string
	MCPServers map[string]Server // key = server name
	Sandbox    Sandbox
	Policy     Policy
	PII        PII
	HTTP       HTTP
	Sessions   Sessions
	Store      Store
	Toolsets   []string // expanded: never contains "all"; default DefaultToolsets (the lean code-mode surface)
}

// ReservedServer is the name no upstream server may have: search_tools
// names codecell's own tools "codecell.<tool>", as code imports them (from
// codecell import <tool>).
const ReservedServer = "codecell"

// Bounds of Sandbox.AnswerBudget, in bytes of the answer's JSON.
const (
	DefaultAnswerBudget = 20_000
	MinAnswerBudget     = 1_000
)

// Server is one upstream MCP server. Exactly one of Command (a stdio server
// codecell spawns) and URL (a remote server) is set. Besides "transport", the
// JSON accepts "type" ("stdio", "http", "streamable-http", "sse") as MCP hosts
// such as Claude Code and VS Code write it, so their entries paste unchanged.
type Server struct {
	Name      string            // the map key
	Command   string            // program to run; stdio servers only
	Args      []string          // its arguments; stdio servers only
	Env       map[string]string // extra environment; stdio servers only
	Cwd       string            // absolute working directory, "" = inherit; stdio servers only
	URL       string            // http or https endpoint; remote servers only
	Headers   map[string]string // sent with every request; remote servers only
	Transport string            // "stdio" (command), "streamable-http" (default for url), "sse"
	Disabled  bool              // configured but not started
	Timeout   time.Duration     // per tool call; JSON key "timeout", default 60s
	// StartupTimeout bounds starting (or dialling) the server, initializing
	// it and listing its tools; JSON key "startupTimeout", default
	// DefaultStartupTimeout. Code that imports the server while it starts
	// waits for it up to this bound.
	StartupTimeout time.Duration
}

// Sandbox holds the isolation level and the limits applied to every
// execution.
type Sandbox struct {
	Isolation  string        // "development" | "production" (default) | "hardened"
	Python     string        // default "/usr/bin/python3"; must be an absolute path
	Timeout    time.Duration // default wall-clock limit of one execution, default 30s
	MaxTimeout time.Duration // the most a caller may ask for, default 120s; must be >= Timeout
	// TaskAfter is how long an execution of a client that can take MCP
	// tasks runs before its call returns a task instead, default 5s.
	TaskAfter time.Duration
	// TaskTimeout is the most such a client may ask for (timeout_seconds),
	// default 1h; must be >= MaxTimeout.
	TaskTimeout    time.Duration
	Memory         int64         // bytes, default 512MiB, min 32MiB
	Pids           int           // processes and threads, default 128 (threads run upstream calls concurrently), min 4
	CPUTime        time.Duration // default 60s, min 1s (the kernel counts whole seconds)
	Output         int64         // bytes per stream, default 1MiB, min 1KiB
	FileSize       int64         // JSON "fileSize", largest single file written, default 256MiB, min 1KiB
	OpenFiles      int           // JSON "openFiles", default 256, min 16
	TmpSize        int64         // JSON "tmpSize", size cap of /tmp, default 64MiB, min 1MiB
	WorkspaceQuota int64         // bytes per namespace workspace (allocated, as du counts), default 1GiB, min 1MiB
	// WorkspaceEntries caps the files, directories and links of a
	// namespace's workspace: default 250000, min 100.
	WorkspaceEntries int
	// WorkspaceImages says whether a workspace lives in a filesystem image
	// of its own, where the kernel enforces the quota: "auto" (default:
	// where codecell runs as root with loop devices and mkfs.ext4, and the
	// data dir is not shared by replicas), "on" (refuse to start without)
	// or "off" (plain directories, the quota watched).
	WorkspaceImages string
	MaxToolCalls    int // tool calls per execution, default 1000, min 1
	// Pool is how many warm sandboxes each workspace keeps, 0..64; by
	// default 4, and at hardened one per CPU up to 4 (see HardenedPool).
	Pool int
	// IdlePool (JSON "idlePool") is how many of those a workspace keeps
	// once it has run nothing for a minute, 0..Pool, default 1: a busy
	// workspace grows its pool to Pool as its executions overlap, an idle
	// one gives the rest back.
	IdlePool int
	// NamespaceIdle (JSON "namespaceIdle") is how long a namespace runs
	// nothing, holds no live session and makes no call before it gives
	// back everything it holds (warm sandboxes, its workspace's mount and
	// watches, cached choices); its next call sets them up again. Default
	// a minute; 0 keeps them for as long as the server lives.
	NamespaceIdle time.Duration
	// SparePool (JSON "sparePool") is how many sandboxes a server that
	// releases idle namespaces (HTTP, NamespaceIdle > 0) keeps started for
	// no namespace yet, for namespaces coming back from idle to claim
	// (about 12 MB and 3 processes each); default 3, at most WarmLimit, 0
	// for none. More hold a larger burst of returning namespaces.
	SparePool int
	// WarmLimit (JSON "warmLimit") bounds the warm sandboxes of all
	// namespaces together, 1..1024, default 16: warm capacity is the
	// server's, handed to the namespaces that run code, never multiplied
	// by tenants. A busy sandbox (running an execution) is not warm.
	WarmLimit int
	// WarmMemory (JSON "warmMemory") bounds the memory those warm
	// sandboxes hold together (each one's processes' PSS, measured when it
	// is ready), default 2 GiB, at least 64 MiB.
	WarmMemory int64
	// Concurrency bounds the executions running at once across
	// namespaces, default 16; NamespaceConcurrency (JSON
	// "namespaceConcurrency") those of one namespace, default 8, at most
	// Concurrency. A call past its namespace's bound waits its turn (turns
	// go round the namespaces that wait, so one namespace's burst does not
	// take every slot); one that finds as many of its namespace's calls
	// already waiting, or waits past its own timeout, fails at once with
	// a Busy error.
	Concurrency          int
	NamespaceConcurrency int
	// Preload names the modules each sandbox's fork server imports before
	// it forks, so executions that import them pay nothing; default
	// DefaultPreload, [] for none. Only the system's packages are
	// preloaded (never an environment's own).
	Preload []string
	// AnswerBudget is the most bytes of JSON one execution's answer is,
	// structured and text content together (stdout, stderr, result,
	// error, files list): past it each part keeps its head and tail with
	// the cut marked, and the whole output goes to a workspace file the
	// result links to. JSON "answerBudget",
	// default DefaultAnswerBudget, at least MinAnswerBudget; 0 turns the
	// budget off, leaving only the output limit.
	AnswerBudget int
	Network      Network
	Wheelhouse   string // optional absolute dir of wheels for install_dependencies; "" = none
	IndexURL     string // JSON "indexUrl": the package index install_dependencies uses; "" = pip's default
	// IndexURLs (JSON "indexUrls") are the other indexes a call's index_url
	// may name; none by default.
	IndexURLs []string
	// IndexHosts (JSON "indexHosts") are further "host:port" pairs the
	// installer may reach, such as the host an index sends downloads to.
	IndexHosts []string
	// AllowBuilds lets the installer build packages from source
	// distributions, running their build code; wheels only by default.
	AllowBuilds bool
	// ExternalEnvironments are absolute directories under which existing
	// environments may be chosen with configure_environment's path, for
	// every namespace to use read-only; none by default, so a namespace runs
	// only the system Python or environments codecell made for it.
	ExternalEnvironments []string
}

// Network says what the sandbox's code may reach. With "none" (the
// default) it has no network at all; with "allowlist" it reaches what
// Allow admits through codecell's egress proxy, and nothing else.
type Network struct {
	Mode string // "none" (default) | "allowlist"
	// Allow are rules: "api.example.com" (ports 80 and 443),
	// "api.example.com:8443", "*.example.com" (names under it), ":*" for
	// any port, and addresses or CIDRs ("10.0.0.0/8:5432"). Lower case.
	Allow []string
	// Hosts pins names to addresses (JSON "hosts"), in place of DNS; a
	// pinned address may be a private one.
	Hosts map[string][]string
	// Headers are added to every HTTPS request to a host an Allow rule
	// admits, by name: {"api.github.com": {"Authorization": "Bearer
	// ${GITHUB_TOKEN}"}}. ${VAR} comes from codecell's environment; the
	// code never sees the values (the proxy ends its TLS to those hosts).
	Headers map[string]map[string]string
	// Roots is a PEM file of further certificate authorities, trusted by
	// the proxy and by the code (a private CA); "" for the system's only.
	Roots string
	// MaxConnections (default 100) and MaxBytes (default 256 MiB, both
	// ways together) bound each execution's traffic.
	MaxConnections int
	MaxBytes       int64
	// Namespaces give a namespace its own Allow and Headers in place of
	// these (JSON "namespaces": {"team-a": {"allow": [...]}}); an empty
	// allow there turns the network off for it.
	Namespaces map[string]NamespaceNetwork
}

// NamespaceNetwork is one namespace's Network.Allow and Headers.
type NamespaceNetwork struct {
	Allow   []string
	Headers map[string]map[string]string
}

// Network defaults.
const (
	DefaultMaxConnections = 100
	DefaultMaxBytes       = 256 << 20
)

// Policy decides which upstream tools code may call. Patterns match
// "server.tool" with path.Match syntax (* and ?, [...] classes); a call is
// allowed when it matches an Allow pattern and no Deny pattern.
type Policy struct {
	Allow []string // default ["*"]; an explicit empty list allows nothing
	Deny  []string // default none
	// Approve names the calls that wait for a person's approval (the
	// host's elicitation) before they run; ApproveDestructive adds every
	// tool its server annotates destructiveHint and not readOnlyHint.
	Approve            []string
	ApproveDestructive bool
	// ApprovalTimeout bounds the wait for an answer, default 10m; past
	// it the call is refused.
	ApprovalTimeout time.Duration
}

// PII configures the tokenization of personal data on its way to the model.
type PII struct {
	Mode   string      // "tokenize" (default) | "off"
	Custom []CustomPII // JSON "custom": extra kinds detected by regular expression
	// AllowRestore lists restore_pii, which hands the model the original
	// of any token it names; default false.
	AllowRestore bool
	// PhoneRegion is the region (ISO 3166-1 alpha-2) whose national format
	// phone numbers without a country code are read in; default "US".
	PhoneRegion string
}

// CustomPII is one user-defined kind of personal data.
type CustomPII struct {
	Kind    string // token prefix, matches ^[A-Z][A-Z0-9_]*$, e.g. "EMPLOYEE_ID"
	Pattern string // a Go regexp that does not match the empty string, e.g. `E\d{6}`
}

// HTTP configures the Streamable HTTP listener.
type HTTP struct {
	Tokens         map[string]string // bearer token (at least 16 characters) -> namespace (^[a-z0-9][a-z0-9_-]{0,62}$)
	AllowedOrigins []string          // extra allowed Origin values, canonical form: "https://x.example", lower case, no trailing slash
}

// Sessions bounds the live interpreter sessions of execute_code.
type Sessions struct {
	IdleTimeout     time.Duration // JSON "idleTimeout", default 30m
	MaxPerNamespace int           // JSON "maxPerNamespace", default 8, min 1
}

// Store says where codecell's records live.
type Store struct {
	// URL (JSON "url") is a PostgreSQL connection URL, postgres://... or
	// postgresql://...: the records live there, shared by every replica
	// that names it. "" (the default) keeps them in the SQLite file in the
	// data dir. It may hold a password (write it as ${VAR}); errors never
	// print it.
	URL string
}

// defaultServerTimeout bounds one upstream tool call unless the server's
// "timeout" says otherwise.
const defaultServerTimeout = 60 * time.Second

// DefaultStartupTimeout is a server's "startupTimeout" unless it says
// otherwise. It is generous because a server run with "npx -y" may install
// itself first: that takes about 20 s on a cold npm cache, and a bound that
// kills the server mid-install makes it fail every time.
const DefaultStartupTimeout = 60 * time.Second

// Default returns the configuration used when no file is found. Each call
// returns a new value the caller may modify.
func Default() *Config {
	return &Config{
		MCPServers: map[string]Server{},
		Sandbox: Sandbox{
			Isolation:            "production",
			Python:               "/usr/bin/python3",
			Timeout:              30 * time.Second,
			MaxTimeout:           120 * time.Second,
			TaskAfter:            5 * time.Second,
			TaskTimeout:          time.Hour,
			Memory:               512 * MiB,
			Pids:                 128,
			CPUTime:              60 * time.Second,
			Output:               1 * MiB,
			FileSize:             256 * MiB,
			OpenFiles:            256,
			TmpSize:              64 * MiB,
			WorkspaceQuota:       1 * GiB,
			WorkspaceEntries:     250000,
			WorkspaceImages:      "auto",
			MaxToolCalls:         1000,
			Pool:                 4,
			IdlePool:             1,
			NamespaceIdle:        time.Minute,
			SparePool:            3,
			WarmLimit:            16,
			WarmMemory:           2 * GiB,
			Concurrency:          16,
			NamespaceConcurrency: 8,
			Preload:              append([]string(nil), DefaultPreload...),
			AnswerBudget:         DefaultAnswerBudget,
			Network:              Network{Mode: "none", MaxConnections: DefaultMaxConnections, MaxBytes: DefaultMaxBytes},
		},
		Policy:   Policy{Allow: []string{"*"}, ApprovalTimeout: 10 * time.Minute},
		PII:      PII{Mode: "tokenize", PhoneRegion: "US"},
		HTTP:     HTTP{Tokens: map[string]string{}},
		Sessions: Sessions{IdleTimeout: 30 * time.Minute, MaxPerNamespace: 8},
		Toolsets: append([]string(nil), DefaultToolsets...),
	}
}

// DefaultPreload is sandbox.preload's default: the modules most data work
// starts with (a few hundred milliseconds to import, together).
var DefaultPreload = []string{"numpy", "pandas", "matplotlib.pyplot"}

// HardenedPool is the default pool at hardened: one container per CPU, up
// to the usual 4. After each execution a gVisor container forks and sets
// up the next child, tens of milliseconds of CPU; with more containers than
// CPUs doing that at once, sharing them, all became ready late together,
// and a busy client waited for one 6 to 8 times as long as a bare
// interpreter start at p99, against 4 to 4.6 times with one per CPU (2
// CPUs, issue 16; BENCHMARKS.md).
func HardenedPool(cpus int) int { return max(1, min(4, cpus)) }

// Error is one problem in a config file. Parse and Validate return these
// joined with errors.Join; use errors.As or the Unwrap() []error method to
// reach them one by one.
type Error struct {
	File   string // the file name as given to Parse or Load; may be ""
	Path   string // key path such as "sandbox.memory" or "policy.deny[1]"; "" for the file as a whole
	Reason string // what is wrong, and when it helps, what to write instead
}

// Error formats the problem as "<file>: <key path>: <reason>", leaving out an
// empty file or path.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Find returns the config file to use: flagPath (the --config flag) if set,
// else $CODECELL_CONFIG, else ./codecell.json if it exists, else
// $XDG_CONFIG_HOME/codecell/config.json (XDG_CONFIG_HOME defaulting to
// $HOME/.config) if it exists. It returns "" when none is found, which means
// defaults. A file named by the flag or the variable must exist. env looks up
// environment variables; nil means none are set.
func Find(flagPath string, env func(string) string) (string, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	if flagPath != "" {
		if err := mustExist(flagPath, "--config"); err != nil {
			return "", err
		}
		return flagPath, nil
	}
	if p := env("CODECELL_CONFIG"); p != "" {
		if err := mustExist(p, "$CODECELL_CONFIG"); err != nil {
			return "", err
		}
		return p, nil
	}
	for _, p := range candidates(env) {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", fmt.Errorf("find config: %w", err)
		case fi.IsDir():
			return "", fmt.Errorf("find config: %s is a directory", p)
		}
		return p, nil
	}
	return "", nil
}

// mustExist checks a path the user named explicitly.
func mustExist(p, from string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("config file %s (from %s) does not exist", p, from)
	case err != nil:
		return fmt.Errorf("config file %s (from %s): %w", p, from, err)
	case fi.IsDir():
		return fmt.Errorf("config file %s (from %s) is a directory", p, from)
	}
	return nil
}

// Load reads and parses the file at path; path "" returns Default(). env
// expands ${VAR} references as in Parse.
func Load(path string, env func(string) string) (*Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, env)
}

// Parse parses and validates the JSON config in data. name is the file name
// used in errors and stored in Config.File. env looks up the variables named
// by ${VAR}; nil means none are set, so any reference is an error. Empty data
// (or only white space) is the default config, and a JSON null leaves a field
// at its default. On failure the error joins one *Error per problem found.
func Parse(name string, data []byte, env func(string) string) (*Config, error) {
	d := &decoder{file: name, env: env}
	c := Default()
	c.File = name
	root, err := parseTree(data)
	if err != nil {
		return nil, d.syntaxError(data, err)
	}
	if root != nil {
		d.config(root, c)
	}
	for _, p := range c.problems() {
		if !d.failedNear(p) {
			d.errs = append(d.errs, p.err)
		}
	}
	if len(d.errs) > 0 {
		errs := make([]error, len(d.errs))
		for i, e := range d.errs {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// candidates are the files Find looks for when none is named.
func candidates(env func(string) string) []string {
	list := []string{"codecell.json"}
	xdg := env("XDG_CONFIG_HOME")
	if !filepath.IsAbs(xdg) {
		// The XDG spec says a relative value is invalid and must be ignored.
		xdg = ""
		if home := env("HOME"); home != "" {
			xdg = filepath.Join(home, ".config")
		}
	}
	if xdg != "" {
		list = append(list, filepath.Join(xdg, "codecell", "config.json"))
	}
	return list
}

// SearchPath is where Find looks for a config file when none is named, as
// absolute paths: a host that starts codecell in / finds no
// ./codecell.json, and saying where it looked tells the user why.
func SearchPath(env func(string) string) []string {
	if env == nil {
		env = func(string) string { return "" }
	}
	list := candidates(env)
	for i, p := range list {
		if abs, err := filepath.Abs(p); err == nil {
			list[i] = abs
		}
	}
	return list
}

// Source says where the config came from: its file, or that none was
// found and where codecell looked.
func (c *Config) Source() string {
	if c.File != "" {
		if abs, err := filepath.Abs(c.File); err == nil {
			return abs
		}
		return c.File
	}
	if len(c.Searched) == 0 {
		return "none: defaults"
	}
	return "none found, defaults apply (looked for " + strings.Join(c.Searched, ", ") + "; pass --config FILE or set $CODECELL_CONFIG)"
}
