package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// typedHandler does what mcp.AddTool's handler does but one thing: it
// validates the arguments against the input schema (defaults applied) and
// decodes them, calls h, and sends h's output as the structured content
// (and as text when h set no content), but it does not validate that
// output against the output schema. The output is a Go value of a type the
// schema was made from, and checking it took a tenth of the server's CPU per
// execute_code (the SDK decodes it again, walks the schema and encodes it a
// second time). Tests check outputs against the schemas instead
// (TestOutputsMatchSchemas).
func typedHandler[In, Out any](in *jsonschema.Resolved, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := checkArguments(req.Params.Arguments, in)
		if err != nil {
			var res mcp.CallToolResult
			res.SetError(fmt.Errorf("validating \"arguments\": %v", err))
			return &res, nil
		}
		var input In
		if err := json.Unmarshal(args, &input); err != nil {
			var res mcp.CallToolResult
			res.SetError(err)
			return &res, nil
		}
		res, out, err := h(ctx, req, input)
		if err != nil {
			if wire, ok := err.(*jsonrpc.Error); ok {
				return nil, wire
			}
			var res mcp.CallToolResult
			res.SetError(err)
			return &res, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	}
}

// checkArguments validates a call's arguments against the input schema,
// with its defaults applied, as the SDK does; absent arguments are {}.
func checkArguments(raw json.RawMessage, in *jsonschema.Resolved) (json.RawMessage, error) {
	v := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("unmarshaling arguments: %w", err)
		}
	}
	var value any = v
	if err := in.ApplyDefaults(&value); err != nil {
		return nil, fmt.Errorf("applying schema defaults:\n%w", err)
	}
	if err := in.Validate(&value); err != nil {
		return nil, err
	}
	return json.Marshal(value)
}

// stripDescriptions removes the descriptions below the top of a schema.
func stripDescriptions(s *jsonschema.Schema) {
	top := s.Description
	stripAll(s)
	s.Description = top
}

// stripAll removes every description in a schema.
func stripAll(s *jsonschema.Schema) {
	eachSubschema(s, func(sub *jsonschema.Schema, _ bool) { stripAll(sub) })
	if s != nil {
		s.Description = ""
	}
}

// eachSubschema calls f with every direct subschema of s; booleanValued says
// whether the keyword also allows a bare true or false (additionalProperties
// and its kin, and not), where an empty schema is portable as it is.
func eachSubschema(s *jsonschema.Schema, f func(sub *jsonschema.Schema, booleanValued bool)) {
	if s == nil {
		return
	}
	if s.Not != nil {
		// {"not": {}} is how jsonschema-go writes false (additionalProperties
		// false): an empty schema under not is portable as it is.
		f(s.Not, true)
	}
	for _, group := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems, s.ItemsArray,
		{s.Items, s.Contains, s.PropertyNames, s.If, s.Then, s.Else, s.ContentSchema}} {
		for _, sub := range group {
			if sub != nil {
				f(sub, false)
			}
		}
	}
	for _, sub := range []*jsonschema.Schema{s.AdditionalProperties, s.UnevaluatedProperties, s.AdditionalItems, s.UnevaluatedItems} {
		if sub != nil {
			f(sub, true)
		}
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.PatternProperties, s.Defs, s.Definitions, s.DependentSchemas} {
		for _, sub := range m {
			if sub != nil {
				f(sub, false)
			}
		}
	}
}

// portable rewrites a schema inferred from Go types into the subset every
// MCP client accepts: the TypeScript SDK (what most hosts are built on)
// refuses a tool list with a bare `true` where a schema object belongs, and
// clients that map tool schemas onto a single-type dialect (Gemini's
// OpenAPI subset) refuse `"type": [...]`. So:
//
//   - a schema that says nothing (an `any` field, which jsonschema-go writes
//     as `true`) becomes an anyOf of every JSON type;
//   - a type list (`["null", "array"]`, a Go slice or pointer) becomes its one
//     non-null type in an input schema (the field is optional: a caller
//     omits it rather than sending null), and in an output schema, where the
//     value may really be null, an anyOf of single-type branches (a Go map
//     is nullable there too: a nil map encodes as null).
func portable(s *jsonschema.Schema, output bool) {
	eachSubschema(s, func(sub *jsonschema.Schema, booleanValued bool) {
		if booleanValued && isUnconstrained(sub) {
			return // marshals as `true`, which these keywords allow
		}
		portable(sub, output)
	})
	if !output && s.AdditionalProperties != nil && isUnconstrained(s.AdditionalProperties) {
		// A Go map in an input: "additionalProperties": true says what its
		// absence says, in tokens every conversation pays for.
		s.AdditionalProperties = nil
	}
	if output && s.Type == "object" && s.Properties == nil && s.AdditionalProperties != nil {
		// A Go map, which encodes as null when nil.
		s.Types, s.Type = []string{"null", "object"}, ""
	}
	if len(s.Types) > 0 {
		splitTypes(s, output)
	}
	if isUnconstrained(s) {
		s.AnyOf = anyJSON()
	}
}

// splitTypes replaces s.Types by a single type or an anyOf of single types.
func splitTypes(s *jsonschema.Schema, output bool) {
	var types []string
	nullable := false
	for _, t := range s.Types {
		if t == "null" {
			nullable = true
			continue
		}
		types = append(types, t)
	}
	s.Types = nil
	if !output {
		nullable = false
	}
	if len(types) == 1 && !nullable {
		s.Type = types[0]
		return
	}
	// Each branch keeps the constraints (items, properties, ...) of the
	// original; the keywords of other types are ignored by a validator.
	branch := *s
	branch.Description, branch.Title, branch.Default, branch.Examples = "", "", nil, nil
	*s = jsonschema.Schema{Description: s.Description, Title: s.Title, Default: s.Default, Examples: s.Examples}
	for _, t := range types {
		b := branch
		b.Type = t
		s.AnyOf = append(s.AnyOf, &b)
	}
	if nullable {
		s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: "null"})
	}
}

// anyJSON is a schema for any JSON value, written without a bare `true`.
func anyJSON() []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, t := range []string{"string", "number", "boolean", "object", "array", "null"} {
		out = append(out, &jsonschema.Schema{Type: t})
	}
	return out
}

// isUnconstrained reports whether s accepts every value: it has no keyword
// that constrains an instance, only annotations such as a description.
func isUnconstrained(s *jsonschema.Schema) bool {
	bare := jsonschema.Schema{}
	c := *s
	c.Title, c.Description, c.Default, c.Examples, c.Comment, c.Deprecated, c.ReadOnly, c.WriteOnly, c.PropertyOrder =
		"", "", nil, nil, "", false, false, false, nil
	// If alone does not constrain; with Then or Else it does.
	if c.Then == nil && c.Else == nil {
		c.If = nil
	}
	raw, err := c.MarshalJSON()
	if err != nil {
		return false
	}
	want, _ := bare.MarshalJSON()
	return string(raw) == string(want)
}
