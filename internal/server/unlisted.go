package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unlistedTools answers a call of a tool this server does not list with
// what to do instead, where the SDK would say only "unknown tool": one of
// codecell's own tools is listed by its toolset, or called from code; an
// upstream tool is called from code.
func (s *Server) unlistedTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ct, ok := req.(*mcp.CallToolRequest)
		if !ok || method != "tools/call" || ct.Params == nil {
			return next(ctx, method, req)
		}
		if msg := s.unlistedHint(ct.Params.Name); msg != "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
		}
		return next(ctx, method, req)
	}
}

// unlistedHint says what to do about a call of name, or "" when the
// server lists it (or knows nothing better to say).
func (s *Server) unlistedHint(name string) string {
	for _, b := range s.builtins {
		if b.tool.Name != name {
			continue
		}
		if b.listed(s.cfg.Toolsets) {
			return ""
		}
		hint := fmt.Sprintf("tool %q is not listed by this server (toolsets: %s): list it with its toolset %q (serve --toolsets, or the config's toolsets)",
			name, strings.Join(s.cfg.Toolsets, ", "), b.toolset)
		if b.call != nil {
			hint += fmt.Sprintf(", or call it from code in execute_code: from codecell import %s", name)
		}
		return hint
	}
	if t, ok := s.tools.catalog().Lookup(name); ok && !slices.ContainsFunc(s.builtins, func(b *builtin) bool { return b.tool.Name == name }) {
		return fmt.Sprintf("%q is a tool of the upstream server %q, which codecell does not list as an MCP tool: call it from code in execute_code: from servers.%s import %s",
			name, t.Server, t.Module, t.Ident)
	}
	return ""
}
