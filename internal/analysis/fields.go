package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/codecell/codecell/internal/editdist"
)

// fieldRef is a field that an analysis reads, with where its parameters name
// it, so that a field no row has can be refused by that name.
type fieldRef struct {
	p    path   // looked up in the input rows
	alt  *path  // where else it may be, if not nil
	name string // as the caller wrote it, when it differs from p.raw
	at   string // parameters.group_by[0]
	hint string // added to the message, after a semicolon
	// renamed maps source names to the names the caller sees them by
	// (transform's derive sees the renamed row), for the fields listed.
	renamed map[string]string
}

// Bounds of the field list in an unknown-field message.
const (
	fieldsShown   = 10
	fieldsScanned = 500 // distinct names collected
	fieldDepth    = 4   // nested objects descended into
)

// checkFields refuses the first reference to a field that no row has: a typo
// ("regoin", "Amount") would otherwise give one null group, or match no row,
// in silence. The message lists the fields the rows do have, nearest first.
// With no rows there is nothing to check against.
func checkFields(rows []map[string]any, refs []fieldRef) error {
	if len(rows) == 0 {
		return nil
	}
	for _, r := range refs {
		if slices.ContainsFunc(rows, func(row map[string]any) bool {
			_, ok := r.p.get(row)
			if !ok && r.alt != nil {
				_, ok = r.alt.get(row)
			}
			return ok
		}) {
			continue
		}
		name := r.name
		if name == "" {
			name = r.p.raw
		}
		msg := fmt.Sprintf("no row has the field %q; %s", name, fieldsSeen(name, rows, r.renamed))
		if r.hint != "" {
			msg += "; " + r.hint
		}
		return paramErr(r.at, "%s", msg)
	}
	return nil
}

// fieldsSeen lists the field paths of rows (nested objects as dot paths),
// nearest to name first: a case-insensitive match, then a path whose last
// segment matches, then by edit distance, then in the order first seen.
func fieldsSeen(name string, rows []map[string]any, renamed map[string]string) string {
	var seen []string
	index := map[string]bool{}
	var walk func(prefix string, m map[string]any, depth int)
	walk = func(prefix string, m map[string]any, depth int) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if len(seen) >= fieldsScanned {
				return
			}
			shown := k
			if prefix == "" && renamed != nil {
				if nu, ok := renamed[k]; ok {
					shown = nu
				}
			}
			p := prefix + shown
			if !index[p] {
				index[p] = true
				seen = append(seen, p)
			}
			if sub, ok := m[k].(map[string]any); ok && depth < fieldDepth {
				walk(p+".", sub, depth+1)
			}
		}
	}
	for _, row := range rows {
		if len(seen) >= fieldsScanned {
			break
		}
		walk("", row, 1)
	}
	if len(seen) == 0 {
		return "the rows have no fields"
	}
	type ranked struct {
		name        string
		class, dist int
	}
	lower := strings.ToLower(name)
	rs := make([]ranked, len(seen))
	for i, s := range seen {
		ls := strings.ToLower(s)
		r := ranked{name: s, class: 2, dist: editdist.Levenshtein(lower, ls)}
		switch {
		case ls == lower:
			r.class = 0
		case lastSegment(ls) == lastSegment(lower):
			r.class = 1
		}
		rs[i] = r
	}
	slices.SortStableFunc(rs, func(a, b ranked) int {
		if a.class != b.class {
			return a.class - b.class
		}
		return a.dist - b.dist
	})
	names := make([]string, 0, fieldsShown)
	for _, r := range rs[:min(len(rs), fieldsShown)] {
		names = append(names, r.name)
	}
	s := "fields seen, nearest first: " + strings.Join(names, ", ")
	if more := len(rs) - len(names); more > 0 {
		s += fmt.Sprintf(" (and %d more)", more)
	}
	if rs[0].class == 0 {
		s += " (names are case-sensitive)"
	}
	return s
}

func lastSegment(p string) string { return p[strings.LastIndexByte(p, '.')+1:] }
