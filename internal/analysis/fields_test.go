package analysis

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const sales = `[
 {"id":1,"region":"north","amount":10,"qty":2,"customer":{"address":{"city":"Oslo"}}},
 {"id":2,"region":"south","amount":5,"qty":1,"note":null}
]`

func TestUnknownField(t *testing.T) {
	rows := rowsOf(t, sales)
	for _, tc := range []struct {
		name, kind, params string
		path               string
		msg                []string // parts of the message, in order
	}{
		{"group_by typo", "aggregate", `{"group_by":["regoin"],"metrics":[{"op":"count"}]}`, "parameters.group_by[0]",
			[]string{`no row has the field "regoin"; fields seen, nearest first: region, `}},
		{"metric field in the wrong case", "aggregate", `{"metrics":[{"field":"Amount","op":"sum"}]}`, "parameters.metrics[0].field",
			[]string{`no row has the field "Amount"; fields seen, nearest first: amount, `, "(names are case-sensitive)"}},
		{"filter field", "filter", `{"conditions":[{"field":"id","operator":">","value":0},{"field":"Amount","operator":">","value":1}]}`, "parameters.conditions[1].field",
			[]string{`"Amount"`, "nearest first: amount", "the exists operator matches rows without a field"}},
		{"nested path typo", "filter", `{"conditions":[{"field":"customer.adress.city","operator":"==","value":"Oslo"}]}`, "parameters.conditions[0].field",
			[]string{"nearest first: customer.address.city, "}},
		{"a nested field by its last name", "filter", `{"conditions":[{"field":"city","operator":"==","value":"Oslo"}]}`, "parameters.conditions[0].field",
			[]string{"nearest first: customer.address.city, "}},
		{"validate type", "validate", `{"rules":[{"field":"qty","rule":"required"},{"field":"qtty","rule":"type","value":"integer"}]}`, "parameters.rules[1].field",
			[]string{`"qtty"`, "nearest first: qty, ", "the required rule reports rows without a field"}},
		{"transform select", "transform", `{"select":["id","regoin"]}`, "parameters.select[1]",
			[]string{`"regoin"`, "region", "select names fields as the input has them, before rename"}},
		{"transform rename", "transform", `{"rename":{"amont":"price"}}`, "parameters.rename.amont", []string{"nearest first: amount, "}},
		{"transform derive sees renamed names", "transform", `{"rename":{"amount":"price"},"derive":{"total":"prise * qty"}}`, "parameters.derive.total",
			[]string{`"prise"`, "nearest first: price, "}},
		{"transform derive of a derived field", "transform", `{"derive":{"total":"amount * qty","twice":"total * 2"}}`, "parameters.derive.twice",
			[]string{`"total"`, "not other derived fields"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(tc.kind, rows, json.RawMessage(tc.params))
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParamError", err)
			}
			if pe.Path != tc.path {
				t.Errorf("path %q, want %q (%s)", pe.Path, tc.path, pe.Msg)
			}
			rest := pe.Msg
			for _, m := range tc.msg {
				i := strings.Index(rest, m)
				if i < 0 {
					t.Fatalf("message %q lacks %q (in order)", pe.Msg, m)
				}
				rest = rest[i+len(m):]
			}
		})
	}
}

// TestKnownFields: a field some row has, even as null, is not refused;
// validate's required rule and filter's exists are about absent fields; with
// no rows there is nothing to check against.
func TestKnownFields(t *testing.T) {
	rows := rowsOf(t, sales)
	for _, tc := range []struct {
		kind, params, want string
	}{
		{"filter", `{"conditions":[{"field":"note","operator":"==","value":null}]}`, `2 rows`},
		{"filter", `{"conditions":[{"field":"deleted","operator":"exists","value":false}]}`, `2 rows`},
		{"validate", `{"rules":[{"field":"email","rule":"required"}]}`, `{"valid":false,"violations":[{"row":0,"field":"email","rule":"required","message":"is missing"},{"row":1,"field":"email","rule":"required","message":"is missing"}],"violation_count":2}`},
		{"aggregate", `{"group_by":["customer.address.city"],"metrics":[{"op":"count"}]}`, `[{"customer.address.city":"Oslo","count":1},{"customer.address.city":null,"count":1}]`},
	} {
		res, err := Run(tc.kind, rows, json.RawMessage(tc.params))
		if err != nil {
			t.Errorf("%s %s: %v", tc.kind, tc.params, err)
			continue
		}
		if tc.want == "2 rows" {
			if res.RowsOut != 2 {
				t.Errorf("%s %s: %d rows, want 2", tc.kind, tc.params, res.RowsOut)
			}
			continue
		}
		sameJSON(t, res.Result, tc.want)
	}
	if _, err := Run("aggregate", nil, json.RawMessage(`{"group_by":["regoin"],"metrics":[{"op":"count"}]}`)); err != nil {
		t.Errorf("no rows: %v", err)
	}
}
