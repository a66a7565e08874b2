package analysis

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

type derived struct {
	name string
	e    expr  // over the renamed row
	bare *path // the expression is a lone field name: copy its value
}

// transform runs select, then rename, then derive (see doc.go): select picks
// source fields, so that a rename of a selected field is not lost, and derived
// fields are always kept, whatever select says.
type transform struct {
	selects bool   // select was given: only sel and the derived fields are kept
	sel     []path // the fields select picks from the input
	rename  map[string]string
	renames []string  // the old names, sorted
	derive  []derived // in name order, so that runs are deterministic
	refs    []fieldRef
	columns []string
}

func compileTransform(o obj) (*transform, error) {
	if err := o.only("select", "rename", "derive"); err != nil {
		return nil, err
	}
	if !o.has("select") && !o.has("rename") && !o.has("derive") {
		return nil, paramErr("parameters", "needs at least one of select, rename, derive")
	}
	t := &transform{}
	d, hasDerive, err := o.object("derive")
	if err != nil {
		return nil, err
	}
	sel, err := o.strings("select")
	if err != nil {
		return nil, err
	}
	t.selects = len(sel) > 0
	for i, s := range sel {
		if hasDerive && d.has(s) {
			continue // derived fields are kept anyway; select may order them
		}
		t.sel = append(t.sel, newPath(s))
		t.refs = append(t.refs, fieldRef{p: newPath(s), at: o.at("select") + "[" + strconv.Itoa(i) + "]",
			hint: "select names fields as the input has them, before rename"})
	}
	r, ok, err := o.object("rename")
	if err != nil {
		return nil, err
	}
	targets := map[string]string{} // new name -> old
	if ok {
		t.rename = map[string]string{}
		for _, old := range slices.Sorted(maps.Keys(r.m)) {
			nu, err := r.str(old, true)
			if err != nil {
				return nil, err
			}
			if nu == "" {
				return nil, paramErr(r.at(old), "the new name must not be empty")
			}
			if prev, dup := targets[nu]; dup {
				return nil, paramErr(r.at(old), "renames to %q, as %q does", nu, prev)
			}
			if t.selects && !slices.ContainsFunc(t.sel, func(p path) bool { return p.raw == old }) {
				return nil, paramErr(r.at(old), "%q is not selected; select picks the fields before rename renames them, so add %q to select", old, old)
			}
			targets[nu] = old
			t.rename[old] = nu
			t.renames = append(t.renames, old)
			if !t.selects {
				t.refs = append(t.refs, fieldRef{p: newPath(old), at: r.at(old)})
			}
		}
	}
	if hasDerive {
		for _, name := range slices.Sorted(maps.Keys(d.m)) {
			src, err := d.str(name, true)
			if err != nil {
				return nil, err
			}
			if name == "" {
				return nil, paramErr(d.at(name), "a derived field needs a name")
			}
			e, err := parseExpr(src)
			if err != nil {
				return nil, paramErr(d.at(name), "%q: %v", src, err)
			}
			if err := t.deriveRefs(d, name, e, targets); err != nil {
				return nil, err
			}
			dv := derived{name: name, e: e}
			if f, isField := e.(fieldEx); isField {
				dv.bare = &f.p
			}
			t.derive = append(t.derive, dv)
		}
	}
	if t.selects {
		for _, s := range sel {
			if nu, ok := t.rename[s]; ok {
				s = nu
			}
			t.columns = append(t.columns, s)
		}
		for _, dv := range t.derive {
			if !slices.Contains(t.columns, dv.name) {
				t.columns = append(t.columns, dv.name)
			}
		}
	}
	return t, nil
}

// deriveRefs adds the fields of the expression of derived field name to the
// fields checked against the rows. Derive sees the renamed row, so a field
// named there by a new name is looked up in the input by its old name, and
// an old name is refused.
func (t *transform) deriveRefs(d obj, name string, e expr, targets map[string]string) error {
	var err error
	walkFields(e, func(p path) {
		if err != nil {
			return
		}
		first, rest, dotted := strings.Cut(p.raw, ".")
		ref := fieldRef{p: p, at: d.at(name), renamed: t.rename}
		if d.has(p.raw) {
			ref.hint = "an expression sees the input's fields (renamed), not other derived fields"
		}
		switch old, isTarget := targets[first]; {
		case targets[p.raw] != "":
			ref.alt = t.unrenamed(p)
			ref.p, ref.name = newPath(targets[p.raw]), p.raw
		case isTarget && dotted:
			ref.alt = t.unrenamed(p)
			ref.p, ref.name = newPath(old+"."+rest), p.raw
		case t.rename[p.raw] != "" || t.rename[first] != "" && dotted:
			old := first
			if t.rename[p.raw] != "" {
				old = p.raw
			}
			err = paramErr(d.at(name), "%q is renamed to %q; an expression sees the renamed row, so write %q", old, t.rename[old], t.rename[old])
			return
		}
		t.refs = append(t.refs, ref)
	})
	return err
}

// unrenamed is p if it also names the field in the input (its name is not
// itself renamed away), for a row without the field renamed to it.
func (t *transform) unrenamed(p path) *path {
	first, _, _ := strings.Cut(p.raw, ".")
	if _, gone := t.rename[first]; gone {
		return nil
	}
	if _, gone := t.rename[p.raw]; gone {
		return nil
	}
	return &p
}

// walkFields calls f with the path of each field of e.
func walkFields(e expr, f func(path)) {
	switch x := e.(type) {
	case fieldEx:
		f(x.p)
	case signEx:
		walkFields(x.x, f)
	case binEx:
		walkFields(x.l, f)
		walkFields(x.r, f)
	}
}

func (t *transform) fieldRefs() []fieldRef { return t.refs }

func (t *transform) Run(rows []map[string]any) Result {
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		out[i] = t.row(row)
	}
	return Result{Result: out, RowsIn: len(rows), RowsOut: len(out), Columns: t.columns}
}

func (t *transform) row(in map[string]any) map[string]any {
	view := in // the renamed row, which derive sees
	if len(t.rename) > 0 {
		view = t.renamed(maps.Clone(in))
	}
	var r map[string]any
	switch {
	case t.selects:
		r = make(map[string]any, len(t.sel)+len(t.derive))
		for _, p := range t.sel {
			r[p.raw], _ = p.get(in)
		}
		r = t.renamed(r)
	case len(t.rename) > 0:
		r = maps.Clone(view)
	default:
		r = maps.Clone(in)
	}
	if r == nil {
		r = map[string]any{}
	}
	for _, d := range t.derive {
		if d.bare != nil {
			r[d.name], _ = d.bare.get(view)
			continue
		}
		if n, ok := d.e.eval(view); ok {
			r[d.name] = n.value()
		} else {
			r[d.name] = nil
		}
	}
	return r
}

// renamed renames the top-level keys of r in place; a renamed value wins over
// an existing key of its new name.
func (t *transform) renamed(r map[string]any) map[string]any {
	if len(t.rename) == 0 || r == nil {
		return r
	}
	moved := make(map[string]any, len(t.rename))
	for _, old := range t.renames {
		if v, ok := r[old]; ok {
			moved[t.rename[old]] = v
			delete(r, old)
		}
	}
	maps.Copy(r, moved)
	return r
}
