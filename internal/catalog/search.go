package catalog

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"
)

// Query is a search of the catalog.
type Query struct {
	// Text is what the caller looks for, in words ("read a file"). Blank
	// text lists every tool in scope, sorted by qualified name; text made only
	// of stop words ("how do I") matches nothing.
	Text string
	// Server restricts the search to one server's tools; empty means all
	// servers. An unknown server gives zero hits, not an error.
	Server string
	// Limit is the most hits to return: 0 or less means DefaultLimit, more
	// than MaxLimit means MaxLimit.
	Limit int
	// Offset skips that many hits of the ranked list, for paging; less than 0
	// means 0.
	Offset int
}

// Paging bounds of Query.Limit.
const (
	DefaultLimit = 10
	MaxLimit     = 100
)

// Result is one page of a search.
type Result struct {
	Total int   // hits in all, on every page
	Hits  []Hit // the page, best first
}

// Hit is a tool found by a search.
type Hit struct {
	Tool  Tool
	Score float64 // higher is better; only comparable within one Result; 0 when listing
}

// maxQueryTerms bounds the distinct words of a query that count; the rest is
// ignored. A query is a request, not a document (and a bit mask of uint32
// tracks which words a tool matched).
const maxQueryTerms = 32

// Search runs q over the catalog and returns one page of the hits.
func (c *Catalog) Search(q Query) Result {
	limit, offset := q.Limit, max(q.Offset, 0)
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	server := -1
	if q.Server != "" {
		id, ok := c.serverID[q.Server]
		if !ok {
			return Result{}
		}
		server = id
	}

	var hits []Hit
	if strings.TrimSpace(q.Text) == "" {
		for i := range c.docs {
			if server < 0 || c.docs[i].server == server {
				hits = append(hits, Hit{Tool: c.docs[i].tool})
			}
		}
	} else {
		hits = c.rank(q.Text, server)
	}
	r := Result{Total: len(hits)}
	if offset < len(hits) {
		r.Hits = hits[offset:min(offset+limit, len(hits))]
	}
	return r
}

// A concept is one word of a query, with the ways a tool can match it. A
// tool scores a concept by its best alternative, so that a word and its
// synonym, or "GitHub" and its parts "git" and "hub", count once.
type concept struct {
	alts [][]weighted // each alternative is a sum of weighted terms
}

type weighted struct {
	term   string
	weight float64
}

// concepts analyzes a query.
func (c *Catalog) concepts(text string) (cs []concept, direct, synonym map[string]bool) {
	direct = make(map[string]bool)
	synonym = make(map[string]bool)
	for _, r := range runs(text) {
		if len(cs) == maxQueryTerms {
			break
		}
		var alts [][]weighted
		switch {
		case r.whole == "" && direct[r.words[0]]:
			continue // a repeated word
		case r.whole == "":
			t := r.words[0]
			direct[t] = true
			alts = append(alts, []weighted{{t, 1}})
			for _, s := range synonyms[t] {
				// A synonym's match never counts for more than one of the
				// word typed: the postings carry the synonym's own idf,
				// which is higher when it is the rarer word ("document"
				// for "file"). A word no tool uses is rarer than any.
				w := synonymWeight
				if idf, ok := c.index.idf[t]; ok && idf < c.index.idf[s] {
					w *= idf / c.index.idf[s]
				}
				alts = append(alts, []weighted{{s, w}})
				synonym[s] = true
			}
		default:
			if direct[r.whole] {
				continue
			}
			direct[r.whole] = true
			alts = append(alts, []weighted{{r.whole, 1}})
			var parts []weighted
			for _, w := range r.words {
				direct[w] = true
				parts = append(parts, weighted{w, 1 / float64(len(r.words))})
			}
			if len(parts) > 0 {
				alts = append(alts, parts)
			}
		}
		cs = append(cs, concept{alts})
	}
	for t := range direct {
		delete(synonym, t)
	}
	return cs, direct, synonym
}

// scratch is the per-search working memory of rank, one slot per tool.
type scratch struct {
	score, best, alt []float64
	matched          []uint32 // bit i: the tool matched concept i
}

