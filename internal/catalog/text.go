package catalog

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// scan splits s into words and calls fn with the byte offsets [start, end)
// of each, and whether the word ends a run of letters and digits. A word
// ends at every character that is neither a letter nor a digit, between a
// lower-case letter and an upper-case one ("getTiny"), before the last
// capital of a run followed by a lower-case letter ("HTMLParser" is HTML
// Parser) and between letters and digits ("base64" is base 64).
func scan(s string, fn func(start, end int, runEnd bool)) {
	start := -1 // byte offset of the current word, or -1
	var prev rune
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				fn(start, i, true)
				start = -1
			}
			continue
		}
		if start >= 0 && isBoundary(prev, r, s[i+utf8.RuneLen(r):]) {
			fn(start, i, false)
			start = -1
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	if start >= 0 {
		fn(start, len(s), true)
	}
}

// isBoundary reports whether a new word starts at r, which follows prev
// within a run of letters and digits; rest is the text after r.
func isBoundary(prev, r rune, rest string) bool {
	switch {
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	}
	return false
}

// analyze turns text into terms: it calls word with each word of s that is
// not a stop word, lower-cased and stemmed, and after the words of each run
// of letters and digits, runEnd with the run as one term if scan cut it
// into several words ("GitHub" gives "git", "hub", then "github"), else "".
func analyze(s string, word func(string), runEnd func(whole string)) {
	runStart, words := -1, 0
	scan(s, func(start, end int, last bool) {
		if runStart < 0 {
			runStart = start
		}
		words++
		if w := strings.ToLower(s[start:end]); !isStopWord(w) {
			word(stem(w))
		}
		if !last {
			return
		}
		whole := ""
		if words > 1 {
			whole = stem(strings.ToLower(s[runStart:end]))
		}
		runEnd(whole)
		runStart, words = -1, 0
	})
}

// A run is a maximal run of letters and digits of a text, as scan cuts it
// into words: "GitHub" is one run of two words.
type run struct {
	words []string // its words, lower-cased and stemmed, without stop words
	whole string   // the run as one term if scan cut it up, else ""
}

// runs analyzes text into runs, leaving out those with nothing left.
func runs(s string) []run {
	var out []run
	var cur []string
	analyze(s, func(w string) { cur = append(cur, w) }, func(whole string) {
		if len(cur) > 0 || whole != "" {
			out = append(out, run{cur, whole})
		}
		cur = nil
	})
	return out
}

// terms turns text into index terms: its words, lower-cased, without stop
// words, stemmed. A run of letters and digits that scan cut up is a term as
// a whole too, so that "GitHub" also meets the server "github", and "S3",
// "ec2" and "base64" can be found whole as well as by their parts.
func terms(s string) []string {
	var out []string
	analyze(s, func(w string) { out = append(out, w) }, func(whole string) {
		if whole != "" {
			out = append(out, whole)
		}
	})
	return out
}

// isStopWord reports whether a lower-case word is dropped from tools and
// queries alike: a single letter (the "s" of "user's", parameters named "a"
// and "b") or one of stopWords.
func isStopWord(w string) bool {
	return len(w) == 1 && w[0] >= 'a' && w[0] <= 'z' || stopWords[w]
}

// stopWords are English function words, what is left of their
// contractions ("don't" is "don" and "t", "they're" "they" and "re"), and
// the politeness and filler an agent puts into a request ("please show me
// how to ..."). Deliberately
// small: words such as "get", "list", "new" or "all" carry meaning in tool
// names.
var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`
		an the and or but of to in on at by for from with without into onto
		about as is are was were be been being am it its this that these those
		there here me my we us our you your he she they them their his her
		do does did can could would should will shall may might must
		what which who whom whose how when where why
		please want need like just also then than so such some any
		if else not no yes via per using use eg ie etc
		don doesn didn isn aren wasn weren won wouldn couldn shouldn hasn
		haven hadn mustn ll re ve`) {
		m[w] = true
	}
	return m
}()

// stem strips inflectional suffixes from a lower-case word so that its forms
// meet: plurals ("entities", "boxes", "files"), "-ing" and "-ed" ("reading",
// "created", "stopped") and a final silent "e" (so "create", "creates",
// "created" and "creating" all become "creat"). It is a much reduced cousin of
// Porter's step 1, chosen for tool descriptions: it never strips derivational
// suffixes, so "directory" and "direct" stay apart. Stems need not be words.
// Words with anything but ASCII letters are returned unchanged.
func stem(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	if len(w) <= 3 {
		if len(w) == 3 && w[2] == 's' && w[1] != 's' && w[1] != 'u' && w[1] != 'i' {
			return w[:2] // ids, urls -> id, url
		}
		return w
	}
	// Plurals and third person.
	switch {
	case strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zes"),
		strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	// Past tense and gerund.
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "eed"):
		// need, feed, speed: not a suffix
	case strings.HasSuffix(w, "ed") && hasVowel(w[:len(w)-2]) && len(w)-2 >= 3:
		w = undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "ing") && hasVowel(w[:len(w)-3]) && len(w)-3 >= 3:
		w = undouble(w[:len(w)-3])
	}
	// Silent e, so that the stripped forms above meet the base form.
	if len(w) >= 4 && w[len(w)-1] == 'e' && w[len(w)-2] != 'e' {
		w = w[:len(w)-1]
	}
	return w
}

func hasVowel(s string) bool { return strings.ContainsAny(s, "aeiouy") }

// undouble turns "runn" (from "running") into "run", except for l, s and z
// ("pulling", "passing") and where it would leave fewer than three letters
// ("adding" stays "add").
func undouble(w string) string {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouylsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// synonymGroups are small sets of words an agent uses for the same action or
// object, plus common abbreviations. They are meant as general vocabulary of
// tool APIs, not as a fit to any query set; a word that stems to a common
// verb ("settings" is "set") stays out. A query word also matches the other
// words of its group, at synonymWeight.
var synonymGroups = [][]string{
	{"file", "document"},
	{"issue", "ticket"},
	{"url", "link"},
	{"event", "meeting", "appointment"},
	{"folder", "directory", "dir"},
	{"delete", "remove", "erase"},
	{"list", "show", "enumerate"},
	{"create", "add", "new", "make", "generate"},
	{"get", "read", "fetch", "retrieve"},
	{"update", "edit", "modify", "change"},
	{"search", "find", "lookup"},
	{"send", "post"},
	{"image", "picture", "photo"},
	{"email", "mail"},
	{"repository", "repo"},
	{"environment", "env"},
	{"message", "msg"},
	{"database", "db"},
	{"configuration", "config"},
	{"information", "info", "metadata", "details"},
	{"run", "execute"},
	{"start", "begin", "launch"},
	{"stop", "halt"},
}

// synonymWeight scales a synonym's contribution relative to the query word
// itself, so that a tool using the agent's own word still ranks first.
const synonymWeight = 0.5

// synonyms maps a stemmed term to the stemmed other members of its groups.
var synonyms = func() map[string][]string {
	m := make(map[string][]string)
	for _, g := range synonymGroups {
		for _, a := range g {
			for _, b := range g {
				if a != b {
					m[stem(a)] = append(m[stem(a)], stem(b))
				}
			}
		}
	}
	return m
}()
