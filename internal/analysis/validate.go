package analysis

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// Rules lists the validate rules.
var Rules = []string{"required", "type", "min", "max", "regex", "enum", "unique"}

// Types lists the types of the type rule.
var Types = []string{"string", "number", "integer", "boolean", "object", "array"}

// MaxViolations bounds the violations a validate result lists; the count
// covers all of them.
const MaxViolations = 1000

// ValidateResult is the result of validate.
type ValidateResult struct {
	Valid          bool        `json:"valid"`
	Violations     []Violation `json:"violations"`
	ViolationCount int         `json:"violation_count"`
}

// Violation is one rule broken by one row.
type Violation struct {
	Row     int    `json:"row"`
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

type rule struct {
	field path
	at    string // where the parameters name the field
	rule  string
	typ   string
	bound number
	re    *regexp.Regexp
	enum  []any
}

type validate struct{ rules []rule }

func compileValidate(o obj) (*validate, error) {
	if err := o.only("rules"); err != nil {
		return nil, err
	}
	list, err := o.list("rules", true)
	if err != nil {
		return nil, err
	}
	v := &validate{}
	for i := range list {
		r, err := o.elem("rules", list, i)
		if err != nil {
			return nil, err
		}
		if err := r.only("field", "rule", "value"); err != nil {
			return nil, err
		}
		field, err := r.field("field", true)
		if err != nil {
			return nil, err
		}
		name, err := r.str("rule", true)
		if err != nil {
			return nil, err
		}
		ru := rule{field: newPath(field), at: r.at("field"), rule: name}
		val := r.m["value"]
		switch name {
		case "required", "unique":
		case "type":
			s, _ := val.(string)
			if !slices.Contains(Types, s) {
				return nil, paramErr(r.at("value"), "%s is not one of %s", describe(val), strings.Join(Types, ", "))
			}
			ru.typ = s
		case "min", "max":
			n, ok := asNumber(val, false)
			if !ok {
				return nil, paramErr(r.at("value"), "must be a number for %s, not %s", name, describe(val))
			}
			ru.bound = n
		case "regex":
			s, ok := val.(string)
			if !ok {
				return nil, paramErr(r.at("value"), "must be a string (a regular expression) for regex, not %s", describe(val))
			}
			if ru.re, err = regexp.Compile(s); err != nil {
				return nil, paramErr(r.at("value"), "is not a valid regular expression for field %q: %v", field, err)
			}
		case "enum":
			l, ok := val.([]any)
			if !ok {
				return nil, paramErr(r.at("value"), "must be an array of the allowed values, not %s", describe(val))
			}
			ru.enum = l
		default:
			return nil, paramErr(r.at("rule"), "%q is not one of %s", name, strings.Join(Rules, ", "))
		}
		v.rules = append(v.rules, ru)
	}
	return v, nil
}

// fields are the fields of the rules but required, which is there to report
// rows without a field.
func (v *validate) fieldRefs() []fieldRef {
	var refs []fieldRef
	for _, r := range v.rules {
		if r.rule != "required" {
			refs = append(refs, fieldRef{p: r.field, at: r.at, hint: "the required rule reports rows without a field"})
		}
	}
	return refs
}

func (v *validate) Run(rows []map[string]any) Result {
	res := ValidateResult{Violations: []Violation{}}
	firstSeen := make([]map[string]int, len(v.rules)) // unique: value key -> first row
	for i, r := range v.rules {
		if r.rule == "unique" {
			firstSeen[i] = map[string]int{}
		}
	}
	var buf []byte
	clean := 0
	for ri, row := range rows {
		before := res.ViolationCount
		for i := range v.rules {
			r := &v.rules[i]
			val, present := r.field.get(row)
			var msg string
			if r.rule == "unique" && val != nil {
				buf = appendKey(buf[:0], val)
				if first, dup := firstSeen[i][string(buf)]; dup {
					msg = fmt.Sprintf("%s duplicates row %d", describe(val), first)
				} else {
					firstSeen[i][string(buf)] = ri
				}
			} else {
				msg = r.check(val, present)
			}
			if msg == "" {
				continue
			}
			res.ViolationCount++
			if len(res.Violations) < MaxViolations {
				res.Violations = append(res.Violations, Violation{Row: ri, Field: r.field.raw, Rule: r.rule, Message: msg})
			}
		}
		if res.ViolationCount == before {
			clean++
		}
	}
	res.Valid = res.ViolationCount == 0
	return Result{Result: res, RowsIn: len(rows), RowsOut: clean}
}

// check is the message of a violation of r by v, or "".
func (r *rule) check(v any, present bool) string {
	if v == nil {
		switch {
		case r.rule != "required":
			return ""
		case present:
			return "is null"
		}
		return "is missing"
	}
	switch r.rule {
	case "type":
		t := typeName(v)
		if t == r.typ {
			return ""
		}
		if r.typ == "integer" && t == "number" {
			if n, ok := asNumber(v, false); ok && (n.isInt || n.f == math.Trunc(n.f) && !math.IsInf(n.f, 0)) {
				return ""
			}
			return fmt.Sprintf("%s is not an integer", describe(v))
		}
		return fmt.Sprintf("is %s, not %s", article(t), article(r.typ))
	case "min", "max":
		n, ok := asNumber(v, true)
		if !ok {
			return fmt.Sprintf("%s is not a number", describe(v))
		}
		c := cmpNumbers(n, r.bound)
		if r.rule == "min" && c < 0 {
			return fmt.Sprintf("%s is less than the minimum %s", describe(v), describe(r.bound.value()))
		}
		if r.rule == "max" && c > 0 {
			return fmt.Sprintf("%s is more than the maximum %s", describe(v), describe(r.bound.value()))
		}
	case "regex":
		s, ok := text(v)
		if !ok {
			return fmt.Sprintf("is %s, not a string", article(typeName(v)))
		}
		if !r.re.MatchString(s) {
			return fmt.Sprintf("%s does not match %s", describe(v), r.re)
		}
	case "enum":
		if !slices.ContainsFunc(r.enum, func(x any) bool { return equal(v, x) }) {
			return fmt.Sprintf("%s is not one of %s", describe(v), describe(r.enum))
		}
	}
	return ""
}
