// Package upstream is codecell's MCP client side: it connects to the
// upstream servers of the config (stdio, Streamable HTTP, legacy SSE), keeps
// their tool lists current, and calls their tools with timeouts, restarting a
// stdio server that died on next use, with backoff.
//
// A stdio server gets the environment its config names plus a minimal base
// (PATH and HOME), never codecell's own environment. Servers connect in
// parallel in the background, each within its startupTimeout; one that fails
// does not hold up the others, and its error quotes the first and the last
// lines of its stderr. Wait lets a caller (code importing the server) wait
// for a server still starting without cutting its start short.
package upstream
