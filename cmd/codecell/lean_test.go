package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/bench"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/server"
)

// maxLeanTokens is the most the default tool list may cost, instructions
// included, as a model reads it (docs/tools.md): it is paid in every conversation.
const maxLeanTokens = 600

// noExecutor runs nothing: these tests only list tools.
type noExecutor struct{}

func (noExecutor) Exec(context.Context, sandbox.Request) *sandbox.Result {
	return &sandbox.Result{OK: true}
}
func (noExecutor) Level() sandbox.Level { return sandbox.Production }

// listed returns the tools and instructions a client sees of a codecell
// with toolsets (nil: the default).
func listed(t *testing.T, toolsets []string) ([]*mcp.Tool, string) {
	t.Helper()
	cfg := config.Default()
	if toolsets != nil {
		cfg.Toolsets = toolsets
	}
	s, err := server.New(server.Options{Config: cfg, Executor: noExecutor{}, DataDir: t.TempDir(),
		// Every notable package, as a host with them all lists them: the
		// longest instructions, and the same on every host.
		Packages: sandbox.NotablePackages})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools, cs.InitializeResult().Instructions
}

// TestLeanDefaultToolList: by default codecell lists execute_code and
// search_tools, and the whole list with the instructions costs at most
// maxLeanTokens as a model reads it; "all" lists every tool.
func TestLeanDefaultToolList(t *testing.T) {
	tok, err := bench.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	tools, instructions := listed(t, nil)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"execute_code", "search_tools"}; !slices.Equal(names, want) {
		t.Errorf("default tools %v, want %v", names, want)
	}
	text := bench.ToolsText(instructions, tools)
	n := tok.Count(text)
	t.Logf("default tool list: %d tokens, %d bytes:\n%s", n, len(text), text)
	if n > maxLeanTokens {
		t.Errorf("the default tool list is %d tokens, want at most %d", n, maxLeanTokens)
	}
	// What a model cannot guess and would learn by failing (issue #30).
	for _, want := range []string{"No network", "/workspace persists", "numpy"} {
		if !strings.Contains(instructions, want) {
			t.Errorf("the instructions do not say %q:\n%s", want, instructions)
		}
	}
	// The time limits, from the config, where the model sets one.
	if want := `"timeout_seconds":{"description":"Default 30, max 120."`; !strings.Contains(text, want) {
		t.Errorf("the tool list does not hold %s", want)
	}

	all, instructions := listed(t, []string{"default", "exec", "discovery", "workspace", "skills", "env", "privacy", "analysis", "stats"})
	var allNames []string
	for _, tl := range all {
		allNames = append(allNames, tl.Name)
	}
	for _, want := range []string{"execute_code", "search_tools", "write_workspace_file", "execute_analysis", "list_tool_categories", "sanitize_pii"} {
		if !slices.Contains(allNames, want) {
			t.Errorf("every toolset lists %v, without %s", allNames, want)
		}
	}
	t.Logf("every toolset: %d tools, %d tokens", len(all), tok.Count(bench.ToolsText(instructions, all)))
}
