package analysis

import (
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Metrics lists the aggregate ops; pNN (p0 to p100) adds percentiles.
var Metrics = []string{"count", "sum", "mean", "median", "min", "max", "stdev", "distinct", "pNN"}

var percentileOp = regexp.MustCompile(`^p([0-9]{1,3})$`)

type metric struct {
	op    string
	p     float64 // pNN
	pct   bool    // op is pNN
	name  string  // output column
	field int     // index into aggregate.fields; -1 for count of rows
}

// aggregate accumulates once per distinct metric field, whatever the number
// of metrics on it: count, sum, mean and p90 of amount read and parse amount
// once per row.
type aggregate struct {
	refs    []fieldRef
	groupBy []path
	fields  []path
	needs   []fieldNeeds
	metrics []metric
	columns []string
}

type fieldNeeds struct{ values, distinct bool }

func compileAggregate(o obj) (*aggregate, error) {
	if err := o.only("group_by", "metrics"); err != nil {
		return nil, err
	}
	a := &aggregate{}
	groupBy, err := o.strings("group_by")
	if err != nil {
		return nil, err
	}
	seen := map[string]string{} // column -> where it comes from
	for i, g := range groupBy {
		p := o.at("group_by") + "[" + strconv.Itoa(i) + "]"
		if prev, dup := seen[g]; dup {
			return nil, paramErr(p, "%q is already grouped by in %s", g, prev)
		}
		seen[g] = p
		a.groupBy = append(a.groupBy, newPath(g))
		a.refs = append(a.refs, fieldRef{p: newPath(g), at: p})
		a.columns = append(a.columns, g)
	}
	list, err := o.list("metrics", true)
	if err != nil {
		return nil, err
	}
	fieldIndex := map[string]int{}
	for i := range list {
		m, err := o.elem("metrics", list, i)
		if err != nil {
			return nil, err
		}
		if err := m.only("field", "op"); err != nil {
			return nil, err
		}
		op, err := m.str("op", true)
		if err != nil {
			return nil, err
		}
		field, err := m.field("field", false)
		if err != nil {
			return nil, err
		}
		mt := metric{op: op, field: -1}
		switch op {
		case "count", "sum", "mean", "median", "min", "max", "stdev", "distinct":
		default:
			sub := percentileOp.FindStringSubmatch(op)
			if sub == nil {
				return nil, paramErr(m.at("op"), "%q is not one of %s", op, strings.Join(Metrics, ", "))
			}
			p, _ := strconv.Atoi(sub[1])
			if p > 100 {
				return nil, paramErr(m.at("op"), "%q is not a percentile; pNN goes from p0 to p100", op)
			}
			mt.p, mt.pct = float64(p), true
		}
		if field == "" {
			if op != "count" {
				return nil, paramErr(m.at("field"), "is required for %s", op)
			}
			mt.name = "count"
		} else {
			mt.name = op + "_" + field
			a.refs = append(a.refs, fieldRef{p: newPath(field), at: m.at("field")})
			idx, ok := fieldIndex[field]
			if !ok {
				idx = len(a.fields)
				fieldIndex[field] = idx
				a.fields = append(a.fields, newPath(field))
				a.needs = append(a.needs, fieldNeeds{})
			}
			mt.field = idx
			switch {
			case op == "distinct":
				a.needs[idx].distinct = true
			case op == "median" || mt.pct:
				a.needs[idx].values = true
			}
		}
		p := m.path
		if prev, dup := seen[mt.name]; dup {
			return nil, paramErr(p, "makes the column %q, which %s already makes", mt.name, prev)
		}
		seen[mt.name] = p
		a.metrics = append(a.metrics, mt)
		a.columns = append(a.columns, mt.name)
	}
	return a, nil
}

// fieldAcc accumulates one field over one group.
type fieldAcc struct {
	nonNull int
	n       int // numeric values
	isum    int64
	intOnly bool // every numeric value so far is an integer and isum has not overflowed
	sum     float64
	comp    float64 // Neumaier compensation of sum
	mean    float64 // Welford
	m2      float64
	min     number
	max     number
	minS    string
	maxS    string
	nStr    int
	values  []float64
	seen    map[string]struct{}
}

type group struct {
	key  []any
	rows int
	accs []fieldAcc
}

func (a *aggregate) fieldRefs() []fieldRef { return a.refs }

func (a *aggregate) Run(rows []map[string]any) Result {
	index := map[string]int{}
	var groups []*group
	var buf []byte
	for _, row := range rows {
		buf = buf[:0]
		for _, g := range a.groupBy {
			v, _ := g.get(row)
			buf = appendKey(buf, v)
		}
		gi, ok := index[string(buf)]
		if !ok {
			gi = len(groups)
			index[string(buf)] = gi
			grp := &group{key: make([]any, len(a.groupBy)), accs: make([]fieldAcc, len(a.fields))}
			for i, g := range a.groupBy {
				grp.key[i], _ = g.get(row)
			}
			for i := range grp.accs {
				grp.accs[i].intOnly = true
				if a.needs[i].distinct {
					grp.accs[i].seen = map[string]struct{}{}
				}
			}
			groups = append(groups, grp)
		}
		grp := groups[gi]
		grp.rows++
		for i, f := range a.fields {
			v, _ := f.get(row)
			if v != nil {
				buf = grp.accs[i].add(v, a.needs[i], buf)
			}
		}
	}
	if len(groups) == 0 && len(a.groupBy) == 0 {
		groups = append(groups, &group{accs: make([]fieldAcc, len(a.fields))})
	}
	out := make([]map[string]any, len(groups))
	for gi, grp := range groups {
		r := make(map[string]any, len(a.columns))
		for i, g := range a.groupBy {
			r[g.raw] = grp.key[i]
		}
		for i := range grp.accs {
			if a.needs[i].values {
				slices.Sort(grp.accs[i].values)
			}
		}
		for _, m := range a.metrics {
			if m.field < 0 {
				r[m.name] = grp.rows
				continue
			}
			r[m.name] = grp.accs[m.field].result(m)
		}
		out[gi] = r
	}
	return Result{Result: out, RowsIn: len(rows), RowsOut: len(out), Columns: a.columns}
}

// add takes a non-null value; buf is scratch space, returned for reuse.
func (acc *fieldAcc) add(v any, needs fieldNeeds, buf []byte) []byte {
	acc.nonNull++
	if needs.distinct {
		buf = appendKey(buf[:0], v)
		if _, ok := acc.seen[string(buf)]; !ok {
			acc.seen[string(buf)] = struct{}{}
		}
	}
	n, ok := asNumber(v, true)
	if !ok {
		if s, isStr := v.(string); isStr {
			if acc.nStr == 0 || s < acc.minS {
				acc.minS = s
			}
			if acc.nStr == 0 || s > acc.maxS {
				acc.maxS = s
			}
			acc.nStr++
		}
		return buf
	}
	acc.n++
	if acc.n == 1 || cmpNumbers(n, acc.min) < 0 {
		acc.min = n
	}
	if acc.n == 1 || cmpNumbers(n, acc.max) > 0 {
		acc.max = n
	}
	if acc.intOnly {
		if !n.isInt {
			acc.intOnly = false
		} else if s, carry := addInt64(acc.isum, n.i); carry {
			acc.intOnly = false
		} else {
			acc.isum = s
		}
	}
	f := n.float()
	// Neumaier's compensated sum: the error of each addition is kept apart.
	t := acc.sum + f
	if math.Abs(acc.sum) >= math.Abs(f) {
		acc.comp += (acc.sum - t) + f
	} else {
		acc.comp += (f - t) + acc.sum
	}
	acc.sum = t
	d := f - acc.mean
	acc.mean += d / float64(acc.n)
	acc.m2 += d * (f - acc.mean)
	if needs.values {
		acc.values = append(acc.values, f)
	}
	return buf
}

// addInt64 adds with overflow detection.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0)
}

