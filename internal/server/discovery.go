package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/codegen"
	"github.com/codecell/codecell/internal/upstream"
)

// Detail levels of search results (docs/tools.md, "discovery").
const (
	detailNameOnly = "name_only"
	detailSummary  = "summary"
	detailFull     = "full"
)

// SearchToolsInput is the input of search_tools.
type SearchToolsInput struct {
	Query       string `json:"query,omitempty" jsonschema:"What the tool does; empty lists all."`
	Server      string `json:"server,omitempty" jsonschema:"Only this server's tools."`
	DetailLevel string `json:"detail_level,omitempty" jsonschema:"name_only, summary (default) or full."`
	Limit       int    `json:"limit,omitempty" jsonschema:"Default 10."`
	Offset      int    `json:"offset,omitempty" jsonschema:"For paging."`
}

// ToolEntry is one tool in discovery results; fields beyond name depend on
// the detail level.
type ToolEntry struct {
	Name         string `json:"name" jsonschema:"server.tool, the way code imports it: from servers.<server> import <tool>"`
	Summary      string `json:"summary,omitempty" jsonschema:"The first sentence of the description."`
	Signature    string `json:"signature,omitempty" jsonschema:"The Python signature."`
	Server       string `json:"server,omitempty"`
	OriginalName string `json:"original_name,omitempty" jsonschema:"The tool's name on its server."`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"input_schema,omitempty" jsonschema:"The JSON Schema of the arguments."`
	OutputSchema any    `json:"output_schema,omitempty" jsonschema:"The JSON Schema of the structured result, if the tool has one."`
	Source       string `json:"source,omitempty" jsonschema:"The generated Python module of the tool."`
	Allowed      *bool  `json:"allowed,omitempty" jsonschema:"False when policy denies calling the tool."`
}

// SearchToolsOutput is the result of search_tools.
type SearchToolsOutput struct {
	Total int         `json:"total" jsonschema:"How many tools match in all."`
	Tools []ToolEntry `json:"tools"`
	// Skills are the namespace's saved skills that match the query, best
	// first: what the agent wrote once comes up beside the tools.
	Skills []SkillHit `json:"skills,omitempty" jsonschema:"Saved skills that match: from skills.<name> import <function>."`
	// Note says why the tools are what they are when the search matched
	// none: the nearest by spelling, or none at all, and where to look.
	Note string `json:"note,omitempty"`
}

// GetToolDefinitionInput is the input of get_tool_definition.
type GetToolDefinitionInput struct {
	Name string `json:"name" jsonschema:"The tool, as server.tool."`
}

// CategoriesOutput is the result of list_tool_categories.
type CategoriesOutput struct {
	Servers []upstream.Status `json:"servers"`
	// Config says which config file named the servers, or where codecell
	// looked for one: a host that starts codecell elsewhere than the user
	// expects finds none, and no servers.
	Config string `json:"config"`
	// Codecell is codecell's own tools that code can call.
	Codecell BuiltinCategory `json:"codecell"`
}

// BuiltinCategory describes codecell's own tools in list_tool_categories.
type BuiltinCategory struct {
	Tools int    `json:"tool_count"`
	Use   string `json:"use"`
}

func (s *Server) addDiscoveryTools() {
	addTool(s, "discovery", &mcp.Tool{
		Name:        "search_tools",
		Title:       "Search upstream tools",
		Description: "Find tools by what they do: the MCP servers' tools and codecell's own (from codecell import ...).",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in SearchToolsInput) (*mcp.CallToolResult, SearchToolsOutput, error) {
		out, err := s.searchTools(in)
		if err != nil {
			return nil, SearchToolsOutput{}, err
		}
		out.Skills = s.searchSkills(ctx, namespaceOf(req), in.Query)
		s.fitSearch(&out, in)
		return textResult(renderSearch(out)), out, nil
	})
	addTool(s, "discovery", &mcp.Tool{
		Name:        "get_tool_definition",
		Title:       "Get one tool's definition",
		Description: "The full definition of one upstream tool: description, schemas and its generated Python source.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in GetToolDefinitionInput) (*mcp.CallToolResult, ToolEntry, error) {
		e, err := s.toolDefinition(in.Name)
		if err != nil {
			return nil, ToolEntry{}, err
		}
		// The source is the part that grows with the tool (its docstring
		// holds the schema's descriptions): it gives way to the budget.
		schemas, _ := json.Marshal([]any{e.InputSchema, e.OutputSchema})
		room := (s.textRoom(req) - len(schemas)) / 2
		e.Description = s.fitText(e.Description, room, "inspect.getdoc in code prints the whole description")
		e.Source = s.fitText(e.Source, room, "inspect.getsource in code prints the whole generated function")
		return textResult(e.Source), e, nil
	})
	addTool(s, "discovery", &mcp.Tool{
		Name:        "list_tool_categories",
		Title:       "List upstream servers",
		Description: "Each upstream MCP server with its tool count, connection state and what it is for.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, CategoriesOutput, error) {
		out := s.categories()
		return textResult(renderCategories(out)), out, nil
	})
}

// categories is list_tool_categories.
func (s *Server) categories() CategoriesOutput {
	n := 0
	for _, t := range s.tools.catalog().Tools() {
		if t.Builtin {
			n++
		}
	}
	return CategoriesOutput{Servers: s.up.Statuses(), Config: s.cfg.Source(), Codecell: BuiltinCategory{
		Tools: n,
		Use:   "codecell's own tools (workspace, skills, code files, analysis, environments, stats, privacy): from codecell import <tool>; search_tools finds them as codecell.<tool>",
	}}
}

func renderCategories(out CategoriesOutput) string {
	var b strings.Builder
	for _, st := range out.Servers {
		fmt.Fprintf(&b, "%s: %s, %d tools", st.Name, st.State, st.Tools)
		if st.Error != "" {
			fmt.Fprintf(&b, " (%s)", st.Error)
		}
		if st.Instructions != "" {
			fmt.Fprintf(&b, " - %s", st.Instructions)
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		b.WriteString("no upstream servers are configured\n")
	}
	fmt.Fprintf(&b, "codecell: %d tools - %s\n", out.Codecell.Tools, out.Codecell.Use)
	fmt.Fprintf(&b, "config: %s\n", out.Config)
	return b.String()
}

// SearchTools is search_tools, for the command line and the REST API.
func (s *Server) SearchTools(in SearchToolsInput) (SearchToolsOutput, error) {
	return s.searchTools(in)
}

// ToolDefinition is get_tool_definition, for the command line.
func (s *Server) ToolDefinition(name string) (ToolEntry, error) { return s.toolDefinition(name) }

// Statuses is list_tool_categories, for the command line and doctor.
func (s *Server) Statuses() []upstream.Status { return s.up.Statuses() }

// searchTools is search_tools for MCP, the sandbox and the REST API.
func (s *Server) searchTools(in SearchToolsInput) (SearchToolsOutput, error) {
	detail := in.DetailLevel
	switch detail {
	case "":
		detail = detailSummary
	case detailNameOnly, detailSummary, detailFull:
	default:
		return SearchToolsOutput{}, fieldError("detail_level", "%q is not one of name_only, summary, full", in.DetailLevel)
	}
	if in.Limit == 0 {
		in.Limit = 10
	}
	if in.Limit < 1 || in.Limit > 100 {
		return SearchToolsOutput{}, fieldError("limit", "%d is out of range 1..100", in.Limit)
	}
	if in.Offset < 0 {
		return SearchToolsOutput{}, fieldError("offset", "must not be negative")
	}
	cat := s.tools.catalog()
	if in.Server != "" && !contains(cat.Servers(), in.Server) {
		// The module name code imports (my_server for my-server) works too.
		for _, t := range cat.Tools() {
			if t.Module == in.Server {
				in.Server = t.Server
				break
			}
		}
		if !contains(cat.Servers(), in.Server) {
			return SearchToolsOutput{}, fieldError("server", "no connected server is named %q (list_tool_categories lists them)", in.Server)
		}
	}
	q := catalog.Query{Text: in.Query, Server: in.Server, Limit: in.Limit, Offset: in.Offset}
	res := cat.Search(q)
	note := ""
	if res.Total == 0 && strings.TrimSpace(in.Query) != "" {
		// Never an empty answer without a word: the nearest tools by
		// spelling, said to be such, and where to look next.
		res = cat.Nearest(q)
		if res.Total > 0 {
			note = fmt.Sprintf("No tool matches %q; these are the nearest by spelling. ", in.Query)
		} else {
			note = fmt.Sprintf("No tool matches %q, nor comes near it. ", in.Query)
		}
		note += "Try other words, or list_tool_categories for the servers and what they are for " +
			"(from codecell import list_tool_categories in code); search_tools with an empty query lists every tool."
	}
	out := SearchToolsOutput{Total: res.Total, Tools: make([]ToolEntry, 0, len(res.Hits)), Note: note}
	for _, h := range res.Hits {
		out.Tools = append(out.Tools, s.entry(h.Tool, detail))
	}
	return out, nil
}

func (s *Server) toolDefinition(name string) (ToolEntry, error) {
	cat := s.tools.catalog()
	t, ok := cat.Lookup(name)
	if !ok {
		near := ""
		if r := cat.Nearest(catalog.Query{Text: strings.NewReplacer(".", " ", "_", " ", "-", " ").Replace(name), Limit: 3}); len(r.Hits) > 0 {
			var names []string
			for _, h := range r.Hits {
				names = append(names, h.Tool.QualifiedName())
			}
			near = "; the nearest by spelling: " + strings.Join(names, ", ")
		}
		return ToolEntry{}, fieldError("name", "no tool is named %q (search_tools finds them; names are server.tool)%s", name, near)
	}
	return s.entry(t, detailFull), nil
}

func (s *Server) entry(t catalog.Tool, detail string) ToolEntry {
	e := ToolEntry{Name: t.QualifiedName()}
	if detail == detailNameOnly {
		return e
	}
	e.Summary = firstSentence(t.Description, 200)
	e.Signature = codegen.Signature(t)
	if !s.policy.allows(t) {
		no := false
		e.Allowed = &no
	}
	if detail == detailFull {
		e.Server, e.OriginalName, e.Description = t.Server, t.Name, t.Description
		e.InputSchema, e.OutputSchema = decodeSchema(t.InputSchema), decodeSchema(t.OutputSchema)
		if t.Builtin {
			// Not generated: the codecell package has it (codecell/_tools.py).
			e.Source = "from codecell import " + t.Ident + "\n# " + e.Signature + "\n"
		} else {
			e.Source = codegen.Source(t)
		}
	}
	return e
}

func renderSearch(out SearchToolsOutput) string {
	var b strings.Builder
	for _, e := range out.Tools {
		b.WriteString(e.Name)
		if e.Signature != "" {
			fmt.Fprintf(&b, "  %s", e.Signature)
		}
		if e.Summary != "" {
			fmt.Fprintf(&b, "\n    %s", e.Summary)
		}
		if e.Source != "" {
			fmt.Fprintf(&b, "\n%s", e.Source)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "(%d of %d)\n", len(out.Tools), out.Total)
	for _, sk := range out.Skills {
		fmt.Fprintf(&b, "saved skill %s: %s  (%s)\n", sk.Name, sk.Summary, sk.Import)
	}
	if out.Note != "" {
		b.WriteString(out.Note + "\n")
	}
	return b.String()
}

// firstSentence is the description up to its first sentence end, at most max
// characters.
func firstSentence(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	for i, r := range s {
		if (r == '.' || r == '!' || r == '?') && (i+1 == len(s) || s[i+1] == ' ') {
			s = s[:i+1]
			break
		}
	}
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max-1]) + "…"
	}
	return s
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decodeSchema returns a schema as a JSON value, or nil when there is none
// or it is not JSON.
func decodeSchema(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// fitSearch holds a search's answer to the answer budget: its entries
// appear in the structured content and again in the text, so the tools
// past what fits are left out, and the note says how to get them (the next
// offset, or a lower detail level).
func (s *Server) fitSearch(out *SearchToolsOutput, in SearchToolsInput) {
	budget := s.cfg.Sandbox.AnswerBudget
	if budget <= 0 {
		return
	}
	// Each entry's share, measured once: the answer less the entries
	// left out.
	b, _ := json.Marshal(out)
	size := len(b) + len(renderSearch(*out))
	shown := len(out.Tools)
	for len(out.Tools) > 1 && size > budget {
		last := out.Tools[len(out.Tools)-1]
		e, _ := json.Marshal(last)
		size -= len(e) + len(renderSearch(SearchToolsOutput{Tools: []ToolEntry{last}})) - len("(1 of 0)\n")
		out.Tools = out.Tools[:len(out.Tools)-1]
	}
	if len(out.Tools) < shown {
		out.Note += fmt.Sprintf("%d of the %d tools asked for fit the answer budget; the next are at offset %d (or use detail_level name_only). ",
			len(out.Tools), shown, in.Offset+len(out.Tools))
	}
}
