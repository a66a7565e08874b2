package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSchemasPortable lints every listed tool's schemas with the rules of
// the MCP Inspector's --strict portability check (which the conformance
// suite runs for real): no bare boolean where a schema object belongs, no
// type lists, no schema that constrains nothing.
func TestSchemasPortable(t *testing.T) {
	_, _, cs := statsServer(t, nil, nil, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) < 20 {
		t.Fatalf("listed %d tools, want every toolset", len(res.Tools))
	}
	for _, tool := range res.Tools {
		for kind, schema := range map[string]any{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema} {
			b, _ := json.Marshal(schema)
			var v any
			json.Unmarshal(b, &v)
			for _, finding := range lintSchema(v, kind, "") {
				t.Errorf("%s: %s", tool.Name, finding)
			}
		}
	}
}

var (
	booleanKeywords = []string{"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
	schemaKeywords  = []string{"items", "contains", "not", "propertyNames", "if", "then", "else", "contentSchema",
		"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
	schemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMaps  = []string{"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
	// annotations are the keywords that constrain nothing.
	annotations = []string{"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "if"}
)

// lintSchema returns what the portability rules find in a decoded schema.
func lintSchema(v any, path, keyword string) []string {
	if b, ok := v.(bool); ok {
		if slices.Contains(booleanKeywords, keyword) {
			return nil
		}
		return []string{fmt.Sprintf("%s: bare %v", path, b)}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	if _, ok := m["type"].([]any); ok {
		out = append(out, fmt.Sprintf("%s: type list %v", path, m["type"]))
	}
	constrains := false
	for k := range m {
		if !slices.Contains(annotations, k) {
			constrains = true
		}
	}
	if !constrains && keyword != "not" {
		out = append(out, fmt.Sprintf("%s: constrains nothing", path))
	}
	for _, k := range schemaKeywords {
		if sub, ok := m[k]; ok {
			out = append(out, lintSchema(sub, path+"."+k, k)...)
		}
	}
	for _, k := range schemaLists {
		list, _ := m[k].([]any)
		for i, sub := range list {
			out = append(out, lintSchema(sub, fmt.Sprintf("%s.%s[%d]", path, k, i), k)...)
		}
	}
	for _, k := range schemaMaps {
		subs, _ := m[k].(map[string]any)
		for name, sub := range subs {
			out = append(out, lintSchema(sub, path+"."+k+"."+name, k)...)
		}
	}
	return out
}

// TestPortable covers the rewrites one by one.
func TestPortable(t *testing.T) {
	type row struct {
		Tags   []string       `json:"tags"`
		Any    any            `json:"any"`
		Extra  map[string]any `json:"extra"`
		Nested *struct {
			N int `json:"n"`
		} `json:"nested"`
	}
	for _, output := range []bool{false, true} {
		s, err := jsonschema.For[row](nil)
		if err != nil {
			t.Fatal(err)
		}
		portable(s, output)
		b, _ := json.Marshal(s)
		var v any
		json.Unmarshal(b, &v)
		if f := lintSchema(v, "", ""); len(f) > 0 {
			t.Errorf("output=%v: %v in %s", output, f, b)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		valid := map[string]any{"tags": []any{"a"}, "any": 3.5, "extra": map[string]any{"k": []any{1}}, "nested": map[string]any{"n": 1}}
		if err := r.Validate(valid); err != nil {
			t.Errorf("output=%v: %v rejected: %v", output, valid, err)
		}
		withNulls := map[string]any{"tags": nil, "any": nil, "extra": nil, "nested": nil}
		if err := r.Validate(withNulls); (err == nil) != output {
			t.Errorf("output=%v: nulls accepted=%v, want %v (%v)", output, err == nil, output, err)
		}
		if err := r.Validate(map[string]any{"tags": "x", "any": nil, "extra": map[string]any{}, "nested": map[string]any{"n": 1}}); err == nil {
			t.Errorf("output=%v: a string for a list accepted", output)
		}
	}
}

// TestOutputsMatchSchemas checks the structured results of calls to every
// toolset against the output schemas the tools list. The server does not
// validate its own outputs at run time (see typedHandler), so this is where
// a field that drifts from its schema is caught.
func TestOutputsMatchSchemas(t *testing.T) {
	scripts := map[string]fakeRun{
		"print(1)":   {ms: 3, stdout: "1\n"},
		"raise":      {ms: 2, errType: "ValueError"},
		"call tools": {ms: 5, calls: []string{"fake.echo", "fake.missing"}},
	}
	_, _, cs := statsServer(t, nil, scripts, nil)
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range list.Tools {
		b, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		schemas[tool.Name] = r
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"execute_code", map[string]any{"code": "print(1)"}},
		{"execute_code", map[string]any{"code": "raise"}},
		{"execute_code", map[string]any{"code": "call tools"}},
		{"execute_code", map[string]any{"code": "print(1)", "session_id": "s1"}},
		{"list_sessions", nil},
		{"close_session", map[string]any{"session_id": "s1"}},
		{"get_execution_stats", nil},
		{"search_tools", map[string]any{"query": "echo"}},
		{"list_tool_categories", nil},
		{"write_workspace_file", map[string]any{"path": "a.txt", "content": "hi"}},
		{"read_workspace_file", map[string]any{"path": "a.txt"}},
		{"list_workspace_files", nil},
		{"initialize_code_file", map[string]any{"content": "print(1)\n"}},
		{"sanitize_pii", map[string]any{"text": "mail bob@example.com"}},
		{"list_skills", nil},
		{"execute_analysis", map[string]any{"analysis_type": "aggregate", "data": []any{map[string]any{"a": 1}}, "parameters": map[string]any{"metrics": []any{map[string]any{"op": "count"}}}}},
	}
	validated := 0
	for _, c := range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Errorf("%s: %v", c.tool, err)
			continue
		}
		if res.StructuredContent == nil {
			continue // a tool error: no structured result to check
		}
		b, _ := json.Marshal(res.StructuredContent)
		var v any
		json.Unmarshal(b, &v)
		if err := schemas[c.tool].Validate(v); err != nil {
			t.Errorf("%s%v: output does not match the listed schema: %v\n%s", c.tool, c.args, err, b)
		}
		validated++
	}
	if validated < 12 {
		t.Errorf("only %d of %d calls returned a structured result", validated, len(calls))
	}
}
