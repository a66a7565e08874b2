package pii

import (
	"strings"
	"unicode"
)

// Some values are personal data only where a label says what they are: nine
// digits are an SSN after "SSN:", a bare run of digits a phone number in a
// "phone" column. The label is looked for just before the value on its own
// line (a log's "ssn=", a YAML or JSON key, a sentence's "my SSN is") and,
// in a delimited table, in the column's header.

// labelWindow is how far before a value its label may start.
const labelWindow = 48

// filler are words that may stand between a label and its value: "SSN
// number", "phone no.", "tel #", "my SSN is".
var filler = map[string]bool{
	"is": true, "was": true, "number": true, "no": true, "nr": true, "num": true, "nbr": true,
	"of": true, "the": true, "my": true, "his": true, "her": true, "their": true, "your": true, "our": true,
	"primary": true, "main": true, "home": true, "work": true, "office": true, "personal": true,
	"value": true, "field": true, "id": true, "at": true, "on": true,
}

// labelWords splits a label into lower-case words: separators, case changes
// ("ssnNumber") and digits ("phone2") end a word.
func labelWords(s string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	var prev rune
	inName := false // the current run of letters and digits began with a letter
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			inName = true
			b.WriteRune(unicode.ToLower(r))
		case unicode.IsDigit(r):
			flush()
			// Digits after letters end a name ("phone2"); digits on
			// their own are a value, after which no label follows.
			if !inName && !unicode.IsDigit(prev) {
				words = append(words, "0")
			}
		default:
			flush()
			inName = false
		}
		prev = r
	}
	flush()
	return words
}

// endsWithLabel reports whether the words end, past any filler, with one of
// labels (each one or two words: "social security").
func endsWithLabel(words []string, labels map[string]bool) bool {
	n := len(words)
	for n > 0 && filler[words[n-1]] {
		n--
	}
	if n == 0 {
		return false
	}
	if labels[words[n-1]] {
		return true
	}
	return n >= 2 && labels[words[n-2]+" "+words[n-1]]
}

// labelled reports whether the value at text[start:] stands under one of
// labels: just before it on its line, or as its column's header.
func (s *scan) labelled(start int, labels map[string]bool) bool {
	lineStart := strings.LastIndexByte(s.text[:start], '\n') + 1
	before := s.text[max(lineStart, start-labelWindow):start]
	// What separates a label from its value: quotes, colons, equals signs,
	// brackets and the like; a label must come right before it.
	trimmed := strings.TrimRightFunc(before, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(`"':=#>,;|([{-/?&`, r)
	})
	if len(trimmed) < len(before) && endsWithLabel(labelWords(trimmed), labels) {
		return true
	}
	if h := s.header(); h != nil {
		if name, ok := h.column(s.text, start); ok && endsWithLabel(labelWords(name), labels) {
			return true
		}
	}
	return false
}

// labelledExact is labelled without skipping filler words: the label is the
// last word before the value ("order no 0345-221-908" counts "no").
func (s *scan) labelledExact(start int, labels map[string]bool) bool {
	lineStart := strings.LastIndexByte(s.text[:start], '\n') + 1
	before := s.text[max(lineStart, start-labelWindow):start]
	trimmed := strings.TrimRightFunc(before, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(`"':=#>,;|([{-`, r)
	})
	var w []string
	if len(trimmed) < len(before) {
		w = labelWords(trimmed)
	}
	if len(w) > 0 && labels[w[len(w)-1]] {
		return true
	}
	if h := s.header(); h != nil {
		if name, ok := h.column(s.text, start); ok {
			w := labelWords(name)
			return len(w) > 0 && labels[w[len(w)-1]]
		}
	}
	return false
}

// csvHeader is the first line of a delimited table.
type csvHeader struct {
	delim  byte
	names  []string
	endPos int // where the header line ends
}

// header returns the text's table header, or nil when its first line does
// not read as one: two or more fields, delimited by a comma, semicolon, tab
// or bar, each a short name.
func (s *scan) header() *csvHeader {
	if s.csvDone {
		return s.csv
	}
	s.csvDone = true
	text := strings.TrimLeft(s.text, "\r\n")
	offset := len(s.text) - len(text)
	end := strings.IndexByte(text, '\n')
	if end < 0 {
		return nil // one line: no table
	}
	line := strings.TrimRight(text[:end], "\r")
	for _, delim := range []byte{',', ';', '\t', '|'} {
		names := splitFields(line, delim)
		if len(names) < 2 {
			continue
		}
		ok := true
		for _, n := range names {
			n = strings.TrimSpace(strings.Trim(n, `"`))
			if n == "" || len(n) > 40 || strings.ContainsAny(n, "@") || !unicode.IsLetter(rune(n[0])) {
				ok = false
				break
			}
		}
		if ok {
			s.csv = &csvHeader{delim: delim, names: names, endPos: offset + end}
			return s.csv
		}
	}
	return nil
}

// column is the header name of the field that text[pos] is in, if its line
// has as many fields as the header.
func (h *csvHeader) column(text string, pos int) (string, bool) {
	if pos <= h.endPos {
		return "", false
	}
	lineStart := strings.LastIndexByte(text[:pos], '\n') + 1
	lineEnd := strings.IndexByte(text[pos:], '\n')
	if lineEnd < 0 {
		lineEnd = len(text)
	} else {
		lineEnd += pos
	}
	line := strings.TrimRight(text[lineStart:lineEnd], "\r")
	if len(splitFields(line, h.delim)) != len(h.names) {
		return "", false
	}
	idx := len(splitFields(text[lineStart:pos], h.delim)) - 1
	if idx < 0 || idx >= len(h.names) {
		return "", false
	}
	return strings.TrimSpace(strings.Trim(h.names[idx], `"`)), true
}

// splitFields splits a delimited line, keeping delimiters inside double
// quotes.
func splitFields(line string, delim byte) []string {
	var out []string
	quoted := false
	last := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"':
			quoted = !quoted
		case delim:
			if !quoted {
				out = append(out, line[last:i])
				last = i + 1
			}
		}
	}
	return append(out, line[last:])
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
