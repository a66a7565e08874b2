package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
)

// builtin is one of codecell's own tools. It is listed over MCP when its
// toolset is chosen (config toolsets), and code calls it from the sandbox
// (from codecell import <name>) whatever the toolsets, through the same
// handler: one path per concern.
type builtin struct {
	toolset string
	tool    *mcp.Tool // with its schemas
	// register adds the tool to an MCP server.
	register func(*mcp.Server)
	// call runs the tool for code in namespace ns; nil when code cannot
	// call it (see notFromCode).
	call func(ctx context.Context, ns string, args json.RawMessage) (any, error)
}

// leanTools are the tools of the lean code-mode surface
// (config.LeanToolset), listed by default.
var leanTools = []string{"execute_code", "search_tools"}

// notFromCode are the tools code in the sandbox cannot call: those that run
// code themselves (an execution inside an execution), close_session (it
// could end the interpreter that runs the call), and search_tools and
// get_tool_definition, which the codecell package has as functions of its
// own (they return the tool entries without the envelope).
var notFromCode = []string{"execute_code", "execute_code_file", "close_session", "search_tools", "get_tool_definition"}

// listed reports whether the toolsets list the tool b.
func (b *builtin) listed(toolsets []string) bool {
	return slices.Contains(toolsets, b.toolset) ||
		slices.Contains(toolsets, config.LeanToolset) && slices.Contains(leanTools, b.tool.Name)
}

// addTool defines one of codecell's tools, as mcp.AddTool does, with
// schemas every MCP client accepts (see portable) and a lean output schema:
// the shape of the structured result, without the field descriptions. New
// registers it with MCP if toolset is chosen; code reaches it either way.
//
// Why lean: hosts load every tool definition into the model's context before
// any task, and codecell's worth is measured in context saved
// (BENCHMARKS.md: at least 99% fewer tokens
// than direct tool calling).
// The input schema is what the model needs to call a tool, so its fields
// keep their descriptions; the output schema is for the host to check the
// structured result, and the result's fields are named plainly. The Go
// types keep their jsonschema tags, as the documentation of the output.
func addTool[In, Out any](s *Server, toolset string, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	if t.InputSchema == nil {
		schema, err := jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("input schema of %s: %v", t.Name, err)) // a programming error, caught by every test
		}
		portable(schema, false)
		mirrorHandles(schema)
		t.InputSchema = schema
	}
	if t.OutputSchema == nil {
		schema, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("output schema of %s: %v", t.Name, err))
		}
		stripDescriptions(schema)
		portable(schema, true)
		t.OutputSchema = schema
	}
	resolved, err := t.InputSchema.(*jsonschema.Schema).Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("resolve the input schema of %s: %v", t.Name, err))
	}
	b := &builtin{toolset: toolset, tool: t, register: func(m *mcp.Server) { m.AddTool(t, typedHandler(resolved, h)) }}
	if !slices.Contains(notFromCode, t.Name) {
		b.call = func(ctx context.Context, ns string, args json.RawMessage) (any, error) {
			return callFromCode(ctx, ns, t.Name, resolved, args, h)
		}
	}
	s.builtins = append(s.builtins, b)
}

// SessionHeader is the name a 2026-07-28 client mirrors a tool's session_id
// into, as the header Mcp-Param-Session-Id (the revision's x-mcp-header): a
// balancer routes on it, so that every call of an interpreter session
// reaches the replica that holds the interpreter (deploy/haproxy.cfg). The
// SDK refuses a request whose header and argument differ.
const SessionHeader = "Session-Id"

// mirrorHandles marks the handle arguments of an input schema for
// mirroring into headers: session_id, the one handle whose state lives in
// one process.
func mirrorHandles(s *jsonschema.Schema) {
	if p := s.Properties["session_id"]; p != nil {
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra["x-mcp-header"] = SessionHeader
	}
}

