package server

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cache hints of protocol 2026-07-28 (ttlMs, cacheScope) on the results
// that carry them. A client keeps a result that long, and a shared cache
// keeps one only if it is public.
//
// The lists of tools and templates, and server/discover, are the same for
// every caller and depend on the config alone (upstream tools are found
// with search_tools, never listed). What lies in a workspace
// (resources/list and resources/read) is one namespace's, and any
// execution may change it: private, and stale at once.
const staticListTTL = 5 * time.Minute

// setCacheHints is the MCP server's SetCacheable.
func setCacheHints(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch req.(type) {
	case *mcp.ListToolsRequest, *mcp.ListResourceTemplatesRequest, *mcp.ListPromptsRequest, *mcp.ServerRequest[*mcp.DiscoverParams]:
		*c = mcp.Cacheable{TTLMs: int(staticListTTL.Milliseconds()), CacheScope: "public"}
	default:
		*c = workspaceCache
	}
}

// workspaceCache is the hint of a namespace's workspace contents.
var workspaceCache = mcp.Cacheable{TTLMs: 0, CacheScope: "private"}
