package analysis

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestTransform(t *testing.T) {
	for _, tc := range []struct {
		name, data, params string
		want               string
	}{
		{
			name: "derive arithmetic",
			data: `[{"price":2.5,"qty":4},{"price":"3","qty":2},{"price":null,"qty":1},{"qty":1},{"price":1,"qty":0},{"price":"abc","qty":1}]`,
			params: `{"derive":{"total":"price * qty","unit":"price / qty","neg":"-price + 1","paren":"(price + 1) * 2","prec":"1 + 2 * 3 - 4 / 2"},
				"select":["total","unit","neg","paren","prec"]}`,
			// row 0: 10, .625, -1.5, 7; row 1: "3" is 3: 6, 1.5, -2, 8; rows 2, 3, 5 have no numeric price;
			// row 4: 1/0 is null. prec: 1 + 6 - 2 = 5.
			want: `[{"total":10,"unit":0.625,"neg":-1.5,"paren":7,"prec":5},
				{"total":6,"unit":1.5,"neg":-2,"paren":8,"prec":5},
				{"total":null,"unit":null,"neg":null,"paren":null,"prec":5},
				{"total":null,"unit":null,"neg":null,"paren":null,"prec":5},
				{"total":0,"unit":null,"neg":0,"paren":4,"prec":5},
				{"total":null,"unit":null,"neg":null,"paren":null,"prec":5}]`,
		},
		{
			name:   "left associativity and unary minus",
			data:   `[{"a":10,"b":3,"s":"x"}]`,
			params: `{"derive":{"sub":"a - b - 2","div":"a / b / 2","neg":"--a","mix":"-a * -b","pos":"+a","posstr":"+s","exp":"1.5e2 + .5"}}`,
			// 10-3-2 = 5; 10/3/2 = 1.6666666666666667; --10 = 10; -10*-3 = 30
			want: `[{"a":10,"b":3,"s":"x","sub":5,"div":1.6666666666666667,"neg":10,"mix":30,"pos":10,"posstr":null,"exp":150.5}]`,
		},
		{
			name:   "integers stay exact, division only when exact",
			data:   `[{"big":9007199254740993,"max":9223372036854775807}]`,
			params: `{"derive":{"plus":"big + 0","times":"big * 1","half":"6 / 3","frac":"7 / 2","over":"max + 1","neg":"-big"},"select":["plus","times","half","frac","over","neg"]}`,
			want:   `[{"plus":9007199254740993,"times":9007199254740993,"half":2,"frac":3.5,"over":9223372036854775808,"neg":-9007199254740993}]`,
		},
		{
			name:   "a bare field copies the value, nested paths and Unicode names",
			data:   `[{"customer":{"address":{"city":"Zürich"}},"größe":3,"items":[{"n":2}]}]`,
			params: `{"derive":{"city":"customer.address.city","double":"größe * 2","first":"items.0.n * 10"},"select":["city","double","first"]}`,
			want:   `[{"city":"Zürich","double":6,"first":20}]`,
		},
		{
			name:   "derive sees the input row, not other derived fields",
			data:   `[{"x":1,"a":5}]`,
			params: `{"derive":{"a":"x + 1","b":"a * 10","x":"x * 100"}}`,
			want:   `[{"x":100,"a":2,"b":50}]`,
		},
		{
			name:   "rename swaps",
			data:   `[{"a":1,"b":2,"c":3}]`,
			params: `{"rename":{"a":"b","b":"a"}}`,
			want:   `[{"a":2,"b":1,"c":3}]`,
		},
		{
			name:   "a renamed value wins over an existing key",
			data:   `[{"a":1,"c":2},{"c":3}]`,
			params: `{"rename":{"a":"c"}}`,
			want:   `[{"c":1},{"c":3}]`,
		},
		{
			name:   "select: missing fields are null, dot paths keep their name",
			data:   `[{"a":1,"b":2,"n":{"x":5}},{"a":3}]`,
			params: `{"select":["b","n.x"]}`,
			want:   `[{"b":2,"n.x":5},{"b":null,"n.x":null}]`,
		},
		{
			name:   "rename alone moves the value to the new name",
			data:   `[{"amount":10,"qty":2},{"qty":1}]`,
			params: `{"rename":{"amount":"price"}}`,
			want:   `[{"price":10,"qty":2},{"qty":1}]`,
		},
		{
			name:   "select picks source fields, then rename renames them",
			data:   `[{"id":1,"amount":10,"qty":2}]`,
			params: `{"select":["id","amount"],"rename":{"amount":"price"}}`,
			want:   `[{"id":1,"price":10}]`,
		},
		{
			name:   "derived fields are kept whatever select says",
			data:   `[{"id":1,"amount":2.5,"qty":4},{"id":2,"amount":7,"qty":3}]`,
			params: `{"select":["id"],"derive":{"total":"amount * qty"}}`,
			want:   `[{"id":1,"total":10},{"id":2,"total":21}]`,
		},
		{
			name:   "select, then rename, then derive over the renamed row",
			data:   `[{"sku":"A","amount":2,"qty":3,"note":"x"}]`,
			params: `{"select":["sku","amount","total"],"rename":{"sku":"id","amount":"price"},"derive":{"total":"price * qty"}}`,
			want:   `[{"id":"A","price":2,"total":6}]`,
		},
		{
			name:   "derive after a rename onto an existing key sees the renamed value",
			data:   `[{"a":1,"c":2},{"c":3}]`,
			params: `{"rename":{"a":"c"},"derive":{"d":"c * 10","e":"c"}}`,
			want:   `[{"c":1,"d":10,"e":1},{"c":3,"d":30,"e":3}]`,
		},
		{
			name:   "derive after a swap",
			data:   `[{"a":1,"b":2}]`,
			params: `{"rename":{"a":"b","b":"a"},"derive":{"d":"a * 10 + b"}}`,
			want:   `[{"a":2,"b":1,"d":21}]`,
		},
		{
			name:   "no rows",
			data:   `[]`,
			params: `{"select":["a"]}`,
			want:   `[]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := rowsOf(t, tc.data)
			before, _ := json.Marshal(rows)
			res, err := Run("transform", rows, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, res.Result, tc.want)
			if after, _ := json.Marshal(rows); string(after) != string(before) {
				t.Errorf("input rows changed:\n%s\n%s", before, after)
			}
			if res.RowsIn != len(rows) || res.RowsOut != len(rows) {
				t.Errorf("rows in, out = %d, %d; want %d twice", res.RowsIn, res.RowsOut, len(rows))
			}
		})
	}
}

func TestTransformTypes(t *testing.T) {
	rows := rowsOf(t, `[{"a":9007199254740993,"b":0.5}]`)
	res, err := Run("transform", rows, json.RawMessage(`{"derive":{"i":"a + 1","f":"b * 2"},"select":["i","f"]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Result.([]map[string]any)[0]
	want := map[string]any{"i": int64(9007199254740994), "f": 1.0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	if !slices.Equal(res.Columns, []string{"i", "f"}) {
		t.Errorf("columns %q", res.Columns)
	}
}

func TestParseExprErrors(t *testing.T) {
	for _, tc := range []struct{ src, msg string }{
		{"", "at offset 0: expected a number, a field name or ( but found end of expression"},
		{"price *", "at offset 7: expected a number, a field name or ( but found end of expression"},
		{"(a + b", "at offset 6: expected ) but found end of expression"},
		{"a $ b", `at offset 2: unexpected character "$"`},
		{"2x", "at offset 1: unexpected name x"},
		{"a b", "at offset 2: unexpected name b"},
		{")", `at offset 0: expected a number, a field name or ( but found ")"`},
		{"a ** b", `at offset 3: expected a number, a field name or ( but found "*"`},
		{"a % b", `unexpected character "%"`},
		{"$a", `at offset 0: unexpected character "$"; an expression holds numbers`},
		{"1e400", "1e400 is not a finite number"},
		{"unit price", "unexpected name price"},
		{strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), "nested more than 100 deep"},
		{strings.Repeat("-", 200) + "1", "nested more than 100 deep"},
		{strings.Repeat("a+", 3000) + "a", "the limit is 4096"},
	} {
		_, err := parseExpr(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			src := tc.src
			if len(src) > 40 {
				src = src[:40] + "..."
			}
			t.Errorf("parseExpr(%q) = %v, want an error containing %q", src, err, tc.msg)
		}
	}
}

func TestTransformErrors(t *testing.T) {
	runErrorCases(t, []errorCase{
		{"nothing to do", "transform", `{}`, "parameters", "needs at least one of select, rename, derive"},
		{"bad expression", "transform", `{"derive":{"ok":"a","total":"price *"}}`, "parameters.derive.total", `"price *": at offset 7`},
		{"expression not a string", "transform", `{"derive":{"total":3}}`, "parameters.derive.total", "must be a string, not a number"},
		{"derive not an object", "transform", `{"derive":["a+b"]}`, "parameters.derive", "must be an object, not an array"},
		{"derive without a name", "transform", `{"derive":{"":"a"}}`, "parameters.derive.", "needs a name"},
		{"rename to the same name twice", "transform", `{"rename":{"a":"x","b":"x"}}`, "parameters.rename.b", `renames to "x", as "a" does`},
		{"rename to a number", "transform", `{"rename":{"a":1}}`, "parameters.rename.a", "must be a string"},
		{"rename to nothing", "transform", `{"rename":{"a":""}}`, "parameters.rename.a", "must not be empty"},
		{"select not a list", "transform", `{"select":"a"}`, "parameters.select", "must be an array"},
		{"select of a number", "transform", `{"select":["a",1]}`, "parameters.select[1]", "must be a non-empty string, not 1"},
		{"unknown parameter", "transform", `{"selected":["a"]}`, "parameters.selected", "want select, rename, derive"},
		{"rename of a field not selected", "transform", `{"select":["id"],"rename":{"amount":"price"}}`, "parameters.rename.amount",
			`"amount" is not selected; select picks the fields before rename renames them, so add "amount" to select`},
		{"derive by an old name", "transform", `{"rename":{"amount":"price"},"derive":{"total":"amount * qty"}}`, "parameters.derive.total",
			`"amount" is renamed to "price"; an expression sees the renamed row, so write "price"`},
		{"derive by an old name, nested", "transform", `{"rename":{"c":"customer"},"derive":{"n":"c.n + 1"}}`, "parameters.derive.n", `"c" is renamed to "customer"`},
	})
}

// TestTransformOrder checks the order select, rename, derive against
// arithmetic done here: select picks source fields (amount, not price),
// rename renames them, derive sees the renamed row (price) including fields
// select left out (qty, discount), and derived fields are kept.
func TestTransformOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	type sale struct{ amount, qty, discount int64 }
	sales := make([]sale, 200)
	rows := make([]map[string]any, len(sales))
	for i := range sales {
		s := sale{amount: rng.Int64N(100_000), qty: 1 + rng.Int64N(20)}
		s.discount = rng.Int64N(s.amount + 1)
		sales[i] = s
		rows[i] = map[string]any{"id": json.Number(strconv.Itoa(i)), "amount": json.Number(strconv.FormatInt(s.amount, 10)),
			"qty": json.Number(strconv.FormatInt(s.qty, 10)), "discount": json.Number(strconv.FormatInt(s.discount, 10)), "note": "x"}
	}
	res, err := Run("transform", rows, json.RawMessage(`{"select":["id","amount"],"rename":{"amount":"price"},
		"derive":{"total":"price * qty","net":"(price - discount) * qty","unit":"total_in / qty"}}`))
	if err == nil {
		t.Fatalf("a derived field used by another derived field was accepted: %v", res.Result)
	}
	res, err = Run("transform", rows, json.RawMessage(`{"select":["id","amount"],"rename":{"amount":"price"},
		"derive":{"total":"price * qty","net":"(price - discount) * qty","half":"price / 2"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"id", "price", "half", "net", "total"}; !slices.Equal(res.Columns, want) {
		t.Errorf("columns %q, want %q", res.Columns, want)
	}
	for i, got := range res.Result.([]map[string]any) {
		s := sales[i]
		want := map[string]any{
			"id":    json.Number(strconv.Itoa(i)),
			"price": json.Number(strconv.FormatInt(s.amount, 10)),
			"total": s.amount * s.qty,
			"net":   (s.amount - s.discount) * s.qty,
		}
		if s.amount%2 == 0 {
			want["half"] = s.amount / 2
		} else {
			want["half"] = float64(s.amount) / 2
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("row %d = %#v, want %#v", i, got, want)
		}
	}
}
