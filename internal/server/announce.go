package server

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/codecell/codecell/internal/upstream"
)

// The tool list names the upstream servers connected now, in search_tools'
// description, so that a model knows what there is to search before it
// searches; and so the list changes when they do (a server connects, fails,
// or its tools change). The SDK tells the clients: 2025 sessions get
// notifications/tools/list_changed, and 2026-07-28 clients get it on their
// subscriptions/listen stream.

// searchToolsBase is search_tools' description before the servers.
const searchToolsBase = "Find tools by what they do: the MCP servers' tools and codecell's own (from codecell import ...)."

// announcer keeps search_tools' listed description in step with the
// upstreams.
type announcer struct {
	mu     sync.Mutex // serializes the upstreams' refreshes
	listed string     // the description listed now
}

// announceServers lists search_tools again when the servers it would name
// differ from those it names.
func (s *Server) announceServers() {
	s.announce.mu.Lock()
	defer s.announce.mu.Unlock()
	if s.mcp == nil {
		return // New lists it once the MCP server exists
	}
	b, ok := s.listedBuiltin("search_tools")
	if !ok {
		return
	}
	desc := searchToolsDescription(s.up.Statuses())
	if desc == s.announce.listed {
		return
	}
	t := *b.tool
	t.Description = desc
	b.register(s.mcp, &t)
	s.announce.listed = desc
}

// listedBuiltin returns the tool named name if the config's toolsets list
// it.
func (s *Server) listedBuiltin(name string) (*builtin, bool) {
	for _, b := range s.builtins {
		if b.tool.Name == name && b.listed(s.cfg.Toolsets) {
			return b, true
		}
	}
	return nil, false
}

// searchToolsDescription is searchToolsBase and the connected servers with
// their tool counts, by name.
func searchToolsDescription(statuses []upstream.Status) string {
	var up []string
	for _, st := range statuses {
		if st.State == upstream.Connected {
			up = append(up, fmt.Sprintf("%s (%d)", st.Name, st.Tools))
		}
	}
	if len(up) == 0 {
		return searchToolsBase
	}
	slices.Sort(up)
	return searchToolsBase + " Servers (tools): " + strings.Join(up, ", ") + "."
}
