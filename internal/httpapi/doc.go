// Package httpapi serves codecell over HTTP: MCP's Streamable HTTP transport
// at /mcp and the operational routes of SPEC §8 on the same listener.
package httpapi
