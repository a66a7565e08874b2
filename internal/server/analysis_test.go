package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/analysis"
)

// analysisClient connects an in-memory client to a server with the analysis
// tools, and returns it with the server's workspace directory (created).
func analysisClient(t *testing.T) (*mcp.ClientSession, string) {
	t.Helper()
	s, cs := newTestServer(t, nil)
	s.addAnalysisTools() // adding a tool again replaces it, should New already have
	ws := s.Workspace(DefaultNamespace)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return cs, ws
}

func callAnalysis(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	return callTool(t, cs, "execute_analysis", args)
}

// structured decodes a result's structured content into v.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

func TestExecuteAnalysisListed(t *testing.T) {
	cs, _ := analysisClient(t)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != "execute_analysis" {
			continue
		}
		in, _ := json.Marshal(tool.InputSchema)
		out, _ := json.Marshal(tool.OutputSchema)
		for _, want := range []string{`"analysis_type"`, `"data"`, `"source"`, `"parameters"`, `"required":["analysis_type"]`, "group_by"} {
			if !strings.Contains(string(in), want) {
				t.Errorf("input schema lacks %s: %s", want, in)
			}
		}
		for _, want := range []string{`"result"`, `"stats"`, `"rows_in"`, `"rows_out"`} {
			if !strings.Contains(string(out), want) {
				t.Errorf("output schema lacks %s: %s", want, out)
			}
		}
		return
	}
	t.Fatal("execute_analysis is not listed")
}

