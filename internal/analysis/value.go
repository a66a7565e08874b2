package analysis

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// number is a numeric value: an exact int64, or a float64 that is never NaN.
type number struct {
	i     int64
	f     float64
	isInt bool
}

func intNum(i int64) number     { return number{i: i, isInt: true} }
func floatNum(f float64) number { return number{f: f} }

// float is n as a float64 (rounded for integers beyond 2^53).
func (n number) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

// value is n as a JSON-ready Go value: int64, float64, or nil when the float
// is not finite (JSON has no NaN or Inf).
func (n number) value() any {
	if n.isInt {
		return n.i
	}
	return finite(n.f)
}

// finite is f, or nil when f is NaN or infinite.
func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

// two63 is 2^63 as a float64; int64 covers [-two63, two63).
const two63 = 9223372036854775808.0

// cmpNumbers orders two numbers exactly, even an int64 against a float64.
func cmpNumbers(a, b number) int {
	switch {
	case a.isInt && b.isInt:
		return cmpOrdered(a.i, b.i)
	case !a.isInt && !b.isInt:
		return cmpOrdered(a.f, b.f)
	case a.isInt:
		return cmpIntFloat(a.i, b.f)
	default:
		return -cmpIntFloat(b.i, a.f)
	}
}

// cmpIntFloat compares i with f without rounding i. If f is integral and in
// int64's range the comparison is between integers; otherwise f is either
// out of range or has a fraction, so |f| < 2^52 and float64(i) cannot equal
// it.
func cmpIntFloat(i int64, f float64) int {
	switch {
	case f >= two63:
		return -1
	case f < -two63:
		return 1
	case f == math.Trunc(f):
		return cmpOrdered(i, int64(f))
	default:
		return cmpOrdered(float64(i), f)
	}
}

func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseNumber reads the text of a JSON number: integers that fit an int64
// exactly, anything else as a float64.
func parseNumber(s string) (number, bool) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return intNum(i), true
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) {
		return number{}, false
	}
	return floatNum(f), true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// isJSONNumber reports whether s is exactly a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// asNumber is v as a number if v is one: a json.Number, a Go integer or a
// non-NaN float. With coerce, a string that is a JSON number counts too.
func asNumber(v any, coerce bool) (number, bool) {
	switch x := v.(type) {
	case json.Number:
		return parseNumber(string(x))
	case float64:
		if math.IsNaN(x) {
			return number{}, false
		}
		return floatNum(x), true
	case float32:
		if math.IsNaN(float64(x)) {
			return number{}, false
		}
		return floatNum(float64(x)), true
	case int:
		return intNum(int64(x)), true
	case int64:
		return intNum(x), true
	case int32:
		return intNum(int64(x)), true
	case string:
		if coerce && isJSONNumber(x) {
			return parseNumber(x)
		}
	}
	return number{}, false
}

// isNumberValue reports whether v is of a numeric type (NaN included: it is a
// number to the type rule, though it compares with nothing).
func isNumberValue(v any) bool {
	switch v.(type) {
	case json.Number, float64, float32, int, int64, int32:
		return true
	}
	return false
}

// equal is the equality of == and of in, enum and contains on arrays.
func equal(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if isNumberValue(a) || isNumberValue(b) {
		x, ok1 := asNumber(a, true)
		y, ok2 := asNumber(b, true)
		return ok1 && ok2 && cmpNumbers(x, y) == 0
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equal)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// order compares a with b for the ordering operators: numerically if either
// is a number, as text if both are strings; ok is false when they do not
// order.
func order(a, b any) (c int, ok bool) {
	if isNumberValue(a) || isNumberValue(b) {
		x, ok1 := asNumber(a, true)
		y, ok2 := asNumber(b, true)
		if !ok1 || !ok2 {
			return 0, false
		}
		return cmpNumbers(x, y), true
	}
	x, ok1 := a.(string)
	y, ok2 := b.(string)
	if !ok1 || !ok2 {
		return 0, false
	}
	return strings.Compare(x, y), true
}

// text is the text the string operators see: a string itself, a number as
// its JSON text.
func text(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return string(x), true
	case float64, float32, int, int64, int32:
		b, err := json.Marshal(x)
		if err != nil { // NaN or Inf
			return "", false
		}
		return string(b), true
	}
	return "", false
}

// typeName is the JSON type of v, for messages and the type rule.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	if isNumberValue(v) {
		return "number"
	}
	return "unknown"
}

// appendKey appends a canonical encoding of v to buf: values that group
// together (equal, with strings never coerced) get the same key.
func appendKey(buf []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(buf, 'z')
	case bool:
		if x {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case string:
		buf = append(buf, 's')
		buf = strconv.AppendInt(buf, int64(len(x)), 10)
		buf = append(buf, ':')
		return append(buf, x...)
	case []any:
		buf = append(buf, '[')
		for _, e := range x {
			buf = appendKey(buf, e)
		}
		return append(buf, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for _, k := range keys {
			buf = appendKey(buf, k)
			buf = appendKey(buf, x[k])
		}
		return append(buf, '}')
	}
	n, ok := asNumber(v, false)
	switch {
	case !ok:
		return append(buf, 'N') // NaN, or a type JSON does not produce
	case n.isInt:
		buf = append(buf, 'n')
		buf = strconv.AppendInt(buf, n.i, 10)
	case n.f == math.Trunc(n.f) && n.f >= -two63 && n.f < two63:
		buf = append(buf, 'n') // 2.0 groups with 2
		buf = strconv.AppendInt(buf, int64(n.f), 10)
	default:
		buf = append(buf, 'n')
		buf = strconv.AppendFloat(buf, n.f, 'g', -1, 64)
	}
	return append(buf, ';')
}

// path is a compiled field reference.
type path struct {
	raw   string
	parts []string // nil when raw has no dots
}

func newPath(raw string) path {
	p := path{raw: raw}
	if strings.Contains(raw, ".") {
		p.parts = strings.Split(raw, ".")
	}
	return p
}

// get is the value at p in row, or nil; present tells a missing field from a
// null one.
func (p path) get(row map[string]any) (v any, present bool) {
	if v, ok := row[p.raw]; ok || p.parts == nil {
		return v, ok
	}
	var cur any = row
	for _, part := range p.parts {
		switch c := cur.(type) {
		case map[string]any:
			if cur, present = c[part]; !present {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
