package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/upstream"
)

// startingUpstreams has a server "slow-one" that connects when the test says
// so, "never" that stays starting, "broken" that failed, and "off",
// disabled. Wait behaves as upstream.Manager's does: it returns once the
// server is connected and RefreshTools has seen its tools.
type startingUpstreams struct {
	refresh func() error  // the server's RefreshTools: what OnChange calls
	ready   chan struct{} // closed once slow-one is connected
	waiting atomic.Int32  // Waits for slow-one under way

	mu        sync.Mutex
	connected bool
}

func newStartingUpstreams() *startingUpstreams {
	return &startingUpstreams{ready: make(chan struct{})}
}

// connect makes slow-one connected, as upstream.Manager does: its tools are
// published before it counts as connected.
func (u *startingUpstreams) connect() error {
	u.mu.Lock()
	u.connected = true
	u.mu.Unlock()
	err := u.refresh()
	close(u.ready)
	return err
}

func (u *startingUpstreams) Call(_ context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if server != "slow-one" || tool != "echo" {
		return nil, upstream.ErrUnavailable
	}
	var in struct{ Text string }
	json.Unmarshal(args, &in)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
}

func (u *startingUpstreams) Tools() []catalog.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.connected {
		return nil
	}
	return []catalog.Tool{{Server: "slow-one", Name: "echo", Description: "Echo the text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}
}

func (u *startingUpstreams) Statuses() []upstream.Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	slow := upstream.Status{Name: "slow-one", State: upstream.Starting}
	if u.connected {
		slow = upstream.Status{Name: "slow-one", State: upstream.Connected, Tools: 1}
	}
	return []upstream.Status{
		slow,
		{Name: "never", State: upstream.Starting},
		{Name: "broken", State: upstream.Failed, Error: "connect: EOF (stderr: Cannot find package 'zod')"},
		{Name: "off", State: upstream.Disabled},
	}
}

func (u *startingUpstreams) Wait(ctx context.Context, server string) error {
	switch server {
	case "slow-one":
		u.waiting.Add(1)
		defer u.waiting.Add(-1)
		select {
		case <-u.ready:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%w: slow-one is still starting: %w", upstream.ErrStarting, ctx.Err())
		}
	case "never":
		<-ctx.Done()
		return fmt.Errorf("%w: never is still starting (for 8s so far; its startupTimeout is 1m0s): %w", upstream.ErrStarting, ctx.Err())
	case "broken":
		return fmt.Errorf("%w: broken failed (connect: EOF (stderr: Cannot find package 'zod')); next try in 1s", upstream.ErrUnavailable)
	case "off":
		return fmt.Errorf("%w: off is disabled in the config", upstream.ErrUnavailable)
	}
	return fmt.Errorf("%w %q", upstream.ErrUnknownServer, server)
}

// startingServer is a server on a real development-level sandbox whose
// generated package is published where the sandbox imports it from, and
// a client on it.
func startingServer(t *testing.T, up *startingUpstreams) (*Server, *mcp.ClientSession, string) {
	t.Helper()
	gen := filepath.Join(t.TempDir(), "gen")
	mgr, err := sandbox.New(sandbox.Options{Level: sandbox.Development, Python: "/usr/bin/python3", StateDir: t.TempDir(), PoolSize: 1, GenDir: gen})
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { mgr.Close() })
	s, cs := newTestServer(t, func(o *Options) {
		o.Config.Sandbox.Isolation = "development"
		o.Executor, o.Upstreams, o.GenDir = mgr, up, gen
	})
	up.refresh = s.RefreshTools
	return s, cs, gen
}

// TestImportWaitsForStartingServer: code that imports a server still
// starting waits for it and then calls its tools; a failed or disabled
// server, or one still starting when the execution's time runs out, is an
// ImportError that says which and why.
func TestImportWaitsForStartingServer(t *testing.T) {
	up := newStartingUpstreams()
	_, cs, gen := startingServer(t, up)

	// Before anything connected: a stand-in for each server on its way,
	// none for the disabled one.
	for _, pkg := range []string{"slow_one", "never", "broken"} {
		if _, err := os.Stat(filepath.Join(gen, "servers", pkg, "__init__.py")); err != nil {
			t.Errorf("no stand-in for %s: %v", pkg, err)
		}
	}
	if _, err := os.Stat(filepath.Join(gen, "servers", "off")); !os.IsNotExist(err) {
		t.Errorf("a package for the disabled server: %v", err)
	}

	t.Run("starting, then connected", func(t *testing.T) {
		type answer struct {
			res *mcp.CallToolResult
			err error
		}
		done := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
				"code": "from servers.slow_one import echo\nresult = echo(text='waited')", "timeout_seconds": 100}})
			done <- answer{res, err}
		}()
		// The import is waiting for the server: only now does it connect.
		waitFor(t, time.Minute, "the code never asked to wait for slow-one", func() bool { return up.waiting.Load() > 0 })
		if err := up.connect(); err != nil {
			t.Fatal(err)
		}
		a := <-done
		if a.err != nil {
			t.Fatal(a.err)
		}
		var out ExecuteCodeOutput
		structured(t, a.res, &out)
		if !out.OK || out.Result != "waited" {
			t.Fatalf("import of a starting server: %+v %+v", out.Error, out.Result)
		}
		if out.ToolCalls == nil || out.ToolCalls.Count != 1 {
			t.Errorf("tool calls %+v, want 1", out.ToolCalls)
		}
	})

	for _, tc := range []struct {
		name, code string
		timeout    float64
		want       []string
	}{
		{"failed", "import servers.broken", 30, []string{"cannot import servers.broken: server unavailable: broken failed", "Cannot find package 'zod'"}},
		{"still starting when time runs out", "from servers.never import anything", 10, []string{"cannot import servers.never: server still starting: never is still starting", "run the code again once list_tool_categories shows it connected"}},
		{"disabled", "import servers.off", 30, []string{"No module named 'servers.off'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runTool(t, cs, "execute_code", map[string]any{"code": tc.code, "timeout_seconds": tc.timeout})
			var out ExecuteCodeOutput
			structured(t, res, &out)
			if out.OK || out.Error == nil {
				t.Fatalf("ok: %+v", out)
			}
			if tc.name != "disabled" && out.Error.Type != "ImportError" {
				t.Errorf("error type %s, want ImportError: %s", out.Error.Type, out.Error.Message)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.Error.Message, want) {
					t.Errorf("the error %q does not say %q", out.Error.Message, want)
				}
			}
		})
	}
}

// TestStandInsFollowServers: a server's stand-in gives way to its package,
// under the same module name, once it connects.
func TestStandInsFollowServers(t *testing.T) {
	up := newStartingUpstreams()
	s, _, gen := startingServer(t, up)
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(gen, "servers", p))
		return string(b)
	}
	if got := read("slow_one/__init__.py"); !strings.Contains(got, `_stand_in("slow-one", __name__)`) {
		t.Fatalf("slow_one before it connects:\n%s", got)
	}
	if err := up.connect(); err != nil {
		t.Fatal(err)
	}
	if got := read("slow_one/__init__.py"); strings.Contains(got, "_stand_in") || !strings.Contains(got, "from .echo import echo") {
		t.Fatalf("slow_one once connected:\n%s", got)
	}
	if got := read("__init__.py"); !strings.Contains(got, `_SERVERS = frozenset(("broken", "never", "slow_one"))`) {
		t.Errorf("the servers the package knows:\n%s", got)
	}
	if _, ok := s.tools.catalog().Lookup("slow_one.echo"); !ok {
		t.Error("slow_one.echo is not in the catalog")
	}
}
