package catalog

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// splitWords splits s into words: at every character that is neither a
// letter nor a digit, between a lower-case letter and an upper-case one
// ("getTiny"), before the last capital of a run followed by a lower-case
// letter ("HTMLParser" is HTML Parser) and between letters and digits
// ("base64" is base 64). The words keep their case.
func splitWords(s string) []string {
	spans := wordSpans(s)
	words := make([]string, len(spans))
	for i, sp := range spans {
		words[i] = s[sp[0]:sp[1]]
	}
	return words
}

// wordSpans returns the byte offsets [start, end) of the words of
// splitWords.
func wordSpans(s string) [][2]int {
	var spans [][2]int
	start := -1 // byte offset of the current word, or -1
	var prev rune
	for i, r := range s {
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		if !alnum {
			if start >= 0 {
				spans = append(spans, [2]int{start, i})
				start = -1
			}
			continue
		}
		if start >= 0 && isBoundary(prev, r, s[i+utf8.RuneLen(r):]) {
			spans = append(spans, [2]int{start, i})
			start = -1
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	if start >= 0 {
		spans = append(spans, [2]int{start, len(s)})
	}
	return spans
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

// A run is a maximal run of letters and digits of a text, as splitWords
// cuts it into words: "GitHub" is one run of two words.
type run struct {
	words []string // its words, lower-cased and stemmed, without stop words
	whole string   // the run as one term if splitWords cut it up, else ""
}

// runs analyzes text into runs.
func runs(s string) []run {
	spans := wordSpans(s)
	var out []run
	var cur run
	first := 0 // index of the first span of the current run
	for i, sp := range spans {
		w := strings.ToLower(s[sp[0]:sp[1]])
		if !stopWords[w] {
			cur.words = append(cur.words, stem(w))
		}
		if i+1 < len(spans) && spans[i+1][0] == sp[1] {
			continue // the run goes on
		}
		if i > first {
			cur.whole = stem(strings.ToLower(s[spans[first][0]:sp[1]]))
		}
		if len(cur.words) > 0 || cur.whole != "" {
			out = append(out, cur)
		}
		cur, first = run{}, i+1
	}
	return out
}

// terms turns text into index terms: its words, lower-cased, without stop
// words, stemmed. A run of letters and digits that splitWords cut up is a
// term as a whole too, so that "GitHub" also meets the server "github", and
// "S3", "ec2" and "base64" can be found whole as well as by their parts.
func terms(s string) []string {
	var out []string
	for _, r := range runs(s) {
		out = append(out, r.words...)
		if r.whole != "" {
			out = append(out, r.whole)
		}
	}
	return out
}

// stopWords are dropped from tools and queries alike: English function words
// and the politeness and filler an agent puts into a request ("please show
// me how to ..."). Deliberately small: words such as "get", "list", "new" or
// "all" carry meaning in tool names.
var stopWords = func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(`
		a an the and or but of to in on at by for from with without into onto
		about as is are was were be been being am it its this that these those
		there here i me my we us our you your he she they them their his her
		do does did can could would should will shall may might must
		what which who whom whose how when where why
		please want need like just also then than so such some any
		if else not no yes via per using use e g eg ie etc s t`) {
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
// object, plus common abbreviations. They are general vocabulary of tool
// APIs, not tuned to any query set: a query word also matches the other words
// of its group, at synonymWeight.
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
	{"configuration", "config", "settings"},
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
