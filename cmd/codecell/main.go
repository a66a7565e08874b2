// Command codecell is an MCP server that runs Python in an OS-level sandbox.
// This package holds flags, signals and wiring only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, g *globals, args []string) error
}

var commands = map[string]command{
	"serve":   {"serve MCP over stdio, or Streamable HTTP with --http ADDR", runServe},
	"exec":    {"run code once through the execute_code pipeline", runExec},
	"doctor":  {"check which isolation levels work on this host", runDoctor},
	"version": {"print version, commit and Go version", runVersion},
	"tools":   {"list, search or show the upstream tools (tools list | search QUERY | show NAME)", runTools},
	"skills":  {"list, show or delete saved skills (skills list [QUERY] | show NAME [--version N] | delete NAME)", runSkills},
	"bench":   {"measure latency, throughput, tool calls, memory and context savings against their targets (see BENCHMARKS.md)", runBench},
}

// exitError carries a process exit status without an error message.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	if percent, ok := config.GCPercent(os.Getenv); ok {
		debug.SetGCPercent(percent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// Shutdown is bounded: whatever hangs, a signalled codecell is gone
		// ten seconds later.
		<-ctx.Done()
		time.Sleep(10 * time.Second)
		fmt.Fprintln(os.Stderr, "codecell: shutdown took more than 10s; exiting")
		os.Exit(1)
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var ee exitError
	switch {
	case errors.As(err, &ee):
		os.Exit(ee.code)
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "codecell:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitError{2}
		}
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown command %q", args[0])
	}
	g := &globals{stdout: stdout, stderr: stderr, name: args[0]}
	return cmd.run(ctx, g, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: codecell COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nglobal flags (after the command): --config FILE, --data-dir DIR, --log-level LEVEL, --log-format text|json")
}

// globals are the flags every command takes.
type globals struct {
	stdout, stderr io.Writer
	name           string
	configFlag     string
	dataDirFlag    string
	logLevel       string
	logFormat      string
	replica        string // serve's --replica
	// inProcess are upstream servers hosted by this process (codecell
	// bench); newApp connects them in memory.
	inProcess map[string]*mcp.Server
}

func (g *globals) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("codecell "+g.name, flag.ContinueOnError)
	fs.SetOutput(g.stderr)
	fs.StringVar(&g.configFlag, "config", "", "config file (else $CODECELL_CONFIG, ./codecell.json, $XDG_CONFIG_HOME/codecell/config.json)")
	fs.StringVar(&g.dataDirFlag, "data-dir", "", "data directory (else $XDG_DATA_HOME/codecell, else /var/lib/codecell for root, else ~/.local/share/codecell)")
	fs.StringVar(&g.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&g.logFormat, "log-format", "text", "text or json")
	return fs
}

// logger writes to stderr, never stdout: in stdio mode stdout is the protocol.
func (g *globals) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(g.logFormat) {
	case "text":
		return slog.New(slog.NewTextHandler(g.stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(g.stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", g.logFormat)
}

// startCPUProfile writes a CPU profile of this process to path until the
// returned function is called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
