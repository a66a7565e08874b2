package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParamError is a bad argument: Path names it as the caller wrote it
// (parameters.conditions[1].operator) and Msg says which rule it broke.
type ParamError struct {
	Path string
	Msg  string
}

func (e *ParamError) Error() string { return e.Path + ": " + e.Msg }

func paramErr(path, format string, args ...any) error {
	return &ParamError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// obj is a decoded parameters object being read, with the path of its
// location for errors.
type obj struct {
	m    map[string]any
	path string
}

// decodeParams decodes raw (null or absent means {}) with UseNumber.
func decodeParams(raw json.RawMessage) (obj, error) {
	o := obj{m: map[string]any{}, path: "parameters"}
	if len(bytes.TrimSpace(raw)) == 0 {
		return o, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return o, paramErr("parameters", "is not valid JSON: %v", err)
	}
	switch x := v.(type) {
	case nil:
		return o, nil
	case map[string]any:
		o.m = x
		return o, nil
	}
	return o, paramErr("parameters", "must be an object, not %s", article(typeName(v)))
}

func (o obj) at(key string) string { return o.path + "." + key }

// only refuses keys other than allowed (data_field is always allowed: it
// belongs to the caller, which picks the rows with it).
func (o obj) only(allowed ...string) error {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k != "data_field" && !slices.Contains(allowed, k) {
			return paramErr(o.at(k), "is not a parameter here; want %s", strings.Join(allowed, ", "))
		}
	}
	return nil
}

// has reports whether key is present and not null.
func (o obj) has(key string) bool { return o.m[key] != nil }

func (o obj) str(key string, required bool) (string, error) {
	v, ok := o.m[key]
	if !ok || v == nil {
		if required {
			return "", paramErr(o.at(key), "is required")
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", paramErr(o.at(key), "must be a string, not %s", article(typeName(v)))
	}
	return s, nil
}

// field reads a non-empty field path.
func (o obj) field(key string, required bool) (string, error) {
	s, err := o.str(key, required)
	if err == nil && s == "" && (required || o.has(key)) {
		err = paramErr(o.at(key), "must not be empty")
	}
	return s, err
}

func (o obj) list(key string, required bool) ([]any, error) {
	v, ok := o.m[key]
	if !ok || v == nil {
		if required {
			return nil, paramErr(o.at(key), "is required")
		}
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, paramErr(o.at(key), "must be an array, not %s", article(typeName(v)))
	}
	return l, nil
}

func (o obj) object(key string) (obj, bool, error) {
	v, ok := o.m[key]
	if !ok || v == nil {
		return obj{}, false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, false, paramErr(o.at(key), "must be an object, not %s", article(typeName(v)))
	}
	return obj{m: m, path: o.at(key)}, true, nil
}

// elem is the i-th element of list (read from key) as an object.
func (o obj) elem(key string, list []any, i int) (obj, error) {
	p := o.at(key) + "[" + strconv.Itoa(i) + "]"
	m, ok := list[i].(map[string]any)
	if !ok {
		return obj{}, paramErr(p, "must be an object, not %s", article(typeName(list[i])))
	}
	return obj{m: m, path: p}, nil
}

// strings reads an array of non-empty strings.
func (o obj) strings(key string) ([]string, error) {
	l, err := o.list(key, false)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(l))
	for i, v := range l {
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, paramErr(fmt.Sprintf("%s[%d]", o.at(key), i), "must be a non-empty string, not %s", describe(v))
		}
		out[i] = s
	}
	return out, nil
}

// positiveInt reads an optional integer >= 1; 0 means absent.
func (o obj) positiveInt(key string) (int, error) {
	v, ok := o.m[key]
	if !ok || v == nil {
		return 0, nil
	}
	n, isNum := asNumber(v, false)
	if !isNum || !n.isInt || n.i < 1 || n.i > 1<<31 {
		return 0, paramErr(o.at(key), "must be a positive integer, not %s", describe(v))
	}
	return int(n.i), nil
}

// article is "a string", "an object", for messages.
func article(t string) string {
	switch t[0] {
	case 'a', 'o', 'u':
		return "an " + t
	case 'n':
		if t == "null" {
			return t
		}
	}
	return "a " + t
}

// describe shows a value in a message: short JSON, or its type.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 60 {
		return article(typeName(v))
	}
	return string(b)
}