// callFromCode runs a tool handler for code in the sandbox as the MCP
// server runs it for a client: the arguments are checked against the input
// schema (defaults applied), decoded, and handed over with a request that
// carries the namespace. A tool error comes back as an error.
func callFromCode[In, Out any](ctx context.Context, ns, name string, resolved *jsonschema.Resolved, args json.RawMessage, h mcp.ToolHandlerFor[In, Out]) (any, error) {
	if string(bytes.TrimSpace(args)) == "null" {
		args = nil
	}
	args, err := checkArguments(args, resolved)
	if err != nil {
		return nil, &sandbox.CallError{Kind: "TypeError", Message: fmt.Sprintf("%s: %v", name, err)}
	}
	var in In
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, &sandbox.CallError{Kind: "TypeError", Message: fmt.Sprintf("%s: %v", name, err)}
	}
	req := &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args},
		Extra:  &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: ns}},
	}
	res, out, err := h(ctx, req, in)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, &sandbox.CallError{Kind: "ValueError", Message: fmt.Sprintf("%s: %v", name, err)}
		}
		return nil, &sandbox.CallError{Kind: "RuntimeError", Message: fmt.Sprintf("%s: %v", name, err)}
	}
	if res != nil && res.IsError {
		var msg strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				msg.WriteString(t.Text)
			}
		}
		return nil, &sandbox.CallError{Kind: "RuntimeError", Message: fmt.Sprintf("%s: %s", name, strings.TrimSpace(msg.String()))}
	}
	return out, nil
}

// builtin returns the tool named name that code can call.
func (s *Server) builtin(name string) (*builtin, bool) {
	for _, b := range s.builtins {
		if b.tool.Name == name && b.call != nil {
			return b, true
		}
	}
	return nil, false
}

// builtinCatalog is the catalog entries of the tools code can call, so that
// search_tools finds them beside the upstream tools, as
// codecell.<tool>: from codecell import <tool>.
func (s *Server) builtinCatalog() []catalog.Tool {
	var out []catalog.Tool
	for _, b := range s.builtins {
		if b.call == nil {
			continue
		}
		schema, err := json.Marshal(b.tool.InputSchema)
		if err != nil {
			continue
		}
		a := b.tool.Annotations
		out = append(out, catalog.Tool{
			Server: config.ReservedServer, Name: b.tool.Name, Title: b.tool.Title,
			Description: b.tool.Description + " " + builtinUse(b.tool.Name),
			InputSchema: schema, Builtin: true,
			Destructive: a != nil && !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint,
		})
	}
	return out
}

// callableBuiltins are the names of the tools code can call: those it
// has a way to (b.call) that the policy allows, as callBuiltin decides.
func (s *Server) callableBuiltins() []string {
	out := []string{}
	for _, t := range s.tools.builtins {
		if s.policy.allows(t) {
			out = append(out, t.Name)
		}
	}
	return out
}

// builtinUse is what a codecell tool's catalog description says of its use
// from code.
func builtinUse(name string) string {
	return "In code: from codecell import " + name + "."
}

// codecellCall is the arguments of the sandbox's "codecell" host call.
type codecellCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// callBuiltin answers code's call of one of codecell's own tools.
func (e *execCalls) callBuiltin(ctx context.Context, params json.RawMessage) (any, error) {
	var p codecellCall
	if err := json.Unmarshal(params, &p); err != nil || p.Tool == "" {
		return nil, &sandbox.CallError{Kind: "ValueError", Message: "a codecell call needs a tool"}
	}
	b, ok := e.s.builtin(p.Tool)
	if !ok && p.Tool == "restore_pii" {
		return nil, &sandbox.CallError{Kind: "PermissionError", Message: "restore_pii is off: it hands back the originals of personal data, which codecell's config allows with pii.allowRestore"}
	}
	if !ok {
		return nil, &sandbox.CallError{Kind: "AttributeError", Message: fmt.Sprintf("codecell has no tool %q that code can call here", p.Tool)}
	}
	if t, ok := e.s.tools.catalog().Lookup(config.ReservedServer + "." + p.Tool); ok && !e.s.policy.allows(t) {
		return nil, &sandbox.CallError{Kind: "PermissionError", Message: fmt.Sprintf("policy denies calling codecell.%s", p.Tool)}
	}
	return b.call(ctx, e.ns, p.Arguments)
}

// destroys is the annotation of a tool that destroys what it is given (a
// file, a skill, a session's state): hosts may ask a person first, and
// search ranks it after the tools that destroy nothing.
func destroys() *mcp.ToolAnnotations {
	yes := true
	return &mcp.ToolAnnotations{DestructiveHint: &yes}
}