func (acc *fieldAcc) result(m metric) any {
	switch m.op {
	case "count":
		return acc.nonNull
	case "distinct":
		return len(acc.seen)
	case "min", "max":
		switch {
		case acc.n > 0 && m.op == "min":
			return acc.min.value()
		case acc.n > 0:
			return acc.max.value()
		case acc.nStr > 0 && m.op == "min":
			return acc.minS
		case acc.nStr > 0:
			return acc.maxS
		}
		return nil
	}
	if acc.n == 0 {
		return nil
	}
	switch m.op {
	case "sum":
		if acc.intOnly {
			return acc.isum
		}
		return finite(acc.sum + acc.comp)
	case "mean":
		if acc.intOnly {
			return finite(float64(acc.isum) / float64(acc.n))
		}
		return finite((acc.sum + acc.comp) / float64(acc.n))
	case "stdev":
		if acc.n < 2 {
			return nil
		}
		return finite(math.Sqrt(acc.m2 / float64(acc.n-1)))
	case "median":
		return finite(median(acc.values))
	}
	return finite(percentile(acc.values, m.p))
}

// median of sorted values, as Python's statistics.median: the middle value,
// or the mean of the two middle values.
func median(x []float64) float64 {
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}

// percentile p (0..100) of sorted values, interpolating linearly between the
// closest ranks as NumPy's default ("linear", method 7 of Hyndman and Fan).
func percentile(x []float64, p float64) float64 {
	h := float64(len(x)-1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(x) {
		return x[len(x)-1]
	}
	return x[i] + (h-lo)*(x[i+1]-x[i])
}

// mulInt64 multiplies with overflow detection.
func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, false
	}
	neg := (a < 0) != (b < 0)
	hi, lo := bits.Mul64(absU(a), absU(b))
	if hi != 0 || (!neg && lo > math.MaxInt64) || (neg && lo > 1<<63) {
		return 0, true
	}
	if neg {
		return int64(-lo), false
	}
	return int64(lo), false
}

func absU(a int64) uint64 {
	if a < 0 {
		return uint64(-a)
	}
	return uint64(a)
}
