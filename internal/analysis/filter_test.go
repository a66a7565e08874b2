package analysis

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// people covers the kinds of values a condition meets: numbers and numeric
// strings, null and missing fields, Unicode, nested objects and arrays, an
// integer beyond 2^53.
const people = `[
 {"id":0,"name":"Ada","age":36,"city":"Zürich","tags":["a","b"],"score":"12.5","customer":{"address":{"city":"Paris"}},"active":true},
 {"id":1,"name":"bob","age":"41","city":"Paris","tags":[],"score":7,"customer":{"address":{"city":"Zürich"}},"active":false},
 {"id":2,"name":"Çelik","age":null,"city":"Köln","score":"n/a","customer":{"address":null}},
 {"id":3,"name":"Dan","age":9007199254740993,"tags":["b"],"score":12.5,"items":[{"sku":"x1"}]},
 {"id":4,"age":20.0,"city":"","active":"true"}
]`

func TestFilter(t *testing.T) {
	rows := rowsOf(t, people)
	cond := func(field, op, value string) string {
		if value == "" {
			return `{"conditions":[{"field":"` + field + `","operator":"` + op + `"}]}`
		}
		return `{"conditions":[{"field":"` + field + `","operator":"` + op + `","value":` + value + `}]}`
	}
	for _, tc := range []struct {
		name, params string
		want         []string // ids
	}{
		// ==
		{"== number", cond("age", "==", "36"), []string{"0"}},
		{"== number against numeric string", cond("age", "==", "41"), []string{"1"}},
		{"== string against string", cond("age", "==", `"41"`), []string{"1"}},
		{"== numeric string against number", cond("age", "==", `"36"`), []string{"0"}},
		{"== float equals integer", cond("age", "==", "20"), []string{"4"}},
		{"== beyond 2^53 is exact", cond("age", "==", "9007199254740993"), []string{"3"}},
		{"== beyond 2^53, off by one", cond("age", "==", "9007199254740992"), []string{}},
		{"== null matches null", cond("age", "==", "null"), []string{"2"}},
		{"== null matches missing", cond("items", "==", "null"), []string{"0", "1", "2", "4"}},
		{"== strings are not coerced to each other, only against numbers", cond("score", "==", `"12.50"`), []string{"3"}},
		{"== Unicode", cond("city", "==", `"Köln"`), []string{"2"}},
		{"== array deeply", cond("tags", "==", `["a","b"]`), []string{"0"}},
		{"== object deeply", cond("customer", "==", `{"address":{"city":"Paris"}}`), []string{"0"}},
		{"== boolean", cond("active", "==", "true"), []string{"0"}},
		{"== boolean is not a string", cond("active", "==", `"true"`), []string{"4"}},
		{"== empty string", cond("city", "==", `""`), []string{"4"}},
		// !=
		{"!= number", cond("age", "!=", "36"), []string{"1", "2", "3", "4"}},
		{"!= matches missing", cond("items", "!=", "1"), []string{"0", "1", "2", "3", "4"}},
		{"!= null", cond("age", "!=", "null"), []string{"0", "1", "3", "4"}},
		// ordering
		{"> number, numeric string coerced, null never", cond("age", ">", "30"), []string{"0", "1", "3"}},
		{">= number", cond("age", ">=", "20"), []string{"0", "1", "3", "4"}},
		{"< number", cond("age", "<", "36"), []string{"4"}},
		{"<= number", cond("age", "<=", "36"), []string{"0", "4"}},
		{"> beyond 2^53 is exact", cond("age", ">", "9007199254740992"), []string{"3"}},
		{"> numeric string value compares numbers numerically", cond("age", ">", `"9007199254740992"`), []string{"3"}},
		{"> string is byte order", cond("name", ">", `"Ada"`), []string{"1", "2", "3"}},
		{"< string, upper case first", cond("name", "<", `"a"`), []string{"0", "3"}},
		{"> skips non-numeric strings", cond("score", ">", "10"), []string{"0", "3"}},
		{"<= string against numbers never matches", cond("id", "<=", `"x"`), []string{}},
		// in, not_in
		{"in strings", cond("city", "in", `["Paris","Köln"]`), []string{"1", "2"}},
		{"in mixed", cond("age", "in", `[36,"41"]`), []string{"0", "1"}},
		{"in null", cond("age", "in", `[null]`), []string{"2"}},
		{"in empty list", cond("age", "in", `[]`), []string{}},
		{"not_in, missing is not in", cond("city", "not_in", `["Paris","Köln"]`), []string{"0", "3", "4"}},
		{"not_in with null", cond("city", "not_in", `["Paris",null]`), []string{"0", "2", "4"}},
		// contains
		{"contains substring", cond("name", "contains", `"a"`), []string{"0", "3"}},
		{"contains array element", cond("tags", "contains", `"b"`), []string{"0", "3"}},
		{"contains Unicode", cond("city", "contains", `"ü"`), []string{"0"}},
		{"contains number's text", cond("age", "contains", `"900"`), []string{"3"}},
		{"contains number element", cond("tags", "contains", "2"), nil},
		// startswith, endswith
		{"startswith", cond("city", "startswith", `"Z"`), []string{"0"}},
		{"startswith Unicode", cond("name", "startswith", `"Ç"`), []string{"2"}},
		{"startswith numeric string", cond("age", "startswith", `"4"`), []string{"1"}},
		{"startswith number text", cond("age", "startswith", `"9007"`), []string{"3"}},
		{"endswith", cond("city", "endswith", `"ln"`), []string{"2"}},
		{"endswith empty matches every text", cond("city", "endswith", `""`), []string{"0", "1", "2", "4"}},
		// regex
		{"regex ASCII class", cond("name", "regex", `"^[A-Z]"`), []string{"0", "3"}},
		{"regex flags", cond("name", "regex", `"(?i)^b"`), []string{"1"}},
		{"regex Unicode classes", cond("city", "regex", `"^\\p{Lu}\\p{Ll}+$"`), []string{"0", "1", "2"}},
		{"regex dot is a rune", cond("city", "regex", `"^Z.rich$"`), []string{"0"}},
		{"regex unanchored", cond("city", "regex", `"ri"`), []string{"0", "1"}},
		{"regex on numbers", cond("age", "regex", `"^\\d{16}$"`), []string{"3"}},
		// exists
		{"exists default true", cond("city", "exists", ""), []string{"0", "1", "2", "4"}},
		{"exists true", cond("city", "exists", "true"), []string{"0", "1", "2", "4"}},
		{"exists false", cond("city", "exists", "false"), []string{"3"}},
		{"exists false matches null", cond("age", "exists", "false"), []string{"2"}},
		// paths
		{"nested path", cond("customer.address.city", "==", `"Paris"`), []string{"0"}},
		{"nested path through null", cond("customer.address.city", "exists", "false"), []string{"2", "3", "4"}},
		{"array index", cond("items.0.sku", "==", `"x1"`), []string{"3"}},
		{"array index out of range", cond("items.1.sku", "exists", ""), []string{}},
		// logic and limit
		{"AND", `{"conditions":[{"field":"age","operator":">=","value":20},{"field":"active","operator":"==","value":true}]}`, []string{"0"}},
		{"OR", `{"logic":"OR","conditions":[{"field":"age","operator":">","value":40},{"field":"city","operator":"==","value":"Köln"}]}`, []string{"1", "2", "3"}},
		{"or in lower case", `{"logic":"or","conditions":[{"field":"id","operator":"==","value":0},{"field":"id","operator":"==","value":4}]}`, []string{"0", "4"}},
		{"limit", `{"limit":2,"conditions":[{"field":"id","operator":"exists"}]}`, []string{"0", "1"}},
		{"limit beyond matches", `{"limit":10,"conditions":[{"field":"id","operator":">","value":2}]}`, []string{"3", "4"}},
		{"no conditions, AND keeps all", `{"conditions":[]}`, []string{"0", "1", "2", "3", "4"}},
		{"no conditions, OR keeps none", `{"conditions":[],"logic":"OR"}`, []string{}},
		{"data_field is allowed", `{"data_field":"x","conditions":[{"field":"id","operator":"==","value":1}]}`, []string{"1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run("filter", rows, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = []string{}
			}
			if got := ids(t, res); !slices.Equal(got, want) {
				t.Errorf("ids = %q, want %q", got, want)
			}
			if res.RowsIn != len(rows) || res.RowsOut != len(want) {
				t.Errorf("rows in, out = %d, %d; want %d, %d", res.RowsIn, res.RowsOut, len(rows), len(want))
			}
		})
	}
}

