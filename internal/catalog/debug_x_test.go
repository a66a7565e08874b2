package catalog

import (
	"fmt"
	"os"
	"testing"
)

func TestDebugExplain(t *testing.T) {
	q := os.Getenv("Q")
	if q == "" {
		t.Skip()
	}
	c := evalCatalog(t)
	r := c.Search(Query{Text: q, Limit: 8})
	fmt.Println("terms:", terms(q))
	for _, h := range r.Hits {
		fmt.Printf("%-45s %.2f\n", h.Tool.QualifiedName(), h.Score)
		i := c.byIdent[h.Tool.QualifiedName()]
		for _, term := range terms(q) {
			for _, p := range c.index.postings[term] {
				if int(p.doc) == i {
					fmt.Printf("    %-12s %.2f (idf %.2f)\n", term, p.weight, c.index.idf[term])
				}
			}
			for _, s := range synonyms[term] {
				for _, p := range c.index.postings[s] {
					if int(p.doc) == i {
						fmt.Printf("    ~%-11s %.2f (idf %.2f)\n", s, p.weight, c.index.idf[s])
					}
				}
			}
		}
	}
}

func evalScore(c *Catalog, qs []evalQuery) (int, int) {
	var t1, t5 int
	for _, q := range qs {
		r := c.Search(Query{Text: q.Query, Limit: 5})
		for i, h := range r.Hits {
			if h.Tool.QualifiedName() == q.Want {
				if i == 0 {
					t1++
				}
				t5++
			}
		}
	}
	return t1, t5
}

func TestDebugSweep(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	tools := append(loadTools(t, "upstream_tools.json"), loadTools(t, "synthetic_tools.json")...)
	var qs []evalQuery
	readJSON(t, "queries.json", &qs)
	fw, fb, ncb, qcw := fieldWeight, fieldB, nameCoverageBonus, queryCoverageWeight
	defer func() { fieldWeight, fieldB, nameCoverageBonus, queryCoverageWeight = fw, fb, ncb, qcw }()
	try := func(label string) {
		t1, t5 := evalScore(New(tools), qs)
		fmt.Printf("%-40s top1 %d top5 %d\n", label, t1, t5)
		fieldWeight, fieldB, nameCoverageBonus, queryCoverageWeight = fw, fb, ncb, qcw
	}
	try("base")
	for _, v := range []float64{1.5, 2, 4, 5} {
		fieldWeight[fieldName] = v
		try(fmt.Sprint("name w ", v))
	}
	for _, v := range []float64{0, 0.5, 2} {
		fieldWeight[fieldTitle] = v
		try(fmt.Sprint("title w ", v))
	}
	for _, v := range []float64{0.5, 1.5, 2} {
		fieldWeight[fieldDescription] = v
		try(fmt.Sprint("desc w ", v))
	}
	for _, v := range []float64{0, 0.25, 1} {
		fieldWeight[fieldParamName] = v
		try(fmt.Sprint("pname w ", v))
	}
	for _, v := range []float64{0, 0.15, 0.6} {
		fieldWeight[fieldParamDescription] = v
		try(fmt.Sprint("pdesc w ", v))
	}
	for _, v := range []float64{0, 0.75, 3} {
		fieldWeight[fieldServer] = v
		try(fmt.Sprint("server w ", v))
	}
	for _, v := range []float64{0, 0.25, 0.75} {
		fieldB[fieldName] = v
		fieldB[fieldTitle] = v
		try(fmt.Sprint("name b ", v))
	}
	for _, v := range []float64{0.3, 0.5, 0.9} {
		fieldB[fieldDescription] = v
		try(fmt.Sprint("desc b ", v))
	}
	for _, v := range []float64{0, 0.25, 1, 2} {
		nameCoverageBonus = v
		try(fmt.Sprint("name cov ", v))
	}
	for _, v := range []float64{0, 0.25, 0.75, 1} {
		queryCoverageWeight = v
		try(fmt.Sprint("query cov ", v))
	}
}

func TestDebugSweep2(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	tools := append(loadTools(t, "upstream_tools.json"), loadTools(t, "synthetic_tools.json")...)
	var qs []evalQuery
	readJSON(t, "queries.json", &qs)
	for _, v := range []float64{0.3, 0.5, 0.7, 0.9} {
		synonymWeight = v
		t1, t5 := evalScore(New(tools), qs)
		fmt.Printf("%-40s top1 %d top5 %d\n", fmt.Sprint("syn ", v), t1, t5)
	}
	synonymWeight = 0.5
	for _, v := range []float64{0.8, 1.2, 2, 3} {
		k1 = v
		t1, t5 := evalScore(New(tools), qs)
		fmt.Printf("%-40s top1 %d top5 %d\n", fmt.Sprint("k1 ", v), t1, t5)
	}
	k1 = 1.2
}

func TestDebugSweep3(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	tools := append(loadTools(t, "upstream_tools.json"), loadTools(t, "synthetic_tools.json")...)
	var qs []evalQuery
	readJSON(t, "queries.json", &qs)
	for _, v := range []float64{0, 0.1, 0.25, 0.5, 1, 2} {
		serverPrior = v
		t1, t5 := evalScore(New(tools), qs)
		fmt.Printf("%-40s top1 %d top5 %d\n", fmt.Sprint("srv ", v), t1, t5)
	}
	serverPrior = 0.5
}

func TestDebugSweep4(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	tools := append(loadTools(t, "upstream_tools.json"), loadTools(t, "synthetic_tools.json")...)
	var qs []evalQuery
	readJSON(t, "queries.json", &qs)
	for _, nc := range []float64{0, 0.5} {
		for _, v := range []float64{0, 0.25, 0.5, 1, 2} {
			nameQueryBonus = v
			nameCoverageBonus = nc
			t1, t5 := evalScore(New(tools), qs)
			fmt.Printf("%-40s top1 %d top5 %d\n", fmt.Sprint("namecov ", nc, " nameq ", v), t1, t5)
		}
	}
	nameQueryBonus = 0
	nameCoverageBonus = 0.5
}

func TestDebugDiff(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	tools := append(loadTools(t, "upstream_tools.json"), loadTools(t, "synthetic_tools.json")...)
	var qs []evalQuery
	readJSON(t, "queries.json", &qs)
	rank := func(c *Catalog, q evalQuery) int {
		for i, h := range c.Search(Query{Text: q.Query, Limit: 20}).Hits {
			if h.Tool.QualifiedName() == q.Want {
				return i + 1
			}
		}
		return 99
	}
	serverPrior = 0
	a := New(tools)
	serverPrior = 0.5
	b := New(tools)
	for _, q := range qs {
		if ra, rb := rank(a, q), rank(b, q); ra != rb {
			fmt.Printf("%-60q %d -> %d\n", q.Query, ra, rb)
		}
	}
}
