// Package httpapi serves codecell over HTTP: MCP's Streamable HTTP transport
// at /mcp and the operational routes of the README's "Operating it over
// HTTP" on the same listener.
package httpapi
