package codegen

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// object is a JSON object with its keys exactly as written: encoding/json
// matches struct fields case-insensitively, and a schema keyword must not.
type object map[string]json.RawMessage

// parseObject reads raw as a JSON object; ok is false for anything else.
func parseObject(raw json.RawMessage) (o object, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, false
	}
	return o, true
}

// get returns the value of key, or nil when it is absent or null.
func (o object) get(key string) json.RawMessage {
	v := o[key]
	if string(v) == "null" {
		return nil
	}
	return v
}

// str returns the value of key when it is a string, else "".
func (o object) str(key string) string {
	var s string
	if v := o.get(key); v != nil && json.Unmarshal(v, &s) == nil {
		return s
	}
	return ""
}

// array returns the elements of key's value when it is an array.
func (o object) array(key string) ([]json.RawMessage, bool) {
	v := o.get(key)
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	var a []json.RawMessage
	if json.Unmarshal(v, &a) != nil {
		return nil, false
	}
	return a, true
}

// member is one key and value of a JSON object, in the order written.
type member struct {
	key string
	val json.RawMessage
}

// members reads a JSON object keeping its keys' order, which is the order of
// a tool's parameters. A key written twice keeps its first place and its
// last value, as encoding/json would decode it.
func members(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	at := make(map[string]int)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := tok.(string)
		if !ok {
			return nil, false
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, false
		}
		if i, dup := at[key]; dup {
			out[i].val = val
			continue
		}
		at[key] = len(out)
		out = append(out, member{key, val})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	return out, true
}

// typeNames returns the names of a schema's "type", which is one name or a
// list of them; entries that are not strings are left out.
func typeNames(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		return nil
	}
	var names []string
	for _, m := range many {
		if json.Unmarshal(m, &one) == nil {
			names = append(names, one)
		}
	}
	return names
}

// Limits on what becomes a type hint or a default, so that a hostile or
// enormous schema gives a readable signature rather than a huge one.
const (
	maxHintDepth = 6  // nesting of list[...] and unions; deeper is Any
	maxEnum      = 16 // values of an enum spelled out as a Literal
	maxLiteral   = 80 // length of one literal in a hint or a default
)

// hintSet is a type hint being built: the alternatives of a union, with the
// Literal values gathered into one Literal.
type hintSet struct {
	any   bool
	lits  []string // Python literals inside Literal[...]
	types []string // other alternatives, in order
}

func (h *hintSet) addType(t string) {
	if t == "Any" {
		h.any = true
	}
	if !slices.Contains(h.types, t) {
		h.types = append(h.types, t)
	}
}

func (h *hintSet) addLiteral(lit string) {
	if !slices.Contains(h.lits, lit) {
		h.lits = append(h.lits, lit)
	}
}

func (h *hintSet) merge(o hintSet) {
	h.any = h.any || o.any
	for _, l := range o.lits {
		h.addLiteral(l)
	}
	for _, t := range o.types {
		h.addType(t)
	}
}

// String formats the hint: "Any" when any alternative is unknown, else the
// alternatives joined with "|", Literal first and None last.
func (h hintSet) String() string {
	if h.any || len(h.lits) == 0 && len(h.types) == 0 {
		return "Any"
	}
	var parts []string
	if len(h.lits) > 0 {
		parts = append(parts, "Literal["+strings.Join(h.lits, ", ")+"]")
	}
	none := false
	for _, t := range h.types {
		if t == "None" {
			none = true
			continue
		}
		parts = append(parts, t)
	}
	if none {
		parts = append(parts, "None")
	}
	return strings.Join(parts, " | ")
}

// hint returns the Python type hint of a JSON Schema.
func hint(raw json.RawMessage) string { return hintOf(raw, 0).String() }

// hintOf hints a schema at the given nesting depth.
func hintOf(raw json.RawMessage, depth int) hintSet {
	o, ok := parseObject(raw)
	if !ok || depth > maxHintDepth || o.get("$ref") != nil {
		return hintSet{any: true}
	}
	h := objectHint(o, depth)
	if string(o.get("nullable")) == "true" {
		h.addType("None") // OpenAPI's way of saying "or null"
	}
	return h
}

