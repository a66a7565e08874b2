package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionRunner is a [CodeRunner] over an MCP session with codecell.
type SessionRunner struct {
	Session *mcp.ClientSession
}

// ListTools implements CodeRunner.
func (r SessionRunner) ListTools(ctx context.Context) (string, error) {
	tools, err := listTools(ctx, r.Session)
	if err != nil {
		return "", err
	}
	return ToolsText(r.Session.InitializeResult().Instructions, tools), nil
}

// SearchTools implements CodeRunner.
func (r SessionRunner) SearchTools(ctx context.Context, query string) (string, error) {
	return r.call(ctx, "search_tools", map[string]any{"query": query, "limit": SearchLimit})
}

// ExecuteCode implements CodeRunner.
func (r SessionRunner) ExecuteCode(ctx context.Context, code string) (string, error) {
	return r.call(ctx, "execute_code", map[string]any{"code": code})
}

func (r SessionRunner) call(ctx context.Context, tool string, args map[string]any) (string, error) {
	res, err := r.Session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.IsError && res.StructuredContent == nil {
		return "", fmt.Errorf("%s: %s", tool, ResultText(res))
	}
	return ResultText(res), nil
}

// WaitForUpstreams polls codecell's list_tool_categories until every named
// upstream is connected, or ctx ends. Codecell connects its upstreams in the
// background, so a search made before they are up finds nothing.
func WaitForUpstreams(ctx context.Context, cs *mcp.ClientSession, names []string) error {
	for {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_tool_categories", Arguments: map[string]any{}})
		if err != nil {
			return fmt.Errorf("list_tool_categories: %w", err)
		}
		var out struct {
			Servers []struct {
				Name  string `json:"name"`
				State string `json:"state"`
			} `json:"servers"`
		}
		if err := json.Unmarshal([]byte(ResultText(res)), &out); err != nil {
			return fmt.Errorf("list_tool_categories: %w", err)
		}
		connected := 0
		for _, s := range out.Servers {
			if slices.Contains(names, s.Name) && s.State == "connected" {
				connected++
			}
		}
		if connected == len(names) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("upstreams not all connected: %s: %w", ResultText(res), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
