package server

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
)

//go:embed instructions.md
var instructions string

// Executor runs code in a sandbox; *sandbox.Manager is the real one.
type Executor interface {
	Exec(ctx context.Context, req sandbox.Request) *sandbox.Result
	Level() sandbox.Level
}

// Options configure a Server.
type Options struct {
	Config   *config.Config // required
	Executor Executor       // required
	DataDir  string         // required: workspaces live under it
	Version  string         // reported to clients; "" means "dev"
	Logger   *slog.Logger   // nil means silent
}

// Server holds codecell's MCP server and what its tools need.
type Server struct {
	cfg     *config.Config
	exec    Executor
	dataDir string
	log     *slog.Logger
	mcp     *mcp.Server
}

// DefaultNamespace is the namespace of stdio clients and of HTTP without
// tokens.
const DefaultNamespace = "default"

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
	s := &Server{cfg: opts.Config, exec: opts.Executor, dataDir: opts.DataDir, log: log}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "codecell", Title: "codecell", Version: version},
		&mcp.ServerOptions{Instructions: instructions, Logger: log})
	if slices.Contains(opts.Config.Toolsets, "exec") {
		s.addExecTools()
	}
	return s, nil
}

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

// fieldError is a bad argument: it names the field and the rule it broke.
func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("invalid argument %s: %s", field, fmt.Sprintf(format, args...))
}
