package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/upstream"
)

// twoServers are two connected upstream servers: everything (get_sum,
// echo) and github (create_issue).
type twoServers struct{}

func (twoServers) Call(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
}

func (twoServers) Tools() []catalog.Tool {
	schema := json.RawMessage(`{"type":"object"}`)
	return []catalog.Tool{
		{Server: "everything", Name: "get-sum", Description: "Add two numbers.", InputSchema: schema},
		{Server: "everything", Name: "echo", Description: "Echo the text.", InputSchema: schema},
		{Server: "github", Name: "create_issue", Description: "Open an issue.", InputSchema: schema},
	}
}

func (twoServers) Statuses() []upstream.Status {
	return []upstream.Status{{Name: "everything", State: upstream.Connected, Tools: 2}, {Name: "github", State: upstream.Connected, Tools: 1}}
}

func (twoServers) Wait(context.Context, string) error { return nil }

// TestServersImportSaysNearest: an import from servers of a tool or a
// server that does not exist names the nearest that do (issue #30), as
// get_tool_definition does for a misspelt name.
func TestServersImportSaysNearest(t *testing.T) {
	gen := filepath.Join(t.TempDir(), "gen")
	mgr, err := sandbox.New(sandbox.Options{Level: sandbox.Development, Python: "/usr/bin/python3", StateDir: t.TempDir(), PoolSize: 1, GenDir: gen})
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { mgr.Close() })
	_, cs := newTestServer(t, func(o *Options) {
		o.Config.Sandbox.Isolation = "development"
		o.Executor, o.Upstreams, o.GenDir = mgr, twoServers{}, gen
	})
	for _, tc := range []struct {
		code, typ, message string
	}{
		{"from servers.everything import get_summ", "ImportError",
			"cannot import name 'get_summ' from 'servers.everything' (" + filepath.Join(gen, "servers/everything/__init__.py") + "); did you mean get_sum?; help(servers.everything) lists its tools; search_tools finds tools by what they do"},
		{"from servers.everything import get_sun_async", "ImportError", "; did you mean get_sum_async?; "},
		{"from servers.everything import create_issue", "ImportError", "; did you mean from servers.github import create_issue?; "},
		{"from servers.everything import frobnicate", "ImportError", "(" + filepath.Join(gen, "servers/everything/__init__.py") + "); help(servers.everything) lists its tools"},
		{"from servers.evrything import echo", "ModuleNotFoundError",
			"No module named 'servers.evrything'; did you mean servers.everything?; search_tools finds the upstream tools and the servers they come from"},
		{"import servers.githb", "ModuleNotFoundError", "; did you mean servers.github?; "},
	} {
		var out ExecuteCodeOutput
		res, text := callTool(t, cs, "execute_code", map[string]any{"code": tc.code})
		structured(t, res, &out)
		if out.Error == nil || out.Error.Type != tc.typ || !strings.Contains(out.Error.Message, tc.message) {
			t.Errorf("%s: %+v, want a %s with %q\n%s", tc.code, out.Error, tc.typ, tc.message, text)
		}
	}
}
