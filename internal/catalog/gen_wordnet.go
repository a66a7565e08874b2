//go:build ignore

// gen_wordnet writes wordnet.go: for the common words of English, the words
// WordNet relates them to that tools are likely to use, for search to read a
// request in the words the tools use ("put the folder inside archive" asks
// to move it, "the biggest files" for their size). Run on a Debian machine
// with the package wordnet-base:
//
//	go run gen_wordnet.go | gofmt > wordnet.go
//
// What it keeps, so that the file stays small and the relation sensible:
//
//   - keys: single words attested in WordNet's sense-tagged corpus
//     (cntlist.rev), with their irregular forms (*.exc: "biggest", "told");
//   - senses: a word's most frequent senses only (WordNet orders them by
//     frequency; those its corpus tagged, at most maxSenses, else the first);
//   - relations, close: the other words of the sense's synset, the words
//     derivationally related to the word itself ("editor" and "edit"), an
//     adjective's attribute ("big" and "size"), an adverb's adjective
//     ("recursively" and "recursive"); broad: the words of the sense's
//     hypernyms, one level up ("put" is a way to "move");
//   - values: words of tool vocabulary, that is words of the tool fixtures
//     of testdata and of commands.go, or common words (a total tag count of
//     at least minValueFreq in the corpus).
//
// The output does not depend on map order: keys and values are sorted.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	dict         = flag.String("dict", "/usr/share/wordnet", "WordNet database directory")
	maxSenses    = flag.Int("senses", 3, "most senses of a word to relate")
	minValueFreq = flag.Int("minfreq", 150, "least corpus tag count of a common word that may be a value")
)

type synset struct {
	words     []string
	ptrs      []pointer
	satellite bool // an adjective satellite: similar to its head adjective
}

type pointer struct {
	symbol string
	target string // pos:offset
	src    int    // word number in this synset, 0 for the whole synset
	dst    int
}

