package codegen

import (
	"encoding/json"
	"strings"
)

// Bounds of the nested fields a docstring lists, so that a huge schema gives
// a readable docstring.
const (
	maxNestedFields = 20 // per object
	maxNestedDepth  = 3  // objects within objects
	maxFieldDoc     = 200
)

// nestedFields returns the properties and required names of the object a
// schema describes, or of its array's items (then items is true), or no
// properties. An anyOf or oneOf of one object and null counts as the object.
func nestedFields(raw json.RawMessage) (props []member, required map[string]bool, items bool) {
	o, ok := parseObject(raw)
	if !ok {
		return nil, nil, false
	}
	o = nonNull(o)
	if it := o.get("items"); it != nil && (o.get("type") == nil || strings.Contains(string(o.get("type")), "array")) {
		p, r, _ := nestedFields(it)
		return p, r, len(p) > 0
	}
	p, ok := members(o.get("properties"))
	if !ok {
		return nil, nil, false
	}
	required = map[string]bool{}
	if req, ok := o.array("required"); ok {
		for _, r := range req {
			var name string
			if json.Unmarshal(r, &name) == nil {
				required[name] = true
			}
		}
	}
	return p, required, false
}

// nonNull is the one alternative of an anyOf or oneOf that is not null (as
// Zod's optional and nullable objects come), else o.
func nonNull(o object) object {
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, ok := o.array(key)
		if !ok {
			continue
		}
		var found object
		for _, a := range alts {
			ao, ok := parseObject(a)
			if !ok {
				return o
			}
			if ao.str("type") == "null" {
				continue
			}
			if found != nil {
				return o
			}
			found = ao
		}
		if found != nil {
			return found
		}
	}
	return o
}

// fieldsDoc describes the fields of the objects a schema holds (an object's
// properties, or an array's items'), one line each with its type hint,
// whether it is required, and its description, nested objects indented
// below their field. It returns "" when the schema holds no such object.
// The type hints alone say dict[str, Any], which leaves the model guessing
// the names of the fields (memory's create_entities: name, entityType,
// observations).
func fieldsDoc(raw json.RawMessage, prefix string, depth int) string {
	props, required, items := nestedFields(raw)
	if len(props) == 0 || depth > maxNestedDepth {
		return ""
	}
	var b strings.Builder
	if items {
		b.WriteString(prefix + "Each item has the fields:\n")
	} else {
		b.WriteString(prefix + "Fields:\n")
	}
	for i, m := range props {
		if i == maxNestedFields {
			b.WriteString(prefix + "    …\n")
			break
		}
		line := oneLine(m.key) + ": " + hint(m.val)
		if required[m.key] {
			line += ", required"
		}
		if s, ok := parseObject(m.val); ok {
			desc := oneLine(nonNull(s).str("description"))
			if desc == "" {
				desc = oneLine(s.str("description"))
			}
			if desc != "" {
				line += ". " + truncate(desc, maxFieldDoc)
			}
		}
		b.WriteString(prefix + "    " + line + "\n")
		b.WriteString(fieldsDoc(m.val, prefix+"        ", depth+1))
	}
	return b.String()
}