// rank scores every tool in scope (server, or all if negative) that shares a
// term with text, best first.
func (c *Catalog) rank(text string, server int) []Hit {
	cs, direct, synonym := c.concepts(text)
	if len(cs) == 0 {
		return nil
	}
	sc, _ := c.scratch.Get().(*scratch)
	if sc == nil {
		n := len(c.docs)
		sc = &scratch{make([]float64, n), make([]float64, n), make([]float64, n), make([]uint32, n)}
	}
	defer c.scratch.Put(sc)

	// BM25F, concept by concept, each scored by its best alternative. The
	// slots are zero between searches: every one touched is reset below.
	var touched, conceptTouched, altTouched []int32
	for ci, con := range cs {
		conceptTouched = conceptTouched[:0]
		for _, alt := range con.alts {
			altTouched = altTouched[:0]
			for _, wt := range alt {
				for _, p := range c.index.postings[wt.term] {
					if server >= 0 && c.docs[p.doc].server != server {
						continue
					}
					if sc.alt[p.doc] == 0 {
						altTouched = append(altTouched, p.doc)
					}
					sc.alt[p.doc] += wt.weight * float64(p.weight)
				}
			}
			for _, d := range altTouched {
				if sc.best[d] == 0 {
					conceptTouched = append(conceptTouched, d)
				}
				sc.best[d] = max(sc.best[d], sc.alt[d])
				sc.alt[d] = 0
			}
		}
		for _, d := range conceptTouched {
			if sc.score[d] == 0 {
				touched = append(touched, d)
			}
			sc.score[d] += sc.best[d]
			sc.matched[d] |= 1 << ci
			sc.best[d] = 0
		}
	}

	// Server prior: how well the query fits each server as a whole.
	srv := make([]float64, len(c.servers))
	for _, con := range cs {
		best := make([]float64, len(c.servers))
		for _, alt := range con.alts {
			acc := make([]float64, len(c.servers))
			for _, wt := range alt {
				for _, p := range c.index.servers[wt.term] {
					acc[p.doc] += wt.weight * float64(p.weight)
				}
			}
			for i := range best {
				best[i] = max(best[i], acc[i])
			}
		}
		for i := range srv {
			srv[i] += best[i]
		}
	}
	maxSrv := slices.Max(append(srv, 0))

	hits := make([]Hit, 0, len(touched))
	for _, i := range touched {
		d := &c.docs[i]
		s := sc.score[i]
		if maxSrv > 0 {
			s *= 1 + serverPrior*srv[d.server]/maxSrv
		}
		// Name coverage: how much of the tool's name the query asked for.
		// "read a file" covers all of read_file but two thirds of
		// read_text_file; BM25 alone barely tells them apart.
		if n := len(d.nameTerms); n > 0 {
			covered := 0.0
			for _, t := range d.nameTerms {
				switch {
				case direct[t]:
					covered++
				case synonym[t]:
					covered += synonymWeight
				}
			}
			s *= 1 + nameCoverageBonus*covered/float64(n)
		}
		// Query coverage: a tool that matches more of the request's words
		// beats one that matches a single word many times.
		qcov := float64(bits.OnesCount32(sc.matched[i])) / float64(len(cs))
		s *= 1 - queryCoverageWeight + queryCoverageWeight*qcov
		if d.deprecated {
			s *= deprecatedFactor
		}
		hits = append(hits, Hit{Tool: d.tool, Score: s})
		sc.score[i], sc.matched[i] = 0, 0
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return strings.Compare(a.Tool.QualifiedName(), b.Tool.QualifiedName())
	})
	return hits
}

// Ranking parameters. k1 and the b values are BM25's usual ones (names are
// short and nearly all of equal length, so normalizing them matters less);
// the field weights and bonuses were set on the evaluation in
// search_quality_test.go, keeping round values where the measure was flat.
const (
	k1 = 1.2

	nameCoverageBonus   = 0.5  // score × (1 + bonus × share of name words in the query)
	queryCoverageWeight = 0.5  // score × (1 - w + w × share of query words matched)
	deprecatedFactor    = 0.75 // a deprecated tool yields to its replacement
	serverPrior         = 0.5
)

// The fields of a tool that the index reads.
const (
	fieldName = iota
	fieldTitle
	fieldDescription
	fieldParamName
	fieldParamDescription
	fieldServer
	numFields
)

var (
	fieldWeight = [numFields]float64{
		fieldName:             3,
		fieldTitle:            1,
		fieldDescription:      1,
		fieldParamName:        0.5,
		fieldParamDescription: 0.3,
		fieldServer:           1.5,
	}
	fieldB = [numFields]float64{
		fieldName:             0.5,
		fieldTitle:            0.5,
		fieldDescription:      0.75,
		fieldParamName:        0.75,
		fieldParamDescription: 0.75,
		fieldServer:           0,
	}
)

