package catalog

import (
	"slices"
	"strings"
)

// Nearest ranks the tools in q's scope by how close their words are to the
// words of q.Text in spelling, for a search that found nothing: a typo
// ("serch fles"), a word in another form than the tool's ("gzipped") or a
// name half remembered. Each query word scores its best match among the
// words of a tool's name, title and the first sentence of its description,
// by the Dice coefficient of their letter trigrams (0.4 at least, so that
// chance overlaps of short words do not count); a tool's score is the sum.
// Tools with no such match are left out, so the result may be empty.
// Limit and Offset page as in Search; Score is the similarity.
func (c *Catalog) Nearest(q Query) Result {
	limit, offset, server, ok := c.scope(q)
	if !ok {
		return Result{}
	}
	var want [][]string // each query word's trigrams
	for _, w := range words(q.Text) {
		want = append(want, trigrams(w))
	}
	if len(want) == 0 {
		return Result{}
	}
	sel := selector{top: offset + limit}
	total := 0
	for i := range c.docs {
		d := &c.docs[i]
		if server >= 0 && d.server != server {
			continue
		}
		first, _, _ := strings.Cut(d.tool.Description, ". ")
		var have [][]string
		for _, w := range words(d.tool.Name + " " + d.tool.Title + " " + first) {
			have = append(have, trigrams(w))
		}
		score := 0.0
		for _, q := range want {
			best := 0.0
			for _, h := range have {
				best = max(best, dice(q, h))
			}
			if best >= minNearSimilarity {
				score += best
			}
		}
		if score > 0 {
			total++
			sel.add(scored{int32(i), score})
		}
	}
	r := Result{Total: total}
	ranked := sel.sorted()
	if offset < len(ranked) {
		for _, h := range ranked[offset:] {
			r.Hits = append(r.Hits, Hit{Tool: c.docs[h.doc].tool, Score: h.score})
		}
	}
	return r
}

// minNearSimilarity is the least trigram similarity that counts in Nearest.
const minNearSimilarity = 0.4

// words returns the lower-case words of s that are not stop words,
// unstemmed: spelling is compared as written.
func words(s string) []string {
	var out []string
	scan(s, func(start, end int, _ bool) {
		if w := strings.ToLower(s[start:end]); !isStopWord(w) && len(w) > 1 && !slices.Contains(out, w) {
			out = append(out, w)
		}
	})
	return out
}

// trigrams returns the letter trigrams of a word padded with spaces, sorted
// and distinct: "file" gives "  f", " fi", "fil", "ile", "le ".
func trigrams(w string) []string {
	r := []rune("  " + w + " ")
	out := make([]string, 0, len(r))
	for i := 0; i+3 <= len(r); i++ {
		out = append(out, string(r[i:i+3]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// dice is the Dice coefficient of two sorted sets.
func dice(a, b []string) float64 {
	if len(a)+len(b) == 0 {
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch strings.Compare(a[i], b[j]) {
		case 0:
			common++
			i++
			j++
		case -1:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}