func TestExecuteAnalysisFilterInline(t *testing.T) {
	cs, _ := analysisClient(t)
	res, text := callAnalysis(t, cs, map[string]any{
		"analysis_type": "filter",
		"data": []any{
			map[string]any{"id": json.Number("9007199254740993"), "city": "Zürich", "amount": 120},
			map[string]any{"id": 2, "city": "Paris", "amount": 80},
			map[string]any{"id": 3, "city": "Zürich", "amount": 30},
		},
		"parameters": map[string]any{"conditions": []any{
			map[string]any{"field": "city", "operator": "==", "value": "Zürich"},
			map[string]any{"field": "amount", "operator": ">", "value": 50},
		}},
	})
	if res.IsError {
		t.Fatalf("error: %s", text)
	}
	var out struct {
		Result []map[string]any `json:"result"`
		Stats  AnalysisStats    `json:"stats"`
	}
	structured(t, res, &out)
	if len(out.Result) != 1 || out.Result[0]["city"] != "Zürich" || out.Stats != (AnalysisStats{RowsIn: 3, RowsOut: 1}) {
		t.Errorf("structured content %+v", out)
	}
	// The integer beyond 2^53 keeps every digit (the client's float64 decoding
	// of structured content would not show it; the text does).
	for _, want := range []string{"filter: 1 of 3 rows match", "9007199254740993", "Zürich"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func TestExecuteAnalysisAggregateCSV(t *testing.T) {
	cs, ws := analysisClient(t)
	csv := "region,amount,note\n" +
		"north,10,\"a, b\"\n" +
		"south,2.5,\n" +
		"north,20,\"ünï\"\n" +
		"north,n/a,x\n"
	if err := os.MkdirAll(filepath.Join(ws, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "data", "sales.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	res, text := callAnalysis(t, cs, map[string]any{
		"analysis_type": "aggregate",
		"source":        "data/../data/sales.csv",
		"parameters": map[string]any{"group_by": []any{"region"}, "metrics": []any{
			map[string]any{"op": "count"},
			map[string]any{"field": "amount", "op": "sum"},
			map[string]any{"field": "amount", "op": "mean"},
			map[string]any{"field": "amount", "op": "p90"},
		}},
	})
	if res.IsError {
		t.Fatalf("error: %s", text)
	}
	var out struct {
		Result []map[string]any `json:"result"`
		Stats  AnalysisStats    `json:"stats"`
	}
	structured(t, res, &out)
	// north: 10, 20 ("n/a" is skipped): sum 30, mean 15, p90 = 10 + .9*10 = 19.
	want := []map[string]any{
		{"region": "north", "count": 3.0, "sum_amount": 30.0, "mean_amount": 15.0, "p90_amount": 19.0},
		{"region": "south", "count": 1.0, "sum_amount": 2.5, "mean_amount": 2.5, "p90_amount": 2.5},
	}
	got, _ := json.Marshal(out.Result)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) || out.Stats != (AnalysisStats{RowsIn: 4, RowsOut: 2}) {
		t.Errorf("result %s %+v\nwant   %s", got, out.Stats, wantJSON)
	}
	for _, want := range []string{"aggregate: 2 groups from 4 rows", "region", "count", "sum_amount", "north", "19"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func TestExecuteAnalysisSourceJSON(t *testing.T) {
	cs, ws := analysisClient(t)
	if err := os.WriteFile(filepath.Join(ws, "orders.json"), []byte(`{"meta":{},"orders":[{"sku":"a","qty":2},{"sku":"b"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res, text := callAnalysis(t, cs, map[string]any{
		"analysis_type": "validate",
		"source":        "orders.json",
		"parameters":    map[string]any{"data_field": "orders", "rules": []any{map[string]any{"field": "qty", "rule": "required"}}},
	})
	if res.IsError {
		t.Fatalf("error: %s", text)
	}
	var out struct {
		Result struct {
			Valid      bool
			Violations []struct {
				Row     int
				Field   string
				Rule    string
				Message string
			}
		} `json:"result"`
		Stats AnalysisStats `json:"stats"`
	}
	structured(t, res, &out)
	if out.Result.Valid || len(out.Result.Violations) != 1 || out.Result.Violations[0].Row != 1 || out.Stats != (AnalysisStats{RowsIn: 2, RowsOut: 1}) {
		t.Errorf("result %+v", out)
	}
	if !strings.Contains(text, "validate: 1 violation in 2 rows (1 row without one)") || !strings.Contains(text, "is missing") {
		t.Errorf("text:\n%s", text)
	}
}

func TestExecuteAnalysisBadArguments(t *testing.T) {
	cs, ws := analysisClient(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.csv"), []byte("a\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "ok.csv"), []byte("a\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"link.csv":      filepath.Join(outside, "secret.csv"),                       // absolute, outside
		"rel.csv":       filepath.Join("..", "..", "..", "..", "..", "secret.csv"),  // relative, climbing out
		"dir":           outside,                                                    // a directory outside
		"abs-in.csv":    filepath.Join(ws, "ok.csv"),                                // absolute, even if inside
		"chain.csv":     "link.csv",                                                 // via another link
		"sub":           ".",                                                        // a loop that stays inside
		"dangling.json": filepath.Join("nowhere", "x.json"),                         // nothing there
		"workspace.csv": filepath.Join("..", filepath.Base(ws), "..", "secret.csv"), // back in, then out
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo.csv"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "folder.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "bad.csv"), []byte("a,b\n1,2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agg := map[string]any{"metrics": []any{map[string]any{"op": "count"}}}
	rows := []any{map[string]any{"a": 1}}
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string // parts of the error text
	}{
		{"dot-dot", map[string]any{"analysis_type": "aggregate", "source": "../secret.csv", "parameters": agg},
			[]string{"invalid argument source", "leaves the workspace"}},
		{"dot-dot inside the path", map[string]any{"analysis_type": "aggregate", "source": "a/../../secret.csv", "parameters": agg},
			[]string{"invalid argument source", "leaves the workspace"}},
		{"absolute", map[string]any{"analysis_type": "aggregate", "source": filepath.Join(outside, "secret.csv"), "parameters": agg},
			[]string{"invalid argument source", "is absolute"}},
		{"symlink out", map[string]any{"analysis_type": "aggregate", "source": "link.csv", "parameters": agg},
			[]string{"invalid argument source", `"link.csv" cannot be opened inside the workspace`}},
		{"relative symlink out", map[string]any{"analysis_type": "aggregate", "source": "rel.csv", "parameters": agg},
			[]string{"invalid argument source", "cannot be opened"}},
		{"symlinked directory out", map[string]any{"analysis_type": "aggregate", "source": "dir/secret.csv", "parameters": agg},
			[]string{"invalid argument source", "cannot be opened"}},
		{"absolute symlink, even inside", map[string]any{"analysis_type": "aggregate", "source": "abs-in.csv", "parameters": agg},
			[]string{"invalid argument source", "cannot be opened"}},
		{"chain of symlinks out", map[string]any{"analysis_type": "aggregate", "source": "chain.csv", "parameters": agg},
			[]string{"invalid argument source", "cannot be opened"}},
		{"in and out again", map[string]any{"analysis_type": "aggregate", "source": "workspace.csv", "parameters": agg},
			[]string{"invalid argument source", "cannot be opened"}},
		{"dangling symlink", map[string]any{"analysis_type": "aggregate", "source": "dangling.json", "parameters": agg},
			[]string{"invalid argument source", "does not exist"}},
		{"missing file", map[string]any{"analysis_type": "aggregate", "source": "none.csv", "parameters": agg},
			[]string{"invalid argument source", `"none.csv" does not exist in the workspace`}},
		{"a directory", map[string]any{"analysis_type": "aggregate", "source": "folder.csv", "parameters": agg},
			[]string{"invalid argument source", `"folder.csv" is not a regular file`}},
		{"a FIFO", map[string]any{"analysis_type": "aggregate", "source": "fifo.csv", "parameters": agg},
			[]string{"invalid argument source", "not a regular file"}},
		{"unknown extension", map[string]any{"analysis_type": "aggregate", "source": "ok.txt", "parameters": agg},
			[]string{"invalid argument source", "want .json, .jsonl, .ndjson or .csv"}},
		{"both data and source", map[string]any{"analysis_type": "aggregate", "source": "ok.csv", "data": rows, "parameters": agg},
			[]string{"invalid argument data", "give data or source, not both"}},
		{"neither data nor source", map[string]any{"analysis_type": "aggregate", "parameters": agg},
			[]string{"invalid argument data", "give the rows as data, or a workspace file as source"}},
		{"null data and no source", map[string]any{"analysis_type": "aggregate", "data": nil, "parameters": agg},
			[]string{"invalid argument data", "as source"}},
		{"unknown analysis", map[string]any{"analysis_type": "pivot", "data": rows},
			[]string{"invalid argument analysis_type", `"pivot" is not one of filter, aggregate, transform, validate`}},
		{"bad operator", map[string]any{"analysis_type": "filter", "data": rows, "parameters": map[string]any{
			"conditions": []any{map[string]any{"field": "a", "operator": "like", "value": 1}}}},
			[]string{"invalid argument parameters.conditions[0].operator", `"like" is not one of ==`}},
		{"object data without data_field", map[string]any{"analysis_type": "aggregate", "data": map[string]any{"rows": rows}, "parameters": agg},
			[]string{"invalid argument parameters.data_field", "is required when the data is an object"}},
		{"data_field not a string", map[string]any{"analysis_type": "aggregate", "data": map[string]any{"rows": rows},
			"parameters": map[string]any{"data_field": 3, "metrics": []any{map[string]any{"op": "count"}}}},
			[]string{"invalid argument parameters.data_field", "must be a string"}},
		{"rows not objects", map[string]any{"analysis_type": "aggregate", "data": []any{1, 2}, "parameters": agg},
			[]string{"invalid argument data", "row 0 is a number, not an object"}},
		{"bad CSV in the file", map[string]any{"analysis_type": "aggregate", "source": "bad.csv", "parameters": agg},
			[]string{"invalid argument source", "bad.csv: invalid CSV: record on line 3: wrong number of fields"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, text := callAnalysis(t, cs, tc.args)
			if !res.IsError {
				t.Fatalf("not an error: %s", text)
			}
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("error %q lacks %q", text, want)
				}
			}
			src, _ := tc.args["source"].(string)
			if strings.Contains(text, ws) || strings.Contains(text, outside) && !strings.Contains(src, outside) {
				t.Errorf("error %q shows a host path", text)
			}
		})
	}
	// A symlink that stays inside the workspace is followed.
	res, text := callAnalysis(t, cs, map[string]any{"analysis_type": "aggregate", "source": "sub/sub/ok.csv", "parameters": agg})
	if res.IsError || !strings.Contains(text, "aggregate: 1 group from 1 row") {
		t.Errorf("through a symlink inside: %s", text)
	}
}

// TestExecuteAnalysisTransformOrder: select picks input fields, rename renames
// them (old to new), derive sees the renamed row and is kept with select.
func TestExecuteAnalysisTransformOrder(t *testing.T) {
	cs, _ := analysisClient(t)
	data := []any{
		map[string]any{"id": 1, "amount": 2.5, "qty": 4},
		map[string]any{"id": 2, "amount": 7, "qty": 3},
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []map[string]any
	}{
		{"rename alone", map[string]any{"rename": map[string]any{"amount": "price"}},
			[]map[string]any{{"id": 1.0, "price": 2.5, "qty": 4.0}, {"id": 2.0, "price": 7.0, "qty": 3.0}}},
		{"derive with select", map[string]any{"select": []any{"id"}, "derive": map[string]any{"total": "amount * qty"}},
			[]map[string]any{{"id": 1.0, "total": 10.0}, {"id": 2.0, "total": 21.0}}},
		{"all three", map[string]any{"select": []any{"id", "amount"}, "rename": map[string]any{"amount": "price"}, "derive": map[string]any{"total": "price * qty"}},
			[]map[string]any{{"id": 1.0, "price": 2.5, "total": 10.0}, {"id": 2.0, "price": 7.0, "total": 21.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, text := callAnalysis(t, cs, map[string]any{"analysis_type": "transform", "data": data, "parameters": tc.params})
			if res.IsError {
				t.Fatalf("error: %s", text)
			}
			var out struct {
				Result []map[string]any `json:"result"`
			}
			structured(t, res, &out)
			if !reflect.DeepEqual(out.Result, tc.want) {
				t.Errorf("result %v, want %v", out.Result, tc.want)
			}
		})
	}
}

// TestExecuteAnalysisUnknownField: a field no row has is a bad argument that
// names it and lists the fields seen, nearest first.
func TestExecuteAnalysisUnknownField(t *testing.T) {
	cs, _ := analysisClient(t)
	data := []any{map[string]any{"region": "north", "amount": 10}, map[string]any{"region": "south", "amount": 5}}
	for _, tc := range []struct {
		kind   string
		params map[string]any
		want   string
	}{
		{"aggregate", map[string]any{"group_by": []any{"regoin"}, "metrics": []any{map[string]any{"op": "count"}}},
			`invalid argument parameters.group_by[0]: no row has the field "regoin"; fields seen, nearest first: region, amount`},
		{"filter", map[string]any{"conditions": []any{map[string]any{"field": "Amount", "operator": ">", "value": 1}}},
			`invalid argument parameters.conditions[0].field: no row has the field "Amount"; fields seen, nearest first: amount, region (names are case-sensitive)`},
		{"transform", map[string]any{"select": []any{"regoin"}},
			`invalid argument parameters.select[0]: no row has the field "regoin"; fields seen, nearest first: region, amount`},
		{"validate", map[string]any{"rules": []any{map[string]any{"field": "amont", "rule": "min", "value": 0}}},
			`invalid argument parameters.rules[0].field: no row has the field "amont"; fields seen, nearest first: amount, region`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			res, text := callAnalysis(t, cs, map[string]any{"analysis_type": tc.kind, "data": data, "parameters": tc.params})
			if !res.IsError || !strings.Contains(text, tc.want) {
				t.Errorf("got %q (error %v), want %q", text, res.IsError, tc.want)
			}
		})
	}
	// The required rule is about missing fields: it reports them, as before.
	res, text := callAnalysis(t, cs, map[string]any{"analysis_type": "validate", "data": data,
		"parameters": map[string]any{"rules": []any{map[string]any{"field": "email", "rule": "required"}}}})
	if res.IsError || !strings.Contains(text, "validate: 2 violations in 2 rows") {
		t.Errorf("required on a field no row has: %s", text)
	}
}

func TestRenderAnalysisTruncates(t *testing.T) {
	rows := make([]map[string]any, 30)
	for i := range rows {
		r := map[string]any{"Long": strings.Repeat("x", 100), "Multi": "a\nb"}
		for c := range 14 {
			r[string(rune('a'+c))] = c
		}
		rows[i] = r
	}
	text := renderAnalysis("transform", analysis.Result{Result: rows, RowsIn: 30, RowsOut: 30})
	for _, want := range []string{"transform: 30 rows\n", "... and 10 more rows", "... and 4 more columns", strings.Repeat("x", 39) + "…", "a b"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, strings.Repeat("x", 40)) || strings.Count(text, "\n") != 24 {
		t.Errorf("text not cut:\n%s", text)
	}
}