// TestFilterGoValues covers values only Go callers can build: NaN, infinities,
// Go integer types, and a key that contains a dot.
func TestFilterGoValues(t *testing.T) {
	rows := []map[string]any{
		{"id": 0, "v": math.NaN()},
		{"id": 1, "v": math.Inf(1)},
		{"id": 2, "v": 1.0},
		{"id": 3, "v": int64(1)},
		{"id": 4, "v": math.Inf(-1), "unit.price": 5},
		{"id": 5, "v": []any{json.Number("2"), 3.0}},
	}
	for _, tc := range []struct {
		name, params string
		want         []string
	}{
		{"NaN is not equal to anything", `{"conditions":[{"field":"v","operator":"!=","value":1}]}`, []string{"0", "1", "4", "5"}},
		{"NaN does not order", `{"conditions":[{"field":"v","operator":">","value":0}]}`, []string{"1", "2", "3"}},
		{"infinities order", `{"conditions":[{"field":"v","operator":"<","value":-1e308}]}`, []string{"4"}},
		{"int64 equals float", `{"conditions":[{"field":"v","operator":"==","value":1}]}`, []string{"2", "3"}},
		{"in with NaN", `{"conditions":[{"field":"v","operator":"in","value":[1]}]}`, []string{"2", "3"}},
		{"NaN exists", `{"conditions":[{"field":"v","operator":"exists"}]}`, []string{"0", "1", "2", "3", "4", "5"}},
		{"dotted key first", `{"conditions":[{"field":"unit.price","operator":"==","value":5}]}`, []string{"4"}},
		{"contains number in array", `{"conditions":[{"field":"v","operator":"contains","value":2}]}`, []string{"5"}},
		{"array equals with mixed number types", `{"conditions":[{"field":"v","operator":"==","value":[2,3]}]}`, []string{"5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run("filter", rows, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(t, res); !slices.Equal(got, tc.want) {
				t.Errorf("ids = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFilterEmptyInput(t *testing.T) {
	for _, rows := range [][]map[string]any{nil, {}} {
		res, err := Run("filter", rows, json.RawMessage(`{"conditions":[{"field":"a","operator":"exists"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Result.([]map[string]any); got == nil || len(got) != 0 || res.RowsIn != 0 || res.RowsOut != 0 {
			t.Errorf("result %#v %+v, want an empty, non-nil list", got, res)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	ops := strings.Join(Operators, ", ")
	runErrorCases(t, []errorCase{
		{"no kind", "", `{}`, "analysis_type", "is required"},
		{"unknown kind", "sort", `{}`, "analysis_type", `"sort" is not one of filter, aggregate, transform, validate`},
		{"parameters not an object", "filter", `[1]`, "parameters", "must be an object, not an array"},
		{"parameters not JSON", "filter", `{`, "parameters", "not valid JSON"},
		{"unknown parameter", "filter", `{"conditions":[],"limt":3}`, "parameters.limt", "not a parameter here; want conditions, logic, limit"},
		{"no conditions", "filter", `{}`, "parameters.conditions", "is required"},
		{"conditions not a list", "filter", `{"conditions":{"field":"a"}}`, "parameters.conditions", "must be an array, not an object"},
		{"condition not an object", "filter", `{"conditions":["a == 1"]}`, "parameters.conditions[0]", "must be an object, not a string"},
		{"no field", "filter", `{"conditions":[{"operator":"==","value":1}]}`, "parameters.conditions[0].field", "is required"},
		{"empty field", "filter", `{"conditions":[{"field":"","operator":"==","value":1}]}`, "parameters.conditions[0].field", "must not be empty"},
		{"field not a string", "filter", `{"conditions":[{"field":3,"operator":"==","value":1}]}`, "parameters.conditions[0].field", "must be a string, not a number"},
		{"no operator", "filter", `{"conditions":[{"field":"a","value":1}]}`, "parameters.conditions[0].operator", "is required"},
		{"unknown operator", "filter", `{"conditions":[{"field":"a","operator":"==","value":1},{"field":"b","operator":"like","value":"x"}]}`,
			"parameters.conditions[1].operator", `"like" is not one of ` + ops},
		{"unknown key in a condition", "filter", `{"conditions":[{"field":"a","operator":"==","values":1}]}`, "parameters.conditions[0].values", "not a parameter here"},
		{"== without value", "filter", `{"conditions":[{"field":"a","operator":"=="}]}`, "parameters.conditions[0].value", "is required for =="},
		{"> with a boolean", "filter", `{"conditions":[{"field":"a","operator":">","value":true}]}`, "parameters.conditions[0].value", "must be a number or a string for >, not true"},
		{"< with null", "filter", `{"conditions":[{"field":"a","operator":"<","value":null}]}`, "parameters.conditions[0].value", "must be a number or a string"},
		{"in with a string", "filter", `{"conditions":[{"field":"a","operator":"in","value":"abc"}]}`, "parameters.conditions[0].value", `must be an array for in, not "abc"`},
		{"not_in without value", "filter", `{"conditions":[{"field":"a","operator":"not_in"}]}`, "parameters.conditions[0].value", "must be an array for not_in, not null"},
		{"contains without value", "filter", `{"conditions":[{"field":"a","operator":"contains"}]}`, "parameters.conditions[0].value", "is required"},
		{"startswith a number", "filter", `{"conditions":[{"field":"a","operator":"startswith","value":1}]}`, "parameters.conditions[0].value", "must be a string for startswith"},
		{"endswith a list", "filter", `{"conditions":[{"field":"a","operator":"endswith","value":["x"]}]}`, "parameters.conditions[0].value", "must be a string for endswith"},
		{"bad regex", "filter", `{"conditions":[{"field":"a","operator":"exists"},{"field":"name","operator":"regex","value":"("}]}`,
			"parameters.conditions[1].value", `not a valid regular expression for field "name"`},
		{"regex a number", "filter", `{"conditions":[{"field":"a","operator":"regex","value":1}]}`, "parameters.conditions[0].value", "must be a string"},
		{"exists with a string", "filter", `{"conditions":[{"field":"a","operator":"exists","value":"yes"}]}`, "parameters.conditions[0].value", "must be true or false"},
		{"bad logic", "filter", `{"conditions":[],"logic":"XOR"}`, "parameters.logic", `"XOR" is not one of AND, OR`},
		{"logic not a string", "filter", `{"conditions":[],"logic":true}`, "parameters.logic", "must be a string, not a boolean"},
		{"limit zero", "filter", `{"conditions":[],"limit":0}`, "parameters.limit", "must be a positive integer, not 0"},
		{"limit fraction", "filter", `{"conditions":[],"limit":1.5}`, "parameters.limit", "must be a positive integer, not 1.5"},
		{"limit string", "filter", `{"conditions":[],"limit":"3"}`, "parameters.limit", `must be a positive integer, not "3"`},
	})
}