// index is an inverted index whose postings carry each term's whole BM25F
// contribution, idf included: a query only adds up postings.
type index struct {
	postings map[string][]posting
	idf      map[string]float64
	// servers indexes each server as one document made of its tools' names,
	// titles and descriptions; its postings' doc is a server's index.
	servers map[string][]posting
}

type posting struct {
	doc    int32
	weight float32
}

// buildIndex indexes docs and fills in their nameTerms and deprecated.
func buildIndex(docs []doc) index {
	type docTerms struct {
		tf  map[string]*[numFields]float64
		len [numFields]float64
	}
	all := make([]docTerms, len(docs))
	var totalLen [numFields]float64
	for i := range docs {
		d := &docs[i]
		t := d.tool
		names, descs := schemaParams(t.InputSchema)
		fields := [numFields][]string{
			fieldName:             terms(t.Name),
			fieldTitle:            terms(t.Title),
			fieldDescription:      terms(t.Description),
			fieldParamName:        terms(strings.Join(names, " ")),
			fieldParamDescription: terms(strings.Join(descs, " ")),
			fieldServer:           terms(t.Server),
		}
		dt := docTerms{tf: make(map[string]*[numFields]float64)}
		for f, ts := range fields {
			for _, term := range ts {
				c := dt.tf[term]
				if c == nil {
					c = new([numFields]float64)
					dt.tf[term] = c
				}
				c[f]++
			}
			dt.len[f] = float64(len(ts))
			totalLen[f] += float64(len(ts))
		}
		all[i] = dt
		for _, r := range runs(t.Name) {
			for _, term := range r.words {
				if !slices.Contains(d.nameTerms, term) {
					d.nameTerms = append(d.nameTerms, term)
				}
			}
		}
		d.deprecated = isDeprecated(t)
	}

	var avgLen [numFields]float64
	for f := range avgLen {
		avgLen[f] = max(totalLen[f]/float64(max(len(docs), 1)), 1)
	}
	ix := index{postings: make(map[string][]posting), idf: make(map[string]float64)}
	for i, dt := range all {
		var norm [numFields]float64
		for f := range norm {
			norm[f] = 1 - fieldB[f] + fieldB[f]*dt.len[f]/avgLen[f]
		}
		for _, term := range sortedKeys(dt.tf) {
			tf := 0.0
			for f, n := range dt.tf[term] {
				tf += fieldWeight[f] * n / norm[f]
			}
			ix.postings[term] = append(ix.postings[term], posting{int32(i), float32(tf / (k1 + tf))})
		}
	}
	ix.servers = buildServerIndex(docs, all2servers(docs))
	n := float64(len(docs))
	for term, ps := range ix.postings {
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		ix.idf[term] = idf
		for j := range ps {
			ps[j].weight *= float32(idf)
		}
	}
	return ix
}

// isDeprecated reports whether a tool says it is deprecated: in its title,
// in the first sentence of its description or shouted anywhere in it
// ("DEPRECATED: use read_text_file"). A lower-case "deprecated" further down
// is more likely about a parameter.
func isDeprecated(t Tool) bool {
	first, _, _ := strings.Cut(t.Description, ". ")
	return strings.Contains(strings.ToLower(t.Title+" "+first), "deprecated") ||
		strings.Contains(t.Description, "DEPRECATED")
}

func all2servers(docs []doc) int {
	n := 0
	for _, d := range docs {
		n = max(n, d.server+1)
	}
	return n
}

// buildServerIndex is a plain BM25 index of servers.
func buildServerIndex(docs []doc, nservers int) map[string][]posting {
	tf := make([]map[string]float64, nservers)
	lens := make([]float64, nservers)
	for i := range tf {
		tf[i] = make(map[string]float64)
	}
	total := 0.0
	for _, d := range docs {
		for _, text := range []string{d.tool.Name, d.tool.Title, d.tool.Description, d.tool.Server} {
			for _, term := range terms(text) {
				tf[d.server][term]++
				lens[d.server]++
				total++
			}
		}
	}
	avg := max(total/float64(max(nservers, 1)), 1)
	out := make(map[string][]posting)
	for s := range tf {
		norm := 1 - 0.75 + 0.75*lens[s]/avg
		for _, term := range sortedKeys(tf[s]) {
			x := tf[s][term] / norm
			out[term] = append(out[term], posting{int32(s), float32(x / (k1 + x))})
		}
	}
	n := float64(nservers)
	for _, ps := range out {
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for j := range ps {
			ps[j].weight *= float32(idf)
		}
	}
	return out
}
