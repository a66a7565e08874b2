package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/envs"
	"github.com/codecell/codecell/internal/gate"
	"github.com/codecell/codecell/internal/metrics"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/skills"
	"github.com/codecell/codecell/internal/store"
	"github.com/codecell/codecell/internal/upstream"
	"github.com/codecell/codecell/internal/workspace"
)

//go:embed instructions.md
var instructions string

// Executor runs code in a sandbox; *sandbox.Manager is the real one.
type Executor interface {
	Exec(ctx context.Context, req sandbox.Request) *sandbox.Result
	Level() sandbox.Level
}

// Upstreams are the upstream MCP servers; *upstream.Manager is the real one.
type Upstreams interface {
	Call(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
	Tools() []catalog.Tool
	Statuses() []upstream.Status
	// Wait returns once the server is connected and RefreshTools has seen
	// its tools, or says why not (upstream.ErrStarting when ctx ended
	// first). Code that imports a server still starting waits with it.
	Wait(ctx context.Context, server string) error
}

// Options configure a Server.
type Options struct {
	Config    *config.Config // required
	Executor  Executor       // required
	DataDir   string         // required: workspaces live under it
	Upstreams Upstreams      // nil means none
	Envs      *envs.Manager  // nil disables the env toolset; executions use the system Python
	Store     *store.Store   // the PII vault, the execution log and the session records; nil keeps tokens in memory, logs no executions and leaves out get_execution_stats. New does not clear this replica's old session records: the caller does, at start-up (store.Store.ClearSessions)
	// GenDir is where the generated servers package is published for the
	// sandbox (sandbox.Options.GenDir); "" means it is not written. It must
	// be this process's own: publishing repoints GenDir/servers, which would
	// pull the package out from under another process's sandboxes.
	GenDir string
	// Skills keeps the saved skills; nil leaves out the skills toolset and
	// executions have no skills package.
	Skills *skills.Manager
	// Volumes are the namespaces' workspaces; nil makes plain directories
	// with the config's quota and cap on entries, closed by Close. The
	// caller closes one it passes, after Close.
	Volumes *workspace.Volumes
	// Gate tokenizes personal data on its way out (see Gate); nil makes
	// one from Config.PII and Store, and passes the server's own log lines
	// through it. A caller that gives one has passed Logger through its
	// LogHandler.
	Gate    *gate.Gate
	Version string       // reported to clients; "" means "dev"
	Logger  *slog.Logger // nil means silent
	// Replica names this server among replicas behind one balancer: its
	// metrics carry it as a label. "" leaves the label out.
	Replica string
	// Packages are the notable Python packages the sandbox's Python has
	// (sandbox.Importable), named in the instructions; nil names none.
	Packages []string
}

// Server holds codecell's MCP server and what its tools need. It is safe
// for concurrent use (see the package doc, Concurrency).
type Server struct {
	cfg     *config.Config
	exec    Executor
	up      Upstreams
	envs    *envs.Manager
	gate    *gate.Gate
	store   *store.Store // nil: no execution log
	tools   *toolIndex
	policy  policy
	dataDir string
	// networks are what each namespace's code may reach (sandbox.network).
	networks *networks
	// sessions are the live interpreters of execute_code's session_id.
	sessions *sessions
	activity activity        // executions under way, for TrimWhenIdle
	tenants  tenants         // each namespace's use, for ReleaseIdle
	admit    admission       // bounds the executions running at once
	skills   *skills.Manager // nil: no skills
	// builtins are codecell's own tools, listed or not; set by New.
	builtins []*builtin
	// codeTools are the names of the builtins code can call, for the
	// codecell package's help (sandbox.Request.CodecellTools).
	codeTools []string
	// vols are the workspaces; volOnce makes them when none were given
	// (ownVols: then Close closes them).
	vols    *workspace.Volumes
	volOnce sync.Once
	volErr  error
	ownVols bool
	metrics *metrics.Metrics
	health  sandboxHealth // for /readyz
	replica string
	log     *slog.Logger
	mcp     *mcp.Server
	// tasks are the executions that outlive their requests (tasks.go).
	tasks *tasks
}

// DefaultNamespace is the namespace of stdio clients and of HTTP without
// tokens.
const DefaultNamespace = gate.DefaultNamespace

// New builds the MCP server with the toolsets the config selects.
func New(opts Options) (*Server, error) {
	if opts.Config == nil || opts.Executor == nil || opts.DataDir == "" {
		return nil, fmt.Errorf("server: Config, Executor and DataDir are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s := &Server{
		cfg: opts.Config, exec: opts.Executor, up: opts.Upstreams, envs: opts.Envs, dataDir: opts.DataDir, log: log,
		store:   opts.Store,
		replica: opts.Replica,
		vols:    opts.Volumes,
		tools:   &toolIndex{genDir: opts.GenDir},
		policy:  policy{allow: opts.Config.Policy.Allow, deny: opts.Config.Policy.Deny},
	}
	if s.up == nil {
		s.up = noUpstreams{}
	}
	s.gate = opts.Gate
	if s.gate == nil {
		g, err := gate.New(opts.Config.PII, opts.Store)
		if err != nil {
			return nil, err
		}
		s.gate = g
		s.log = slog.New(g.LogHandler(log.Handler()))
		log = s.log
	}
	nets, err := newNetworks(opts.Config.Sandbox.Network)
	if err != nil {
		return nil, err
	}
	s.networks = nets
	s.initMetrics()
	s.tasks = newTasks(s)
	s.tenants.idle = opts.Config.Sandbox.NamespaceIdle
	s.admit.limit, s.admit.perNS = opts.Config.Sandbox.Concurrency, opts.Config.Sandbox.NamespaceConcurrency
	s.skills = opts.Skills
	opener, _ := opts.Executor.(SessionOpener)
	s.sessions = newSessions(opener, opts.Store, opts.Config.Sessions.IdleTimeout, opts.Config.Sessions.MaxPerNamespace, log)
	// Every tool is defined, whatever the toolsets: code reaches the ones
	// not listed from the sandbox (from codecell import ...).
	s.addExecTools()
	s.addDiscoveryTools()
	s.addWorkspaceTools()
	if s.envs != nil {
		s.addEnvTools()
	}
	s.addAnalysisTools()
	s.addPrivacyTools()
	if s.skills != nil {
		s.addSkillTools()
	}
	s.addStatsTools()
	s.tools.builtins = s.builtinCatalog()
	s.codeTools = s.callableBuiltins()
	if err := s.RefreshTools(); err != nil {
		return nil, err
	}
	// The SDK's own default (logging), and the tasks extension for
	// 2026-07-28 clients when there is a store to keep tasks in (2025
	// clients see the tasks capability: taskMiddleware).
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	if s.store != nil {
		caps.AddExtension(tasksExtension, nil)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "codecell", Title: "codecell", Version: version},
		&mcp.ServerOptions{Instructions: Instructions(opts.Packages), Logger: SDKLogger(log), SetCacheable: setCacheHints, Capabilities: caps})
	s.addResources()
	for _, b := range s.builtins {
		if b.listed(opts.Config.Toolsets) {
			b.register(s.mcp)
		}
	}
	// Late, so that it is outside the others: every answer, whatever made
	// it, passes the gate.
	s.mcp.AddReceivingMiddleware(s.unlistedTools)
	s.mcp.AddReceivingMiddleware(s.gateMiddleware)
	// Outside the gate: a call that becomes a task returns its handle,
	// and the result it stores has passed the gate.
	s.mcp.AddReceivingMiddleware(s.taskMiddleware)
	s.mcp.AddSendingMiddleware(s.gateSending)
	return s, nil
}

// RefreshTools rebuilds the tool catalog and the generated servers package
// from the upstreams' current tools. Upstreams call it when their tools
// change.
func (s *Server) RefreshTools() error {
	if err := s.tools.rebuild(s.up); err != nil {
		s.log.Error("refresh tools", "error", err)
		return err
	}
	return nil
}

// noUpstreams is the Upstreams of a server with none configured.
type noUpstreams struct{}

func (noUpstreams) Call(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
	return nil, upstream.ErrUnknownServer
}
func (noUpstreams) Tools() []catalog.Tool       { return nil }
func (noUpstreams) Statuses() []upstream.Status { return []upstream.Status{} }
func (noUpstreams) Wait(_ context.Context, server string) error {
	return fmt.Errorf("%w %q", upstream.ErrUnknownServer, server)
}

// Close ends every session, and closes the workspaces it made. The
// Executor and Options.Volumes are the caller's to close, after.
func (s *Server) Close() {
	if s.store != nil {
		s.tasks.stopAll("the server stopped while the task ran")
	}
	s.sessions.closeAll()
	s.volOnce.Do(func() {}) // none made after this
	if s.ownVols {
		s.vols.Close()
	}
}

// Gate returns the server's gate, for the HTTP routes and the logs.
func (s *Server) Gate() *gate.Gate { return s.gate }

// MCP returns the underlying MCP server, for a transport to run.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Workspace returns the host directory of a namespace's workspace.
func (s *Server) Workspace(namespace string) string {
	return WorkspaceDir(s.dataDir, namespace)
}

// WorkspaceDir is where a namespace's workspace lives under a data dir.
func WorkspaceDir(dataDir, namespace string) string {
	return filepath.Join(dataDir, "workspaces", namespace)
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// FieldError is a bad argument: it names the field and the rule it broke.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return "invalid argument " + e.Field + ": " + e.Rule }

// Parameter is the field, for the REST API, which answers 400 naming it.
func (e *FieldError) Parameter() string { return e.Field }

func fieldError(field, format string, args ...any) error {
	return &FieldError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// namespaceOf is the namespace a request acts in: the one its HTTP bearer
// token maps to (the token verifier puts it in UserID), else the default.
// Every tool that touches state (workspace, skills, sessions, environment,
// vault, log) must use it, so that one token's caller never reaches
// another's.
func namespaceOf(req *mcp.CallToolRequest) string {
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		return req.Extra.TokenInfo.UserID
	}
	return DefaultNamespace
}
