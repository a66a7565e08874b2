package catalog

import (
	"container/heap"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode"

	"github.com/codecell/codecell/internal/editdist"
)

// Query is a search of the catalog.
type Query struct {
	// Text is what the caller looks for, in words ("read a file"). Blank
	// text lists every tool in scope, sorted by qualified name, the upstream
	// tools before codecell's own (Builtin); text made only of stop words
	// ("how do I") matches nothing.
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
	limit, offset, server, ok := c.scope(q)
	if !ok {
		return Result{}
	}

	var r Result
	if strings.TrimSpace(q.Text) == "" {
		// The upstream tools by name, then codecell's own.
		for _, builtin := range []bool{false, true} {
			for i := range c.docs {
				if server >= 0 && c.docs[i].server != server || c.docs[i].tool.Builtin != builtin {
					continue
				}
				if r.Total >= offset && r.Total < offset+limit {
					r.Hits = append(r.Hits, Hit{Tool: c.docs[i].tool})
				}
				r.Total++
			}
		}
		return r
	}
	ranked, total := c.rank(q.Text, server, min(offset, len(c.docs))+limit)
	r.Total = total
	if offset < len(ranked) {
		for _, h := range ranked[offset:] {
			r.Hits = append(r.Hits, Hit{Tool: c.docs[h.doc].tool, Score: h.score})
		}
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
	term   int32 // term ID
	weight float64
}

// concepts analyzes a query into concepts over the catalog's terms, and the
// terms the query holds as typed (direct), through the hand-written
// synonyms, related words and the like only (synonym), and through WordNet
// only (loose). Words no tool uses are left out.
func (c *Catalog) concepts(text string) (cs []concept, direct, synonym, loose []int32) {
	seen := make(map[string]bool)
	cmd, cmdWords := shellCommand(text)
	redirect := redirectsToFile(text)
	shown, written := fileRoles(text)
	text = rewrite(text)
	text, files, kinds, dirs := fileNames(text)
	text, names := c.properNames(text)
	for _, r := range runs(text) {
		if len(cs) == maxQueryTerms {
			break
		}
		var alts [][]weighted
		if r.whole == "" {
			t := r.words[0]
			if seen[t] {
				continue
			}
			seen[t] = true
			idf, known := c.index.idf(t)
			known = known && !pronouns[t] // its relations are what it means
			if id, ok := c.index.ids[t]; ok {
				w := 1.0
				if pronouns[t] {
					// "everything you remember" names no server called
					// "everything".
					w = relatedWeight
				}
				alts = append(alts, []weighted{{id, w}})
				direct = append(direct, id)
			}
			if t == cmd {
				// A command of a shell command line stands for what its
				// man page says it does, as a whole: a tool that has all
				// the words of it the catalog knows matches it fully.
				var parts []weighted
				for _, w := range cmdWords {
					if id, ok := c.index.ids[w]; ok && !slices.ContainsFunc(parts, func(p weighted) bool { return p.term == id }) {
						parts = append(parts, weighted{id, 1})
						synonym = append(synonym, id)
					}
				}
				for i := range parts {
					parts[i].weight = 1 / float64(len(parts))
				}
				if len(parts) > 0 {
					alts = append(alts, parts)
				}
			}
			// Synonyms, then related words (a one-way lexicon) a little
			// lower. A match of either never counts for more than one of
			// the word typed: the postings carry the other word's own idf,
			// which is higher when it is the rarer word ("document" for
			// "file"). A word no tool uses is rarer than any.
			wn, _ := wordnetLookup(t)
			for _, other := range []struct {
				words  []string
				weight float64
				to     *[]int32
			}{{synonyms[t], synonymWeight, &synonym}, {related[t], relatedWeight, &synonym},
				{wn.close, wordnetCloseWeight, &loose}, {wn.broad, wordnetBroadWeight, &loose}} {
				for _, s := range other.words {
					// A related word may be a phrase ("delete+relation"
					// for "unlink"): one alternative of all its words.
					var alt []weighted
					for _, part := range strings.Split(s, "+") {
						id, ok := c.index.ids[part]
						if !ok || slices.ContainsFunc(alts, func(a []weighted) bool { return len(a) == 1 && a[0].term == id }) {
							continue
						}
						w := other.weight
						if sidf, _ := c.index.idf(part); known && idf < sidf {
							w *= idf / sidf
						}
						alt = append(alt, weighted{id, w})
						*other.to = append(*other.to, id)
					}
					if len(alt) > 0 {
						alts = append(alts, alt)
					}
				}
			}
			if len(alts) == 0 && !isEnglish(t) {
				// A word no tool uses and nothing relates to, and no word
				// of English: a typo of one that tools use ("serch
				// memroy")?
				for _, id := range c.misspelt(t) {
					alts = append(alts, []weighted{{id, typoWeight}})
					synonym = append(synonym, id)
				}
			}
		} else {
			if seen[r.whole] {
				continue
			}
			seen[r.whole] = true
			if id, ok := c.index.ids[r.whole]; ok {
				alts = append(alts, []weighted{{id, 1}})
				direct = append(direct, id)
			}
			var parts []weighted
			for _, w := range r.words {
				if id, ok := c.index.ids[w]; ok {
					parts = append(parts, weighted{id, 1 / float64(len(r.words))})
					direct = append(direct, id)
				}
			}
			if len(parts) > 0 {
				alts = append(alts, parts)
			}
		}
		// A concept no tool can match still counts in the query's length,
		// so that coverage stays honest about unknown words.
		cs = append(cs, concept{alts})
	}
	// What the words left out stand for, each a concept of words tools
	// use, weighed as a synonym is: proper names for a named thing ("Bob"
	// asks for no haircut); file names for a file ("config.yaml" asks for
	// no configuration), the kind of media it holds, several files when
	// the request names several, writing when output is redirected to one
	// or it is where something goes, reading when it is what to show
	// (fileRoles); a path for a directory.
	for _, k := range []struct {
		words  []string
		weight float64
		ok     bool
	}{
		{namedWords, properNameWeight, names > 0},
		{[]string{"file"}, fileNameWeight, files > 0},
		{[]string{"directory"}, fileNameWeight, dirs > 0 && files == 0},
		{kinds, fileNameWeight, len(kinds) > 0},
		{[]string{"multiple"}, fileNameWeight, files > 1},
		{[]string{"write"}, fileNameWeight, redirect || written},
		{[]string{"read+content"}, fileNameWeight, shown && !written},
	} {
		if !k.ok || len(cs) == maxQueryTerms {
			continue
		}
		var alts [][]weighted
		for _, w := range k.words {
			// Words joined by "+" are one alternative, as in the
			// lexicon: a file to show asks to read its contents.
			var alt []weighted
			for _, part := range strings.Split(w, "+") {
				if id, ok := c.index.ids[stem(part)]; ok {
					alt = append(alt, weighted{id, k.weight})
					synonym = append(synonym, id)
				}
			}
			if len(alt) > 0 {
				alts = append(alts, alt)
			}
		}
		cs = append(cs, concept{alts})
	}
	synonym = slices.DeleteFunc(synonym, func(id int32) bool { return slices.Contains(direct, id) })
	loose = slices.DeleteFunc(loose, func(id int32) bool { return slices.Contains(direct, id) || slices.Contains(synonym, id) })
	return cs, direct, synonym, loose
}

// scratch is the per-search working memory of rank, one slot per tool. The
// slots are zero between searches: rank resets every slot it touches.
type scratch struct {
	score, best, alt []float64
	matched          []uint32 // bit i: the tool matched concept i
	touched          []int32
	conceptTouched   []int32
	altTouched       []int32
}

// scored is a tool of a ranking: its index in Catalog.docs and its score.
type scored struct {
	doc   int32
	score float64
}

// better orders a ranking: higher scores first, ties by qualified name,
// which is the order of docs.
func better(a, b scored) bool {
	return a.score > b.score || a.score == b.score && a.doc < b.doc
}

// scope is a query's page (limit and offset, as DefaultLimit and MaxLimit
// bound them) and server (-1 for all); ok is false for an unknown server,
// which no tool matches.
func (c *Catalog) scope(q Query) (limit, offset int, server int32, ok bool) {
	limit, offset = q.Limit, max(q.Offset, 0)
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	if q.Server == "" {
		return limit, offset, -1, true
	}
	server, ok = c.serverID[q.Server]
	return limit, offset, server, ok
}

// rank scores every tool in scope (server, or all if negative) that shares a
// term with text and returns the best top of them, best first, and how many
// there are in all.
func (c *Catalog) rank(text string, server int32, top int) ([]scored, int) {
	cs, direct, synonym, loose := c.concepts(text)
	if len(cs) == 0 {
		return nil, 0
	}
	// Whether it asks to destroy, by what it does not say not to do:
	// "don't forget" still asks for memory, but for no deletion; nor does
	// a deletion it reports, quotes ("files with 'remove' in their name")
	// or names as a topic ("anything about the deleted accounts"). WordNet's
	// looser relations do not count: "dump" is a way to "remove" there,
	// but "dump the report into out/report.md" destroys nothing.
	kept, keptSyn := direct, synonym
	if asked, _ := dropQuoted(dropTopic(dropNegated(dropReported(text)))); asked != text {
		_, kept, keptSyn, _ = c.concepts(asked)
	}
	destroys := c.asksToDestroy(kept, keptSyn)
	sc, _ := c.scratch.Get().(*scratch)
	if sc == nil {
		n := len(c.docs)
		sc = &scratch{score: make([]float64, n), best: make([]float64, n), alt: make([]float64, n), matched: make([]uint32, n)}
	}
	defer c.scratch.Put(sc)

	// BM25F, concept by concept, each scored by its best alternative.
	sc.touched = sc.touched[:0]
	for ci, con := range cs {
		sc.conceptTouched = sc.conceptTouched[:0]
		for _, alt := range con.alts {
			sc.altTouched = sc.altTouched[:0]
			for _, wt := range alt {
				for _, p := range c.index.postings[wt.term] {
					if server >= 0 && c.docServer[p.doc] != server {
						continue
					}
					if sc.alt[p.doc] == 0 {
						sc.altTouched = append(sc.altTouched, p.doc)
					}
					sc.alt[p.doc] += wt.weight * float64(p.weight)
				}
			}
			for _, d := range sc.altTouched {
				if sc.best[d] == 0 {
					sc.conceptTouched = append(sc.conceptTouched, d)
				}
				sc.best[d] = max(sc.best[d], sc.alt[d])
				sc.alt[d] = 0
			}
		}
		for _, d := range sc.conceptTouched {
			if sc.score[d] == 0 {
				sc.touched = append(sc.touched, d)
			}
			sc.score[d] += sc.best[d]
			sc.matched[d] |= 1 << ci
			sc.best[d] = 0
		}
	}

	fit := c.serverFit(cs)
	sel := selector{top: top}
	for _, i := range sc.touched {
		d := &c.docs[i]
		s := sc.score[i]
		// Server fit: a query that names a product ("S3", "Jira") or the
		// vocabulary of one server favours that server's tools, even those
		// whose own description does not repeat the word.
		s *= 1 + serverFitBonus*fit[d.server]
		// Name coverage: how much of the tool's name the query asked for.
		// "read a file" covers all of read_file but two thirds of
		// read_text_file; BM25 alone barely tells them apart.
		if n := len(d.nameTerms); n > 0 {
			covered := 0.0
			for _, t := range d.nameTerms {
				switch {
				case slices.Contains(direct, t):
					covered++
				case slices.Contains(synonym, t), slices.Contains(loose, t):
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
		if d.tool.Builtin {
			s *= builtinFactor
		}
		switch {
		case d.tool.Destructive && !destroys:
			// After every tool that destroys nothing: a request to store
			// a fact is no request to delete one, however near the words.
			s *= destructiveFactor
		case d.tool.Destructive:
			// A request to destroy is answered by a tool that destroys
			// before one that creates the same thing ("drop the link
			// between Judy and Acme": delete_relations, not
			// create_relations, whose description says "between").
			s *= destroyingBonus
		}
		sel.add(scored{i, s})
		sc.score[i], sc.matched[i] = 0, 0
	}
	return sel.sorted(), len(sc.touched)
}

// selector keeps the top best of the scored tools added to it: a heap whose
// root is the worst kept, so that a ranking costs O(n log top), not
// O(n log n), when a page is a small part of many hits.
type selector struct {
	top  int
	kept []scored
}

func (s *selector) Len() int           { return len(s.kept) }
func (s *selector) Less(i, j int) bool { return better(s.kept[j], s.kept[i]) }
func (s *selector) Swap(i, j int)      { s.kept[i], s.kept[j] = s.kept[j], s.kept[i] }
func (s *selector) Push(x any)         { s.kept = append(s.kept, x.(scored)) }
func (s *selector) Pop() any {
	x := s.kept[len(s.kept)-1]
	s.kept = s.kept[:len(s.kept)-1]
	return x
}

func (s *selector) add(x scored) {
	switch {
	case s.top <= 0:
	case len(s.kept) < s.top:
		heap.Push(s, x)
	case better(x, s.kept[0]):
		s.kept[0] = x
		heap.Fix(s, 0)
	}
}

// sorted returns the kept tools, best first.
func (s *selector) sorted() []scored {
	slices.SortFunc(s.kept, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	return s.kept
}

// serverFit scores the servers against the query with BM25, each server
// taken as one document of all its tools' text, and scales the scores to
// [0, 1], 1 for the best server. A query no server matches gives all zeros.
func (c *Catalog) serverFit(cs []concept) []float64 {
	n := len(c.servers)
	fit, best, acc := make([]float64, n), make([]float64, n), make([]float64, n)
	for _, con := range cs {
		clear(best)
		for _, alt := range con.alts {
			clear(acc)
			for _, wt := range alt {
				for _, p := range c.index.servers[wt.term] {
					acc[p.doc] += wt.weight * float64(p.weight)
				}
			}
			for i := range best {
				best[i] = max(best[i], acc[i])
			}
		}
		for i := range fit {
			fit[i] += best[i]
		}
	}
	if top := slices.Max(append(fit, 0)); top > 0 {
		for i := range fit {
			fit[i] /= top
		}
	}
	return fit
}

// Ranking parameters. k1 and the b values are BM25's usual ones, with less
// length normalization for names, which are short and of much the same
// length. The weights and bonuses were set on the evaluation in
// search_quality_test.go; it is flat around them (moving any one of them by
// half or double changes top-1 by at most two queries of 108), so they are
// round values rather than a fit to the data.
const (
	k1 = 1.2

	nameCoverageBonus   = 0.5  // score × (1 + bonus × share of the name's words in the query)
	queryCoverageWeight = 0.5  // score × (1 - w + w × share of the query's words matched)
	serverFitBonus      = 0.5  // score × (1 + bonus × the server's fit, from 0 to 1)
	deprecatedFactor    = 0.75 // a deprecated tool yields to its replacement
	builtinFactor       = 0.8  // codecell's own tool yields to an upstream one that fits as well
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
	ids      map[string]int32 // term -> term ID, the index of its postings
	postings [][]posting      // by term ID
	idfs     []float64        // by term ID
	// servers indexes each server as one document made of its tools'
	// names, titles and descriptions, by term ID; a posting's doc is the
	// server's index.
	servers [][]posting
}

type posting struct {
	doc    int32
	weight float32
}

// idf returns the inverse document frequency of a term, and whether any
// tool has the term.
func (ix *index) idf(term string) (float64, bool) {
	id, ok := ix.ids[term]
	if !ok {
		return 0, false
	}
	return ix.idfs[id], true
}

// buildIndex indexes docs, whose server fields range over [0, nservers),
// and fills in their nameTerms and deprecated.
func buildIndex(docs []doc, nservers int) index {
	ix := index{ids: make(map[string]int32)}
	termID := func(t string) int32 {
		id, ok := ix.ids[t]
		if !ok {
			id = int32(len(ix.postings))
			ix.ids[t] = id
			ix.postings = append(ix.postings, nil)
		}
		return id
	}
	type fieldCounts struct {
		term int32
		n    [numFields]float32
	}
	type docTerms struct {
		tf  []fieldCounts // one per distinct term
		len [numFields]float64
	}
	all := make([]docTerms, len(docs))
	var totalLen [numFields]float64
	serverTF := make([]map[int32]float64, nservers)
	for i := range serverTF {
		serverTF[i] = make(map[int32]float64)
	}
	pos := make(map[int32]int) // term ID -> index in the doc's tf
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
		var dt docTerms
		clear(pos)
		for f, ts := range fields {
			for _, term := range ts {
				id := termID(term)
				j, ok := pos[id]
				if !ok {
					j = len(dt.tf)
					pos[id] = j
					dt.tf = append(dt.tf, fieldCounts{term: id})
				}
				dt.tf[j].n[f]++
				if f != fieldParamName && f != fieldParamDescription {
					serverTF[d.server][id]++
				}
			}
			dt.len[f] = float64(len(ts))
			totalLen[f] += float64(len(ts))
		}
		all[i] = dt
		for _, r := range runs(t.Name) {
			for _, term := range r.words {
				if id := ix.ids[term]; !slices.Contains(d.nameTerms, id) {
					d.nameTerms = append(d.nameTerms, id)
				}
			}
		}
		d.deprecated = isDeprecated(t)
	}

	var avgLen [numFields]float64
	for f := range avgLen {
		avgLen[f] = max(totalLen[f]/float64(max(len(docs), 1)), 1)
	}
	for i, dt := range all {
		var norm [numFields]float64
		for f := range norm {
			norm[f] = 1 - fieldB[f] + fieldB[f]*dt.len[f]/avgLen[f]
		}
		for _, fc := range dt.tf {
			tf := 0.0
			for f, n := range fc.n {
				tf += fieldWeight[f] * float64(n) / norm[f]
			}
			ix.postings[fc.term] = append(ix.postings[fc.term], posting{int32(i), float32(tf / (k1 + tf))})
		}
	}
	ix.idfs = make([]float64, len(ix.postings))
	for id, ps := range ix.postings {
		ix.idfs[id] = withIDF(ps, len(docs))
	}
	ix.servers = make([][]posting, len(ix.postings))
	for id, ps := range bm25(serverTF) {
		ix.servers[id] = ps
	}
	return ix
}

// withIDF multiplies the weights of a term's postings by the term's inverse
// document frequency among n documents, and returns it.
func withIDF(ps []posting, n int) float64 {
	df := float64(len(ps))
	idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
	for j := range ps {
		ps[j].weight *= float32(idf)
	}
	return idf
}

// bm25 makes a plain BM25 index of documents given by their term
// frequencies.
func bm25(tfs []map[int32]float64) map[int32][]posting {
	lens := make([]float64, len(tfs))
	total := 0.0
	for i, tf := range tfs {
		for _, n := range tf {
			lens[i] += n
		}
		total += lens[i]
	}
	avg := max(total/float64(max(len(tfs), 1)), 1)
	out := make(map[int32][]posting)
	for i, tf := range tfs {
		norm := 1 - 0.75 + 0.75*lens[i]/avg
		for term, n := range tf {
			x := n / norm
			out[term] = append(out[term], posting{int32(i), float32(x / (k1 + x))})
		}
	}
	for _, ps := range out {
		withIDF(ps, len(tfs))
	}
	return out
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

// shellCommand reads text as a shell command line when it looks like one:
// its first word is a command (commandMeaning), and it is short (at most
// four words) or has a flag ("-p") or a path ("logs/2026", "notes.md"). It
// returns the command's term and the terms of what it is used for; "" when
// text is no command line. "link Alice to Acme
// as an employee" is a request, not link(1): a command line names no
// people or firms.
func shellCommand(text string) (string, []string) {
	fields := strings.Fields(strings.ToLower(text))
	if len(fields) == 0 {
		return "", nil
	}
	desc, ok := commandMeaning(fields[0], fields[1:])
	if !ok {
		return "", nil
	}
	shell := len(fields) <= 4 && !proseCommands[fields[0]]
	for _, f := range strings.Fields(text)[1:] {
		if strings.HasPrefix(f, "-") || strings.ContainsAny(f, "/.*~") {
			shell = true
		}
		if isCapitalized(strings.Trim(f, "\"'`,;:!?.")) {
			// A name: a request, not a command line ("unlink
			// Alice from Acme").
			return "", nil
		}
	}
	cmd := terms(fields[0])
	if !shell || len(cmd) == 0 {
		return "", nil
	}
	return cmd[0], terms(desc)
}

// pronouns are the terms of indefinite pronouns: they stand for what the
// request is about, never for a tool or server of that name, so a tool's
// word that happens to be one ("everything", a server's name) counts only
// as a related word would.
var pronouns = map[string]bool{stem("everything"): true, stem("anything"): true, stem("something"): true, stem("nothing"): true}

// typoWeight is what a term within a typo of the query's word counts for.
const typoWeight = 0.8

// misspelt returns the terms of the catalog nearest to t by edit distance
// (transpositions count once), within one edit for words of up to five
// letters and two for longer ones; none for words under four letters,
// where a typo and another word cannot be told apart.
func (c *Catalog) misspelt(t string) []int32 {
	if len(t) < 4 {
		return nil
	}
	limit := 1
	if len(t) > 5 {
		limit = 2
	}
	var best []int32
	bestD := limit + 1
	for term, id := range c.index.ids {
		if d := editdist.Bounded(t, term, limit); d < bestD {
			best, bestD = []int32{id}, d
		} else if d == bestD {
			best = append(best, id)
		}
	}
	if len(best) > 3 {
		return nil // too many readings to guess one
	}
	slices.Sort(best)
	return best
}

// destroyingBonus favours the tools that destroy, by their server's
// annotations, for a request that asks to: less than the words of the
// request tell apart ("delete an entity" still wants delete_entities, not
// delete_relations).
const destroyingBonus = 1.25

// destructiveFactor puts a destructive tool after the others for a request
// that destroys nothing: scores differ by far less than this.
const destructiveFactor = 1e-6

// asksToDestroy reports whether the query's terms (as typed, or through
// synonyms and related words: "forget" asks to delete) name what a
// destructive tool of the catalog does: a word of its name.
func (c *Catalog) asksToDestroy(direct, synonym []int32) bool {
	for _, ids := range [][]int32{direct, synonym} {
		for _, id := range ids {
			if c.destroyTerms[id] {
				return true
			}
		}
	}
	return false
}

// negators turn the word after them into its opposite: "don't forget" asks
// to keep, not to delete.
var negators = map[string]bool{"don't": true, "dont": true, "do not": true, "never": true, "not": true, "without": true}

// dropNegated leaves out each word a negator stands before, with the
// negator: what the request says not to do it does not ask for.
func dropNegated(text string) string {
	fields := strings.Fields(text)
	out := fields[:0:0]
	for i := 0; i < len(fields); i++ {
		w := strings.ToLower(strings.Trim(fields[i], ",.;:!?\"'"))
		if negators[strings.ReplaceAll(w, "’", "'")] && i+1 < len(fields) {
			i++
			continue
		}
		out = append(out, fields[i])
	}
	return strings.Join(out, " ")
}

// fileNameWeight is what a file name counts for as the word "file" (and
// its media kind as that word): it says a file is meant as plainly as the
// word.
const fileNameWeight = 0.5

// fileNames takes the file names out of text ("config.yaml", "photos/cat.png",
// "https://example.com/data.json": a word with an extension of two to five
// letters and digits, not a web domain's; "README" and the like,
// wellKnownFiles) and the paths of directories (isDirPath), and returns the
// rest, how many files there were, the kinds of media (mediaKinds) their
// extensions name, and how many directories.
func fileNames(text string) (rest string, n int, kinds []string, dirs int) {
	fields := strings.Fields(text)
	out := fields[:0:0]
	for _, f := range fields {
		name := strings.TrimRight(strings.Trim(f, "\"'`()[]{}<>,;:!?"), ".")
		if wellKnownFiles[strings.ToLower(name)] {
			n++
			continue
		}
		dot := strings.LastIndexByte(name, '.')
		ext := strings.ToLower(name[dot+1:])
		if dot <= 0 || !isExtension(ext) || strings.ContainsRune(".-/", rune(name[dot-1])) {
			if isDirPath(name) {
				dirs++
				continue
			}
			out = append(out, f)
			continue
		}
		n++
		if k, ok := mediaKinds[ext]; ok && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return strings.Join(out, " "), n, kinds, dirs
}

// wellKnownFiles are the names of files that have no extension yet are
// plainly files: a project's README, its LICENSE, its build files, its
// dot files. Lower-case, as the match is.
var wellKnownFiles = map[string]bool{
	"readme": true, "license": true, "licence": true, "changelog": true, "copying": true,
	"authors": true, "contributing": true, "makefile": true, "dockerfile": true,
	"gemfile": true, "procfile": true, "jenkinsfile": true, "vagrantfile": true,
	".gitignore": true, ".dockerignore": true, ".env": true, ".bashrc": true,
	".zshrc": true, ".profile": true, ".editorconfig": true, ".npmrc": true,
}

// isDirPath reports whether a word is a path without a file name's
// extension ("src/", "/home/me/projects", "~/Downloads", "logs/2026"): a
// directory, most likely. A web address, a pattern ("*.go") or words
// joined by a slash ("read/write", "file/folder") are none.
func isDirPath(w string) bool {
	if !strings.Contains(w, "/") || strings.Contains(w, "://") || strings.ContainsAny(w, "*?[]{}") {
		return false
	}
	last := w[strings.LastIndexByte(w, '/')+1:]
	if strings.Contains(strings.TrimPrefix(last, "."), ".") {
		return false
	}
	if strings.HasSuffix(w, "/") || strings.ContainsAny(w[:1], "/~.") {
		return true
	}
	for _, part := range strings.Split(w, "/") {
		if ts := terms(part); len(ts) != 1 || !isEnglish(ts[0]) && synonyms[ts[0]] == nil && related[ts[0]] == nil {
			return true
		}
	}
	return false
}

// isExtension reports whether a lower-case word can be a file name's
// extension: two to five letters and digits, a letter first, and no web
// domain's ending.
func isExtension(ext string) bool {
	if len(ext) < 2 || len(ext) > 5 || ext[0] < 'a' || ext[0] > 'z' {
		return false
	}
	for _, r := range ext {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	switch ext {
	case "com", "org", "net", "edu", "gov":
		return false
	}
	return true
}

// namedWords are the terms of tools for named things: what a proper name
// in a request is a name of.
var namedWords = []string{"name", "entity"}

// properNameWeight is what a proper name counts for as the words of named
// things: less than a word typed, as "Alice" may be the name of anything.
const properNameWeight = 0.3

// properNames finds the proper names of text that no tool uses: a
// capitalized word ("Alice", "Acme's") that does not start a sentence, has
// no other capital ("URIs", "GitHub" are no names of people or firms) and
// is no term of the catalog. It returns text without those that WordNet
// relates to nothing, and how many there were.
func (c *Catalog) properNames(text string) (rest string, n int) {
	fields := strings.Fields(text)
	out := fields[:0:0]
	start := true // the next word starts a sentence
	for _, f := range fields {
		w := strings.Trim(f, "\"'`()[]{}<>,;:!?.")
		w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
		name := !start && len(w) > 1 && isCapitalized(w)
		if name {
			if _, known := c.index.ids[stem(strings.ToLower(w))]; known {
				name = false
			}
		}
		start = strings.ContainsAny(f[len(f)-1:], ".!?")
		if name {
			n++
			continue
		}
		out = append(out, f)
	}
	return strings.Join(out, " "), n
}

// isCapitalized reports whether w is a capital letter followed by
// lower-case letters only.
func isCapitalized(w string) bool {
	for i, r := range w {
		if i == 0 && !unicode.IsUpper(r) || i > 0 && !unicode.IsLower(r) {
			return false
		}
	}
	return true
}

// redirectsToFile reports whether text holds a shell redirection of output
// to a file ("echo hi > notes.txt", ">> log.md"): it asks to write the file.
func redirectsToFile(text string) bool {
	fields := strings.Fields(text)
	for i, f := range fields {
		if !strings.HasPrefix(f, ">") {
			continue
		}
		target := strings.TrimLeft(f, ">")
		if target == "" && i+1 < len(fields) {
			target = fields[i+1]
		}
		if _, n, _, _ := fileNames(target); n > 0 {
			return true
		}
	}
	return false
}
