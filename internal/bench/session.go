package bench

import (
	"context"
	"fmt"
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

// WaitForUpstreams polls codecell's search_tools until each named upstream
// has tools in its catalog, or ctx ends. Codecell connects its upstreams in
// the background, so a search made before they are up finds nothing.
// search_tools is in every tool list (list_tool_categories is not in the
// default one).
func WaitForUpstreams(ctx context.Context, cs *mcp.ClientSession, names []string) error {
	for _, name := range names {
		for {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"server": name, "detail_level": "name_only", "limit": 1}})
			if err != nil {
				return fmt.Errorf("search_tools: %w", err)
			}
			if !res.IsError {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("upstream %s not connected: %s: %w", name, ResultText(res), ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
