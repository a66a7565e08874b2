package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Catalog is an immutable index of the tools of all upstream servers. It is
// safe for concurrent use. Build a new one with New when tools change.
//
// The Tools it returns share their schema bytes with the Catalog; callers
// must not modify them.
type Catalog struct {
	docs      []doc             // sorted by qualified name
	docServer []int32           // docs[i].server, packed for the search's inner loop
	byIdent   map[string]int    // "server.ident" -> index into docs
	byName    map[string]int    // "server.originalName" -> index into docs
	servers   []string          // sorted
	serverID  map[string]int32  // server name -> index into servers
	modules   map[string]string // server name -> Python module, for servers with and without tools
	index     index
	// destroyTerms are the verbs of the destructive tools' names: a query
	// holding one asks to destroy.
	destroyTerms map[int32]bool

	// scratch holds *scratch values sized for docs: working memory of
	// searches, the only state that changes after New, and safe to share
	// as sync.Pool is.
	scratch sync.Pool
}

// New builds a Catalog of tools. It sets each tool's Ident to Ident(Name),
// made unique within the tool's server: when several names give the same
// identifier, the tool whose name already is that identifier keeps it, or
// else the least of the names in byte order does, and the others, in the
// order of their names, get the first free of "_2", "_3", .... The result
// therefore does not depend on the order of tools. Ident fields set by the
// caller are ignored. New copies what it keeps; the caller may reuse tools.
//
// Each tool's Module is chosen among the modules of its server and of the
// others: those of tools, and those named in more, servers that have no
// tools (yet). Naming every configured server keeps a server's module the
// same before and after it connects (see Module).
func New(tools []Tool, more ...string) *Catalog {
	ts := make([]Tool, len(tools))
	for i, t := range tools {
		t.InputSchema = bytes.Clone(t.InputSchema)
		t.OutputSchema = bytes.Clone(t.OutputSchema)
		ts[i] = t
	}
	assignIdents(ts)
	modules := assignModules(ts, more)

	c := &Catalog{
		docs:     make([]doc, len(ts)),
		byIdent:  make(map[string]int, len(ts)),
		byName:   make(map[string]int, len(ts)),
		serverID: make(map[string]int32),
		modules:  modules,
	}
	for i, t := range ts {
		c.docs[i] = doc{tool: t, qualified: t.QualifiedName()}
		c.serverID[t.Server] = 0
	}
	slices.SortFunc(c.docs, func(a, b doc) int { return strings.Compare(a.qualified, b.qualified) })
	c.servers = sortedKeys(c.serverID)
	for i, s := range c.servers {
		c.serverID[s] = int32(i)
	}
	for i := range c.docs {
		d := &c.docs[i]
		d.server = c.serverID[d.tool.Server]
		c.byIdent[d.qualified] = i
		// With duplicate original names, the first in sorted order (the one
		// that kept the plain identifier) answers to the original name.
		if k := d.tool.Server + "." + d.tool.Name; !hasKey(c.byName, k) {
			c.byName[k] = i
		}
	}
	c.docServer = make([]int32, len(c.docs))
	for i := range c.docs {
		c.docServer[i] = c.docs[i].server
	}
	c.index = buildIndex(c.docs, len(c.servers))
	c.destroyTerms = map[int32]bool{}
	for i := range c.docs {
		// The first word of its name: what the tool does to its object
		// (delete_observations deletes; "observations" asks for no
		// deletion).
		if d := &c.docs[i]; d.tool.Destructive && len(d.nameTerms) > 0 {
			c.destroyTerms[d.nameTerms[0]] = true
		}
	}
	return c
}

