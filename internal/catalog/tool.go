package catalog

import "encoding/json"

// Tool is one tool of an upstream MCP server, as the catalog and the code
// generator see it.
type Tool struct {
	Server       string          // the server's configured name, e.g. "everything" or "my-server"
	Module       string          // the server's Python module name, e.g. "my_server"; set by the catalog
	Name         string          // the tool's original name, e.g. "get-sum"
	Ident        string          // its Python identifier within the server, e.g. "get_sum"; set by the catalog
	Title        string          // optional display title
	Description  string          // the tool's description, may be empty
	InputSchema  json.RawMessage // JSON Schema of the arguments (an object schema); may be empty
	OutputSchema json.RawMessage // JSON Schema of the structured result; may be empty
	// Builtin marks one of codecell's own tools, which code imports from
	// the codecell package rather than from servers. It ranks after an
	// upstream tool that matches a search as well: the user connected that
	// server for a reason.
	Builtin bool
	// Destructive marks a tool its server annotates as one that may destroy
	// (destructiveHint, and not readOnlyHint). It ranks after the tools
	// that destroy nothing unless the request asks to destroy.
	Destructive bool
}

// QualifiedName is the tool's name the way code imports it: "module.ident",
// as in `from servers.module import ident`.
func (t Tool) QualifiedName() string {
	if t.Module != "" {
		return t.Module + "." + t.Ident
	}
	return t.Server + "." + t.Ident
}
