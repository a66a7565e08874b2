// Package server is codecell's MCP server: the tools of docs/tools.md, one file per
// toolset, on top of the sandbox and the other domain packages. It knows
// nothing of transports; cmd/codecell and httpapi connect it to stdio and
// HTTP.
package server
