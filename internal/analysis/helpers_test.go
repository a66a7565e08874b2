package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// rowsOf decodes a JSON array of objects as the loaders do (json.Number).
func rowsOf(t testing.TB, src string) []map[string]any {
	t.Helper()
	rows, err := LoadJSON(strings.NewReader(src), "")
	if err != nil {
		t.Fatalf("rows %s: %v", src, err)
	}
	return rows
}

// ids are the "id" fields of rows, for filter expectations.
func ids(t testing.TB, res Result) []string {
	t.Helper()
	rows, ok := res.Result.([]map[string]any)
	if !ok {
		t.Fatalf("result is %T, want rows", res.Result)
	}
	out := []string{}
	for _, r := range rows {
		out = append(out, fmt.Sprint(r["id"]))
	}
	return out
}

// sameJSON compares got (marshalled) with the JSON want: integers exactly,
// other numbers to a relative 1e-12.
func sameJSON(t testing.TB, got any, want string) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("marshal %v: %v", got, err)
	}
	g, w := decodeNumbers(t, b), decodeNumbers(t, []byte(want))
	if diff := jsonDiff("", g, w); diff != "" {
		t.Errorf("got  %s\nwant %s\n%s", b, want, diff)
	}
}

func decodeNumbers(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func jsonDiff(at string, g, w any) string {
	switch w := w.(type) {
	case json.Number:
		gn, ok := g.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: got %v, want %v", at, g, w)
		}
		if gi, err1 := gn.Int64(); err1 == nil {
			if wi, err2 := w.Int64(); err2 == nil {
				if gi != wi {
					return fmt.Sprintf("%s: got %d, want %d", at, gi, wi)
				}
				return ""
			}
		}
		gf, _ := gn.Float64()
		wf, _ := w.Float64()
		if math.Abs(gf-wf) > 1e-12*math.Max(1, math.Abs(wf)) {
			return fmt.Sprintf("%s: got %v, want %v", at, gf, wf)
		}
		return ""
	case []any:
		gl, ok := g.([]any)
		if !ok || len(gl) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", at, g, w)
		}
		for i := range w {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", at, i), gl[i], w[i]); d != "" {
				return d
			}
		}
		return ""
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok || len(gm) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", at, g, w)
		}
		for k := range w {
			gv, ok := gm[k]
			if !ok {
				return fmt.Sprintf("%s.%s: missing", at, k)
			}
			if d := jsonDiff(at+"."+k, gv, w[k]); d != "" {
				return d
			}
		}
		return ""
	}
	if g != w {
		return fmt.Sprintf("%s: got %#v, want %#v", at, g, w)
	}
	return ""
}

// errorCase is a bad parameter and where the error must point.
type errorCase struct {
	name, kind, params string
	path               string // ParamError.Path
	msg                string // a part of ParamError.Msg
}

func runErrorCases(t *testing.T, cases []errorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(tc.kind, nil, json.RawMessage(tc.params))
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("Run(%s, %s) = %v, want a *ParamError", tc.kind, tc.params, err)
			}
			if pe.Path != tc.path || !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("Run(%s, %s) = %q; want path %q and a message containing %q", tc.kind, tc.params, err, tc.path, tc.msg)
			}
		})
	}
}
