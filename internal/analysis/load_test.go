package analysis

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadJSON(t *testing.T) {
	for _, tc := range []struct {
		name, src, dataField string
		want                 []map[string]any
	}{
		{"array", `[{"a":1},{"b":"x"}]`, "", []map[string]any{{"a": json.Number("1")}, {"b": "x"}}},
		{"array ignores data_field", `[{"a":1}]`, "items", []map[string]any{{"a": json.Number("1")}}},
		{"empty array", `[]`, "", []map[string]any{}},
		{"object with data_field", `{"total":2,"items":[{"a":1.5}]}`, "items", []map[string]any{{"a": json.Number("1.5")}}},
		{"nested data_field", `{"response":{"items":[{"a":true}]}}`, "response.items", []map[string]any{{"a": true}}},
		{"integers keep every digit", `[{"a":9007199254740993,"b":-12345678901234567890}]`, "",
			[]map[string]any{{"a": json.Number("9007199254740993"), "b": json.Number("-12345678901234567890")}}},
		{"byte order mark", "\uFEFF[{\"a\":1}]", "", []map[string]any{{"a": json.Number("1")}}},
		{"Unicode", "\n[{\"名前\":\"Zoë\",\"e\":\"\\u00e9\"}]\n", "", []map[string]any{{"名前": "Zoë", "e": "é"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadJSON(strings.NewReader(tc.src), tc.dataField)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestLoadJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, dataField string
		param                bool // a *ParamError on parameters.data_field
		msg                  string
	}{
		{"object without data_field", `{"items":[],"n":1}`, "", true, "is required when the data is an object: name the field that holds the array of rows (the object has fields items, n)"},
		{"data_field not there", `{"items":[]}`, "rows", true, `"rows" is not a field of the data (it has fields items)`},
		{"data_field not an array", `{"items":{"a":1}}`, "items", true, `"items" holds an object, not an array of rows`},
		{"element not an object", `[{"a":1},2]`, "", false, "row 1 is a number, not an object"},
		{"a string", `"x"`, "", false, "the data is a string, not an array of objects"},
		{"syntax", `[{"a":1},]`, "", false, "invalid JSON at byte 10"},
		{"truncated", `[{"a":1}`, "", false, "invalid JSON"},
		{"empty", ``, "", false, "invalid JSON: no data"},
		{"two values", `[] []`, "", false, "more than one value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadJSON(strings.NewReader(tc.src), tc.dataField)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want one containing %q", err, tc.msg)
			}
			var pe *ParamError
			if isParam := errors.As(err, &pe); isParam != tc.param || isParam && pe.Path != "parameters.data_field" {
				t.Errorf("err = %#v; want a ParamError: %v", err, tc.param)
			}
		})
	}
}

func TestLoadJSONLines(t *testing.T) {
	got, err := LoadJSONLines(strings.NewReader("\uFEFF{\"a\":1}\n\n  {\"a\":\"ü\"}  \r\n{\"a\":null}"))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"a": json.Number("1")}, {"a": "ü"}, {"a": nil}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	for _, tc := range []struct{ name, src, msg string }{
		{"bad line", "{\"a\":1}\n{\"a\":2}\n{\"a\":\n{\"a\":4}\n", "line 3: invalid JSON"},
		{"bad line after blank lines", "{\"a\":1}\n\n\nnope\n", "line 4: invalid JSON"},
		{"not an object", "{\"a\":1}\n[1,2]\n", "line 2: is an array, not an object"},
		{"two values on a line", "{\"a\":1} {\"a\":2}\n", "line 1: more than one JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadJSONLines(strings.NewReader(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want one containing %q", err, tc.msg)
			}
		})
	}
}

