package analysis

import (
	"maps"
	"slices"
)

type derived struct {
	name string
	e    expr
	bare *path // the expression is a lone field name: copy its value
}

type transform struct {
	derive  []derived // in name order, so that runs are deterministic
	rename  map[string]string
	renames []string // the old names, sorted
	sel     []path
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
	d, ok, err := o.object("derive")
	if err != nil {
		return nil, err
	}
	if ok {
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
			dv := derived{name: name, e: e}
			if f, isField := e.(fieldEx); isField {
				dv.bare = &f.p
			}
			t.derive = append(t.derive, dv)
		}
	}
	r, ok, err := o.object("rename")
	if err != nil {
		return nil, err
	}
	if ok {
		t.rename = map[string]string{}
		targets := map[string]string{}
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
			targets[nu] = old
			t.rename[old] = nu
			t.renames = append(t.renames, old)
		}
	}
	sel, err := o.strings("select")
	if err != nil {
		return nil, err
	}
	for _, s := range sel {
		t.sel = append(t.sel, newPath(s))
	}
	if len(sel) > 0 {
		t.columns = sel
	}
	return t, nil
}

func (t *transform) Run(rows []map[string]any) Result {
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		out[i] = t.row(row)
	}
	return Result{Result: out, RowsIn: len(rows), RowsOut: len(out), Columns: t.columns}
}

func (t *transform) row(in map[string]any) map[string]any {
	r := maps.Clone(in)
	if r == nil {
		r = map[string]any{}
	}
	for _, d := range t.derive {
		if d.bare != nil {
			r[d.name], _ = d.bare.get(in)
			continue
		}
		n, ok := d.e.eval(in)
		if ok {
			r[d.name] = n.value()
		} else {
			r[d.name] = nil
		}
	}
	if len(t.rename) > 0 {
		moved := make(map[string]any, len(t.rename))
		for _, old := range t.renames {
			if v, ok := r[old]; ok {
				moved[t.rename[old]] = v
				delete(r, old)
			}
		}
		maps.Copy(r, moved)
	}
	if len(t.sel) == 0 {
		return r
	}
	s := make(map[string]any, len(t.sel))
	for _, p := range t.sel {
		s[p.raw], _ = p.get(r)
	}
	return s
}