// objectHint hints a schema that is a JSON object.
func objectHint(o object, depth int) hintSet {
	if values, ok := o.array("enum"); ok && len(values) > 0 {
		return enumHint(values)
	}
	if c := o["const"]; c != nil {
		return enumHint([]json.RawMessage{c})
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, ok := o.array(key)
		if !ok || len(alts) == 0 {
			continue
		}
		var u hintSet
		for _, a := range alts {
			u.merge(hintOf(a, depth+1))
		}
		// A union of unknowns says less than the schema's own "type", if
		// it has one (anyOf is often used to add formats or patterns).
		if !u.any || o.get("type") == nil {
			return u
		}
	}
	if all, ok := o.array("allOf"); ok && len(all) == 1 && o.get("type") == nil {
		return hintOf(all[0], depth+1)
	}
	names := typeNames(o.get("type"))
	if len(names) == 0 {
		switch {
		case o.get("properties") != nil:
			names = []string{"object"}
		case o.get("items") != nil:
			names = []string{"array"}
		}
	}
	if len(names) == 0 {
		return hintSet{any: true}
	}
	var h hintSet
	for _, n := range names {
		switch n {
		case "string":
			h.addType("str")
		case "integer":
			h.addType("int")
		case "number":
			h.addType("float")
		case "boolean":
			h.addType("bool")
		case "null":
			h.addType("None")
		case "object":
			h.addType("dict[str, Any]")
		case "array":
			item := "Any"
			if items := o.get("items"); len(items) > 0 && items[0] == '{' {
				item = hintOf(items, depth+1).String()
			}
			h.addType("list[" + item + "]")
		default:
			h.any = true
		}
	}
	return h
}

// enumHint hints the values of an enum or a const: a Literal of them when
// Python's Literal can hold them all (strings, integers, booleans, None) and
// there are few enough, else the union of their types.
func enumHint(values []json.RawMessage) hintSet {
	var h hintSet
	lits := len(values) <= maxEnum
	for _, v := range values {
		if lit, ok := pyScalar(v, maxLiteral); !ok || isFloat(lit) {
			lits = false
			break
		}
	}
	for _, v := range values {
		if lits {
			lit, _ := pyScalar(v, maxLiteral)
			if lit == "None" {
				h.addType("None")
			} else {
				h.addLiteral(lit)
			}
			continue
		}
		h.addType(jsonType(v))
	}
	return h
}

// jsonType returns the Python type of a JSON value.
func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "Any"
	}
	switch c := v[0]; {
	case c == '"':
		return "str"
	case c == 't' || c == 'f':
		return "bool"
	case c == 'n':
		return "None"
	case c == '{':
		return "dict[str, Any]"
	case c == '[':
		return "list[Any]"
	case isFloat(string(v)):
		return "float"
	}
	return "int"
}

// isFloat reports whether a JSON number's text is not an integer's.
func isFloat(num string) bool {
	return (num[0] == '-' || num[0] >= '0' && num[0] <= '9') && strings.ContainsAny(num, ".eE")
}

// pyScalar returns a JSON scalar (string, number, boolean or null) as a
// Python literal of at most max bytes; ok is false for arrays, objects and
// anything longer. The length bound also keeps integers far below the 4300
// digits Python refuses to compile.
func pyScalar(raw json.RawMessage, max int) (lit string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == 'n':
		lit = "None"
	case c == 't':
		lit = "True"
	case c == 'f':
		lit = "False"
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		lit = pyString(s)
	case c == '-' || c >= '0' && c <= '9':
		// JSON's number syntax is a subset of Python's literal syntax
		// (with unary minus), and the text was validated when the
		// schema was decoded.
		lit = string(raw)
	default:
		return "", false
	}
	return lit, len(lit) <= max
}

// compactJSON returns raw on one line, for documenting a value.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return oneLine(string(raw))
	}
	return b.String()
}