// assignIdents sets Ident on each of ts, unique per server.
func assignIdents(ts []Tool) {
	byServer := make(map[string][]int)
	for i := range ts {
		ts[i].Ident = Ident(ts[i].Name)
		byServer[ts[i].Server] = append(byServer[ts[i].Server], i)
	}
	for _, idx := range byServer {
		// A total order on the tools' content, so that even duplicate names
		// are resolved the same way whatever the input order.
		slices.SortFunc(idx, func(i, j int) int {
			a, b := ts[i], ts[j]
			return cmp.Or(
				boolOrder(a.Name != a.Ident, b.Name != b.Ident), // exact names first
				strings.Compare(a.Name, b.Name),
				strings.Compare(a.Title, b.Title),
				strings.Compare(a.Description, b.Description),
				bytes.Compare(a.InputSchema, b.InputSchema),
				bytes.Compare(a.OutputSchema, b.OutputSchema),
			)
		})
		taken := make(map[string]bool, len(idx))
		for _, i := range idx {
			taken[ts[i].Ident] = true
		}
		owner := make(map[string]bool, len(idx)) // identifiers already given out
		var clashed []int
		for _, i := range idx {
			if owner[ts[i].Ident] {
				clashed = append(clashed, i)
				continue
			}
			owner[ts[i].Ident] = true
		}
		// The losers take suffixes in the order of their names, whether or
		// not their name happened to equal the identifier.
		slices.SortStableFunc(clashed, func(i, j int) int { return strings.Compare(ts[i].Name, ts[j].Name) })
		for _, i := range clashed {
			base := ts[i].Ident
			sep := "_"
			if strings.HasSuffix(base, "_") {
				sep = ""
			}
			for n := 2; ; n++ {
				id := base + sep + strconv.Itoa(n)
				if !taken[id] {
					ts[i].Ident = id
					taken[id] = true
					break
				}
			}
		}
	}
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// Tools returns all tools, sorted by qualified name. The slice is the
// caller's.
func (c *Catalog) Tools() []Tool {
	out := make([]Tool, len(c.docs))
	for i := range c.docs {
		out[i] = c.docs[i].tool
	}
	return out
}

// Len returns the number of tools.
func (c *Catalog) Len() int { return len(c.docs) }

// Lookup finds a tool by its qualified name, "server.ident", or by its
// server and original name, "server.get-sum". The qualified name wins when
// both would match different tools.
func (c *Catalog) Lookup(qualified string) (Tool, bool) {
	if i, ok := c.byIdent[qualified]; ok {
		return c.docs[i].tool, true
	}
	if i, ok := c.byName[qualified]; ok {
		return c.docs[i].tool, true
	}
	return Tool{}, false
}

// Module returns the Python module of a server New was told of, with tools
// or without, and whether it was.
func (c *Catalog) Module(server string) (string, bool) {
	m, ok := c.modules[server]
	return m, ok
}

// Servers returns the names of the servers that have at least one tool,
// sorted. The slice is the caller's.
func (c *Catalog) Servers() []string { return slices.Clone(c.servers) }

// ServerTools returns the tools of one server, sorted by qualified name, or nil
// for a server the catalog does not know. The slice is the caller's.
func (c *Catalog) ServerTools(server string) []Tool {
	id, ok := c.serverID[server]
	if !ok {
		return nil
	}
	var out []Tool
	for i := range c.docs {
		if c.docs[i].server == id {
			out = append(out, c.docs[i].tool)
		}
	}
	return out
}

// doc is a tool with what the search needs of it.
type doc struct {
	tool       Tool
	qualified  string
	server     int32   // index into Catalog.servers
	nameTerms  []int32 // distinct term IDs of the words of the tool's name
	deprecated bool
}

// schemaParams returns the names and descriptions of the properties of a
// JSON Schema, nested ones included (object properties, array items,
// combinators), to a small depth. It skips whatever does not have the
// expected shape; a malformed schema yields nothing.
func schemaParams(raw json.RawMessage) (names, descs []string) {
	if len(raw) == 0 {
		return nil, nil
	}
	var s any
	if json.Unmarshal(raw, &s) != nil {
		return nil, nil
	}
	var walk func(n any, depth int)
	walk = func(n any, depth int) {
		if depth > 4 {
			return
		}
		switch n := n.(type) {
		case []any: // "items" as an array of schemas, in old drafts
			for _, x := range n {
				walk(x, depth+1)
			}
		case map[string]any:
			if props, ok := n["properties"].(map[string]any); ok {
				for _, k := range sortedKeys(props) {
					names = append(names, k)
					if p, ok := props[k].(map[string]any); ok {
						if d, ok := p["description"].(string); ok && d != "" {
							descs = append(descs, d)
						}
						walk(p, depth+1)
					}
				}
			}
			for _, k := range []string{"items", "anyOf", "oneOf", "allOf"} {
				if x, ok := n[k]; ok {
					walk(x, depth+1)
				}
			}
		}
	}
	walk(s, 0)
	return names, descs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ModuleName makes a server name into the name of its Python module in the
// servers package: Ident's rule, without leading underscores (reserved
// there), with "s_" before a leading digit, and a "_" after the names the
// package exports itself.
func ModuleName(server string) string {
	m := strings.TrimLeft(Ident(server), "_")
	switch {
	case m == "":
		m = "server"
	case m[0] >= '0' && m[0] <= '9':
		m = "s_" + m
	case m == "ToolError" || m == "Image":
		m += "_"
	}
	return m
}

// assignModules sets each tool's Module, unique per server: servers whose
// names give the same module name get "_2", "_3", ... in name order, among
// the servers of ts and the more. It returns every server's module.
func assignModules(ts []Tool, more []string) map[string]string {
	servers := map[string]string{}
	for _, t := range ts {
		servers[t.Server] = ""
	}
	for _, name := range more {
		servers[name] = ""
	}
	names := sortedKeys(servers)
	taken := map[string]bool{}
	for _, name := range names {
		base := ModuleName(name)
		m := base
		for n := 2; taken[m]; n++ {
			m = fmt.Sprintf("%s_%d", base, n)
		}
		taken[m] = true
		servers[name] = m
	}
	for i := range ts {
		ts[i].Module = servers[ts[i].Server]
	}
	return servers
}
