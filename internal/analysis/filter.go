package analysis

import (
	"regexp"
	"slices"
	"strings"
)

// Operators lists the filter operators.
var Operators = []string{"==", "!=", ">", ">=", "<", "<=", "in", "not_in", "contains", "startswith", "endswith", "regex", "exists"}

type condition struct {
	field path
	at    string // where the parameters name the field
	op    string
	value any
	list  []any          // in, not_in
	re    *regexp.Regexp // regex
	want  bool           // exists
}

type filter struct {
	conds []condition
	or    bool
	limit int // 0: none
}

func compileFilter(o obj) (*filter, error) {
	if err := o.only("conditions", "logic", "limit"); err != nil {
		return nil, err
	}
	f := &filter{}
	logic, err := o.str("logic", false)
	if err != nil {
		return nil, err
	}
	switch strings.ToUpper(logic) {
	case "", "AND":
	case "OR":
		f.or = true
	default:
		return nil, paramErr(o.at("logic"), "%q is not one of AND, OR", logic)
	}
	if f.limit, err = o.positiveInt("limit"); err != nil {
		return nil, err
	}
	list, err := o.list("conditions", true)
	if err != nil {
		return nil, err
	}
	for i := range list {
		c, err := o.elem("conditions", list, i)
		if err != nil {
			return nil, err
		}
		cond, err := compileCondition(c)
		if err != nil {
			return nil, err
		}
		f.conds = append(f.conds, cond)
	}
	return f, nil
}

func compileCondition(c obj) (condition, error) {
	if err := c.only("field", "operator", "value"); err != nil {
		return condition{}, err
	}
	field, err := c.field("field", true)
	if err != nil {
		return condition{}, err
	}
	op, err := c.str("operator", true)
	if err != nil {
		return condition{}, err
	}
	cond := condition{field: newPath(field), at: c.at("field"), op: op, value: c.m["value"]}
	_, hasValue := c.m["value"]
	v := cond.value
	switch op {
	case "==", "!=":
		if !hasValue {
			return cond, paramErr(c.at("value"), "is required for %s (use null to compare with null)", op)
		}
	case ">", ">=", "<", "<=":
		if _, isStr := v.(string); !isStr && !isNumberValue(v) {
			return cond, paramErr(c.at("value"), "must be a number or a string for %s, not %s", op, describe(v))
		}
	case "in", "not_in":
		l, ok := v.([]any)
		if !ok {
			return cond, paramErr(c.at("value"), "must be an array for %s, not %s", op, describe(v))
		}
		cond.list = l
	case "contains":
		if !hasValue || v == nil {
			return cond, paramErr(c.at("value"), "is required for contains")
		}
	case "startswith", "endswith":
		if _, ok := v.(string); !ok {
			return cond, paramErr(c.at("value"), "must be a string for %s, not %s", op, describe(v))
		}
	case "regex":
		s, ok := v.(string)
		if !ok {
			return cond, paramErr(c.at("value"), "must be a string (a regular expression) for regex, not %s", describe(v))
		}
		if cond.re, err = regexp.Compile(s); err != nil {
			return cond, paramErr(c.at("value"), "is not a valid regular expression for field %q: %v", field, err)
		}
	case "exists":
		cond.want = true
		if hasValue && v != nil {
			b, ok := v.(bool)
			if !ok {
				return cond, paramErr(c.at("value"), "must be true or false for exists, not %s", describe(v))
			}
			cond.want = b
		}
	default:
		return cond, paramErr(c.at("operator"), "%q is not one of %s", op, strings.Join(Operators, ", "))
	}
	return cond, nil
}

// fields are the fields of the conditions but exists, whose point is that a
// field may be absent.
func (f *filter) fieldRefs() []fieldRef {
	var refs []fieldRef
	for _, c := range f.conds {
		if c.op != "exists" {
			refs = append(refs, fieldRef{p: c.field, at: c.at, hint: "the exists operator matches rows without a field"})
		}
	}
	return refs
}

func (f *filter) Run(rows []map[string]any) Result {
	out := []map[string]any{}
	for _, row := range rows {
		if f.match(row) {
			out = append(out, row)
			if len(out) == f.limit {
				break
			}
		}
	}
	return Result{Result: out, RowsIn: len(rows), RowsOut: len(out)}
}

func (f *filter) match(row map[string]any) bool {
	for i := range f.conds {
		if f.conds[i].match(row) == f.or {
			return f.or
		}
	}
	return !f.or
}

func (c *condition) match(row map[string]any) bool {
	v, _ := c.field.get(row)
	switch c.op {
	case "==":
		return equal(v, c.value)
	case "!=":
		return !equal(v, c.value)
	case ">", ">=", "<", "<=":
		if v == nil {
			return false
		}
		r, ok := order(v, c.value)
		if !ok {
			return false
		}
		switch c.op {
		case ">":
			return r > 0
		case ">=":
			return r >= 0
		case "<":
			return r < 0
		}
		return r <= 0
	case "in":
		return slices.ContainsFunc(c.list, func(x any) bool { return equal(v, x) })
	case "not_in":
		return !slices.ContainsFunc(c.list, func(x any) bool { return equal(v, x) })
	case "contains":
		if l, ok := v.([]any); ok {
			return slices.ContainsFunc(l, func(x any) bool { return equal(x, c.value) })
		}
		s, ok1 := text(v)
		sub, ok2 := c.value.(string)
		return ok1 && ok2 && strings.Contains(s, sub)
	case "startswith":
		s, ok := text(v)
		return ok && strings.HasPrefix(s, c.value.(string))
	case "endswith":
		s, ok := text(v)
		return ok && strings.HasSuffix(s, c.value.(string))
	case "regex":
		s, ok := text(v)
		return ok && c.re.MatchString(s)
	case "exists":
		return (v != nil) == c.want
	}
	return false
}
