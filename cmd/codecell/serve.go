package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/httpapi"
	"github.com/codecell/codecell/internal/server"
)

func runServe(ctx context.Context, g *globals, args []string) error {
	fs := g.flags()
	addr := fs.String("http", "", "serve Streamable HTTP at ADDR (e.g. 127.0.0.1:8080) instead of stdio")
	insecure := fs.Bool("insecure-no-auth", false, "allow a non-loopback --http address without http.tokens")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the server to FILE (for performance work)")
	toolsets := fs.String("toolsets", "", "comma-separated toolsets to list besides the lean pair (execute_code, search_tools), all, or -default among them to leave the pair out (overrides the config's toolsets)")
	fs.StringVar(&g.replica, "replica", "", "this replica's name among several sharing store.url, in metrics and session records (default: the host name with store.url, else none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if fs.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	if *addr != "" {
		loopback, err := httpapi.IsLoopback(*addr)
		if err != nil {
			return err
		}
		cfg, _, err := g.loadConfig()
		if err != nil {
			return err
		}
		if !loopback && len(cfg.HTTP.Tokens) == 0 && !*insecure {
			return fmt.Errorf("refusing to serve %s without authentication: it is not a loopback address and http.tokens is empty; "+
				"set http.tokens in the config, listen on 127.0.0.1, or pass --insecure-no-auth if the network is trusted", *addr)
		}
	}
	a, err := g.newApp(ctx, func(cfg *config.Config) error {
		if *toolsets == "" {
			return nil
		}
		sets, err := config.ParseToolsets(strings.Split(*toolsets, ","))
		if err != nil {
			return fmt.Errorf("--toolsets: %w", err)
		}
		cfg.Toolsets = sets
		return nil
	})
	if err != nil {
		return err
	}
	defer a.close()
	// Said before the clean-up, which may take a moment (sessions,
	// sandboxes, mounts): the operator sees why the server went.
	defer func() {
		reason := "the server stopped"
		switch {
		case ctx.Err() != nil:
			reason = "a signal"
		case *addr == "":
			reason = "the client closed stdin"
		}
		a.log.Info("shutting down", "reason", reason)
	}()
	// In the background: setting the default workspace up may take a while
	// the first time (moving a large directory into its image, indexing
	// 100,000 files), and the client's initialize need not wait for it.
	// With tokens over HTTP no call reaches the default namespace: nothing
	// is warmed for it.
	if *addr == "" || len(a.cfg.HTTP.Tokens) == 0 {
		go a.server.Warm(ctx, server.DefaultNamespace)
	}
	go a.server.TrimWhenIdle(ctx)
	// Idle namespaces give back what they hold when a server serves many
	// (HTTP); over stdio its one namespace keeps its workspace mounted, so
	// that an agent that thought for a minute does not pay a cold start.
	if *addr != "" {
		go a.server.ReleaseIdle(ctx)
		if a.cfg.Sandbox.NamespaceIdle > 0 {
			// A namespace that gave its sandboxes back claims one of these
			// on its next call rather than start one cold (issue 33).
			a.sandbox.KeepUnbound(a.cfg.Sandbox.SparePool)
		}
	}
	if *addr == "" {
		a.log.Info("serving MCP over stdio", "isolation", a.sandbox.Level())
		err := a.server.MCP().Run(ctx, a.server.StdioTransport(os.Stdin, os.Stdout))
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return serveHTTP(ctx, a, *addr)
}

func serveHTTP(ctx context.Context, a *app, addr string) error {
	h, err := httpapi.Handler(httpapi.Options{Server: a.server.MCP(), AllowedOrigins: a.cfg.HTTP.AllowedOrigins,
		Tokens: a.cfg.HTTP.Tokens, API: a.server.API(), Metrics: a.server.MetricsHandler(), Gate: a.server.Gate(), Logger: server.SDKLogger(a.log), Replica: a.replica, Tasks: a.server})
	if err != nil {
		return err
	}
	ln, err := httpapi.Listen(addr)
	if err != nil {
		return err
	}
	srv := httpapi.NewServer(h)
	// The URLs to open, not only the address: `make run` shows this line and
	// nothing else says where the dashboard is.
	base := "http://" + browsable(ln.Addr())
	a.log.Info("serving MCP over HTTP", "addr", ln.Addr().String(), "mcp", base+"/mcp", "dashboard", base+"/", "isolation", a.sandbox.Level())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
}

// browsable is addr as a browser reaches it: a server on every interface
// through loopback.
func browsable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}