var (
	synsets = map[string]*synset{}  // "n:00001740" -> synset
	index   = map[string][]string{} // "n:word" -> synset keys, most frequent first
	tagged  = map[string]int{}      // "n:word" -> tagged senses
	freq    = map[string]int{}      // word -> total tag count, all parts of speech
	except  = map[string][]string{} // irregular form -> base forms
	posName = map[string]string{"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
	plain   = regexp.MustCompile(`^[a-z][a-z]+$`)
)

func main() {
	flag.Parse()
	for _, p := range []string{"n", "v", "a", "r"} {
		readData(p)
		readIndex(p)
		readExceptions(p)
	}
	readCounts()
	tools := toolWords()

	isValue := func(w string) bool { return tools[w] || freq[w] >= *minValueFreq }
	close := map[string]map[string]bool{}
	broad := map[string]map[string]bool{}
	add := func(m map[string]map[string]bool, k, v string) {
		if k == v || !plain.MatchString(v) || !isValue(v) {
			return
		}
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	var keys []string
	for w, n := range freq {
		if n > 0 && plain.MatchString(w) {
			keys = append(keys, w)
		}
	}
	slices.Sort(keys)
	for _, w := range keys {
		for _, p := range []string{"n", "v", "a", "r"} {
			offs := index[p+":"+w]
			n := min(max(tagged[p+":"+w], 1), *maxSenses, len(offs))
			for _, off := range offs[:n] {
				s := synsets[off]
				me := slices.Index(s.words, w) + 1
				for _, o := range s.words {
					add(close, w, o)
				}
				for _, ptr := range s.ptrs {
					t := synsets[ptr.target]
					switch {
					case ptr.symbol == "@" || ptr.symbol == "@i":
						for _, o := range t.words {
							add(broad, w, o)
						}
					case ptr.symbol == "&" && s.satellite:
						// "biggest" is similar to "large"; not the other
						// way, which would relate "large" to "gigantic".
						for _, o := range t.words {
							add(close, w, o)
						}
					case ptr.symbol == "=":
						for _, o := range t.words {
							add(close, w, o)
						}
					case ptr.symbol == "+" || ptr.symbol == `\`:
						// The word's derived forms, and those of its
						// synonyms in this sense: "connect" is "relate",
						// whose noun is "relation".
						if ptr.src == me || ptr.src > 0 && plain.MatchString(s.words[ptr.src-1]) {
							add(close, w, t.words[ptr.dst-1])
						}
					}
				}
			}
		}
	}
	// Irregular forms relate as their base forms do, and to them.
	forms := slices.Sorted(mapsKeys(except))
	for _, f := range forms {
		if !plain.MatchString(f) {
			continue
		}
		for _, b := range except[f] {
			if close[b] == nil && broad[b] == nil {
				continue
			}
			add(close, f, b)
			for v := range close[b] {
				add(close, f, v)
			}
			for v := range broad[b] {
				add(broad, f, v)
			}
		}
	}

	all := map[string]bool{}
	for k := range close {
		all[k] = true
	}
	for k := range broad {
		all[k] = true
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprint(w, header)
	fmt.Fprintf(w, "// Parameters: -senses %d -minfreq %d.\n\npackage catalog\n\n", *maxSenses, *minValueFreq)
	fmt.Fprint(w, "// wordnetData is one line per word: the word, its close relations and\n// its broad ones, separated by tabs, each list separated by spaces.\nconst wordnetData = `")
	for _, k := range slices.Sorted(mapsKeys(all)) {
		fmt.Fprintf(w, "%s\t%s\t%s\n", k, strings.Join(slices.Sorted(mapsKeys(close[k])), " "),
			strings.Join(slices.Sorted(mapsKeys(broad[k])), " "))
	}
	fmt.Fprint(w, "`\n\n")
	// The other words of the corpus, so that search knows them for words
	// and does not read them as typos of tool words ("append" is not
	// "depend").
	var known []string
	for _, k := range keys {
		if !all[k] {
			known = append(known, k)
		}
	}
	fmt.Fprint(w, "// wordnetKnown lists the other words of WordNet's corpus, separated by\n// spaces.\nconst wordnetKnown = `")
	for i, k := range known {
		sep := " "
		if i%16 == 15 || i == len(known)-1 {
			sep = "\n"
		}
		fmt.Fprint(w, k, sep)
	}
	fmt.Fprint(w, "`\n")
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func lines(name string, fn func(string)) {
	f, err := os.Open(filepath.Join(*dict, name))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); !strings.HasPrefix(l, "  ") {
			fn(l)
		}
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
}

func lemma(w string) string {
	if i := strings.IndexByte(w, '('); i >= 0 { // adjective markers: "big(a)"
		w = w[:i]
	}
	return strings.ToLower(w)
}

func normPos(p string) string {
	if p == "s" {
		return "a"
	}
	return p
}

// readData reads data.pos: offset lex_filenum ss_type w_cnt word lex_id ...
// p_cnt pointer_symbol offset pos source/target ... | gloss.
func readData(p string) {
	lines("data."+posName[p], func(l string) {
		head, _, _ := strings.Cut(l, " | ")
		f := strings.Fields(head)
		n, _ := strconv.ParseInt(f[3], 16, 0)
		s := &synset{satellite: f[2] == "s"}
		i := 4
		for range n {
			s.words = append(s.words, lemma(f[i]))
			i += 2
		}
		pc, _ := strconv.Atoi(f[i])
		i++
		for range pc {
			st := f[i+3]
			src, _ := strconv.ParseInt(st[:2], 16, 0)
			dst, _ := strconv.ParseInt(st[2:], 16, 0)
			s.ptrs = append(s.ptrs, pointer{f[i], normPos(f[i+2]) + ":" + f[i+1], int(src), int(dst)})
			i += 4
		}
		synsets[p+":"+f[0]] = s
	})
}

// readIndex reads index.pos: lemma pos synset_cnt p_cnt [ptr_symbol...]
// sense_cnt tagsense_cnt synset_offset....
func readIndex(p string) {
	lines("index."+posName[p], func(l string) {
		f := strings.Fields(l)
		sc, _ := strconv.Atoi(f[2])
		pc, _ := strconv.Atoi(f[3])
		i := 4 + pc
		tag, _ := strconv.Atoi(f[i+1])
		for _, off := range f[i+2 : i+2+sc] {
			index[p+":"+f[0]] = append(index[p+":"+f[0]], p+":"+off)
		}
		tagged[p+":"+f[0]] = tag
	})
}

func readExceptions(p string) {
	lines(posName[p]+".exc", func(l string) {
		f := strings.Fields(l)
		except[f[0]] = append(except[f[0]], f[1:]...)
	})
}

// readCounts reads cntlist.rev: sense_key sense_number tag_cnt.
func readCounts() {
	lines("cntlist.rev", func(l string) {
		f := strings.Fields(l)
		w, _, _ := strings.Cut(f[0], "%")
		n, _ := strconv.Atoi(f[2])
		freq[w] += n
	})
}

// toolWords returns the lower-case words of the tool fixtures' names,
// titles and descriptions and of the base tools' man page summaries.
func toolWords() map[string]bool {
	words := map[string]bool{}
	split := regexp.MustCompile(`[A-Za-z]+`)
	addText := func(s string) {
		for _, m := range split.FindAllString(s, -1) {
			// camelCase and snake_case parts, as the search reads them.
			for _, part := range regexp.MustCompile(`[A-Z]?[a-z]+|[A-Z]+`).FindAllString(m, -1) {
				for _, b := range morphy(strings.ToLower(part)) {
					words[b] = true
				}
			}
		}
	}
	for _, name := range []string{"testdata/upstream_tools.json", "testdata/synthetic_tools.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			log.Fatal(err)
		}
		var tools []struct{ Name, Title, Description string }
		if err := json.Unmarshal(b, &tools); err != nil {
			log.Fatal(err)
		}
		for _, t := range tools {
			addText(t.Name + " " + t.Title + " " + t.Description)
		}
	}
	b, err := os.ReadFile("commands.go")
	if err != nil {
		log.Fatal(err)
	}
	addText(string(b))
	return words
}

const header = `// Code generated by gen_wordnet.go from WordNet 3.0 (Debian's wordnet-base); DO NOT EDIT.

// This file holds relations between words derived from WordNet, whose
// licence asks that its notice appear on all copies:
//
// WordNet Release 3.0. This software and database is being provided to you,
// the LICENSEE, by Princeton University under the following license. By
// obtaining, using and/or copying this software and database, you agree that
// you have read, understood, and will comply with these terms and
// conditions.: Permission to use, copy, modify and distribute this software
// and database and its documentation for any purpose and without fee or
// royalty is hereby granted, provided that you agree to comply with the
// following copyright notice and statements, including the disclaimer, and
// that the same appear on ALL copies of the software, database and
// documentation, including modifications that you make for internal use or
// for distribution. WordNet 3.0 Copyright 2006 by Princeton University. All
// rights reserved. THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND
// PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR
// IMPLIED. BY WAY OF EXAMPLE, BUT NOT LIMITATION, PRINCETON UNIVERSITY MAKES
// NO REPRESENTATIONS OR WARRANTIES OF MERCHANT- ABILITY OR FITNESS FOR ANY
// PARTICULAR PURPOSE OR THAT THE USE OF THE LICENSED SOFTWARE, DATABASE OR
// DOCUMENTATION WILL NOT INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS,
// TRADEMARKS OR OTHER RIGHTS. The name of Princeton University or Princeton
// may not be used in advertising or publicity pertaining to distribution of
// the software and/or database. Title to copyright in this software,
// database and any associated documentation shall at all times remain with
// Princeton University and LICENSEE agrees to preserve same.
//
`

// detachments are WordNet's morphy rules: suffixes of inflected forms and
// what replaces them in the base form.
var detachments = [][2]string{
	{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"},
	{"men", "man"}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""},
	{"ing", "e"}, {"ing", ""}, {"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"},
}

// morphy returns w and the base forms WordNet knows for it, as its morphy
// finds them: the exception lists, then the detachment rules.
func morphy(w string) []string {
	out := []string{w}
	out = append(out, except[w]...)
	for _, d := range detachments {
		if b, ok := strings.CutSuffix(w, d[0]); ok && freq[b+d[1]] > 0 {
			out = append(out, b+d[1])
		}
	}
	return out
}
