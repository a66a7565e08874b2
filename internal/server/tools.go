package server

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool registers a tool as mcp.AddTool does, with a lean output schema:
// the shape of the structured result, without the field descriptions.
//
// Why: hosts load every tool definition into the model's context before
// any task, and codecell's worth is measured in context saved (SPEC §10).
// The input schema is what the model needs to call a tool, so its fields
// keep their descriptions; the output schema is for the host to check the
// structured result, and the result's fields are named plainly. The Go
// types keep their jsonschema tags, as the documentation of the output.
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	if t.OutputSchema == nil {
		schema, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("output schema of %s: %v", t.Name, err)) // a programming error, caught by every test
		}
		stripDescriptions(schema)
		t.OutputSchema = schema
	}
	mcp.AddTool(s, t, h)
}

// stripDescriptions removes the descriptions below the top of a schema.
func stripDescriptions(s *jsonschema.Schema) {
	top := s.Description
	stripAll(s)
	s.Description = top
}

// stripAll removes every description in a schema.
func stripAll(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	s.Description = ""
	for _, group := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems, {s.Items, s.AdditionalProperties}} {
		for _, sub := range group {
			stripAll(sub)
		}
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.Defs, s.Definitions} {
		for _, sub := range m {
			stripAll(sub)
		}
	}
}