func TestLoadCSV(t *testing.T) {
	src := "\uFEFFname,city,amount,zip,note\n" +
		"\"Smith, Jane\",Zürich,12.50,02139,\"said \"\"hi\"\"\"\n" +
		"Zoë,東京,-3,10001,\"two\nlines\"\n" +
		"Bob,,1e3, 12,NaN\n"
	got, err := LoadCSV(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"name": "Smith, Jane", "city": "Zürich", "amount": json.Number("12.50"), "zip": "02139", "note": `said "hi"`},
		{"name": "Zoë", "city": "東京", "amount": json.Number("-3"), "zip": json.Number("10001"), "note": "two\nlines"},
		{"name": "Bob", "city": nil, "amount": json.Number("1e3"), "zip": " 12", "note": "NaN"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	// Numeric cells compare and aggregate as numbers.
	res, err := Run("aggregate", got, json.RawMessage(`{"metrics":[{"field":"amount","op":"sum"},{"field":"zip","op":"max"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, res.Result, `[{"sum_amount":1009.5,"max_zip":10001}]`)
	res, err = Run("filter", got, json.RawMessage(`{"conditions":[{"field":"amount","operator":">","value":12.4}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.RowsOut != 2 {
		t.Errorf("amount > 12.4: %d rows, want 2 (12.50 and 1e3)", res.RowsOut)
	}

	for _, tc := range []struct{ name, src, msg string }{
		{"wrong field count", "a,b\n1,2\n3\n", "invalid CSV: record on line 3: wrong number of fields"},
		{"bare quote", "a,b\n1,x\"y\n", "invalid CSV: parse error on line 2"},
		{"duplicate header", "a,b,a\n1,2,3\n", `columns 1 and 3 are both named "a"`},
		{"empty header", "a,,c\n", "column 2 has no name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCSV(strings.NewReader(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want one containing %q", err, tc.msg)
			}
		})
	}
	if rows, err := LoadCSV(strings.NewReader("")); err != nil || len(rows) != 0 {
		t.Errorf("empty CSV: %v, %v", rows, err)
	}
	if rows, err := LoadCSV(strings.NewReader("a,b\n")); err != nil || rows == nil || len(rows) != 0 {
		t.Errorf("header only: %v, %v", rows, err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.json":   `{"rows":[{"x":1}]}`,
		"b.JSONL":  "{\"x\":1}\n",
		"c.ndjson": "{\"x\":1}\n",
		"d.csv":    "x\n1\n",
		"e.txt":    "x\n1\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a.json", "b.JSONL", "c.ndjson", "d.csv"} {
		rows, err := LoadFile(filepath.Join(dir, name), "rows")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := []map[string]any{{"x": json.Number("1")}}; !reflect.DeepEqual(rows, want) {
			t.Errorf("%s: %#v", name, rows)
		}
	}
	if _, err := LoadFile(filepath.Join(dir, "e.txt"), ""); err == nil || !strings.Contains(err.Error(), `"e.txt" has no known extension; want .json, .jsonl, .ndjson or .csv`) {
		t.Errorf("e.txt: %v", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "none.json"), ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("none.json: %v", err)
	}
}

func TestLimits(t *testing.T) {
	three := map[Format]string{
		JSON:      `[{"a":1},{"a":2},{"a":3}]`,
		JSONLines: "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n",
		CSV:       "a\n1\n2\n3\n",
	}
	for format, src := range three {
		if rows, err := (Limits{MaxRows: 3}).Load(strings.NewReader(src), format, ""); err != nil || len(rows) != 3 {
			t.Errorf("%s at the row limit: %d rows, %v", format, len(rows), err)
		}
		_, err := Limits{MaxRows: 2}.Load(strings.NewReader(src), format, "")
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 2 rows") {
			t.Errorf("%s over the row limit: %v", format, err)
		}
		n := int64(len(src))
		if _, err := (Limits{MaxBytes: n}).Load(strings.NewReader(src), format, ""); err != nil {
			t.Errorf("%s at the byte limit: %v", format, err)
		}
		_, err = Limits{MaxBytes: n - 1}.Load(strings.NewReader(src), format, "")
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s over the byte limit: %v", format, err)
		}
	}
	if _, err := (Limits{MaxRows: 1}).RowsOf([]any{map[string]any{}, map[string]any{}}, ""); !errors.Is(err, ErrTooLarge) {
		t.Errorf("RowsOf over the row limit: %v", err)
	}
	if (Limits{}).rows() != DefaultMaxRows || (Limits{}).bytes() != DefaultMaxBytes {
		t.Error("zero Limits are not the defaults")
	}
}
