package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/upstream"
)

// changingUpstreams is one server, "docs", whose state and tools the test
// changes.
type changingUpstreams struct {
	mu     sync.Mutex
	status upstream.Status
}

func (u *changingUpstreams) set(st upstream.State, tools int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.status = upstream.Status{Name: "docs", State: st, Tools: tools}
}

func (u *changingUpstreams) Call(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
	return nil, upstream.ErrUnknownServer
}
func (u *changingUpstreams) Tools() []catalog.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []catalog.Tool
	for range u.status.Tools {
		out = append(out, catalog.Tool{Server: "docs", Name: "t" + strings.Repeat("x", len(out))})
	}
	return out
}
func (u *changingUpstreams) Statuses() []upstream.Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	return []upstream.Status{u.status}
}
func (u *changingUpstreams) Wait(context.Context, string) error { return nil }

// TestToolListFollowsUpstreams: search_tools names the connected servers,
// and when an upstream's tools change the clients of both protocol
// generations are told (tools/list_changed; for 2026-07-28 clients on
// their subscriptions/listen stream) and list the new description.
func TestToolListFollowsUpstreams(t *testing.T) {
	up := &changingUpstreams{}
	up.set(upstream.Starting, 0)
	s, err := New(Options{Config: config.Default(), Executor: funcExecutor{func(context.Context, sandbox.Request) *sandbox.Result {
		return &sandbox.Result{OK: true}
	}}, Upstreams: up, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			up.set(upstream.Starting, 0)
			if err := s.RefreshTools(); err != nil {
				t.Fatal(err)
			}
			changed := make(chan struct{}, 10)
			ctx := context.Background()
			st, ct := mcp.NewInMemoryTransports()
			ss, err := s.MCP().Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("the client speaks %s", got)
			}
			if d := searchDescription(t, cs); d != searchToolsBase {
				t.Fatalf("with no server connected, search_tools says %q", d)
			}

			up.set(upstream.Connected, 3)
			if err := s.RefreshTools(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			case <-time.After(time.Minute):
				t.Fatal("no tools/list_changed after the upstream connected")
			}
			if d := searchDescription(t, cs); !strings.HasSuffix(d, " Servers (tools): docs (3).") {
				t.Errorf("search_tools says %q", d)
			}

			// Nothing changed: no notification (the list stays cacheable).
			if err := s.RefreshTools(); err != nil {
				t.Fatal(err)
			}
			up.set(upstream.Connected, 4)
			if err := s.RefreshTools(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			case <-time.After(time.Minute):
				t.Fatal("no tools/list_changed after the upstream's tools changed")
			}
			if d := searchDescription(t, cs); !strings.HasSuffix(d, "docs (4).") {
				t.Errorf("search_tools says %q", d)
			}
			select {
			case <-changed:
				t.Error("a refresh that changed nothing was announced")
			default:
			}
		})
	}
}

// searchDescription lists the tools and returns search_tools' description.
func searchDescription(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "search_tools" {
			return tool.Description
		}
	}
	t.Fatal("search_tools is not listed")
	return ""
}
