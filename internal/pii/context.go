package pii

import (
	"regexp"
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
	"is": true, "was": true, "me": true, "us": true, "him": true, "them": true, "reach": true, "to": true, "number": true, "no": true, "nr": true, "num": true, "nbr": true,
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
	inName := false // the current run of letters, digits, _ and - began with a letter
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
			// Digits in a name end a word ("phone2", "SSN_1"); digits
			// on their own are a value, after which no label follows.
			if !inName && !unicode.IsDigit(prev) {
				words = append(words, "0")
			}
		case r == '_' || r == '-' || r == '.':
			flush() // a name goes on: SSN_1, e-mail
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
	if n := len(words); n >= 2 && labels[words[n-2]+" "+words[n-1]] {
		return true
	}
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
	if name, ok := s.column(start); ok && endsWithLabel(labelWords(name), labels) {
		return true
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
	if name, ok := s.column(start); ok {
		w := labelWords(name)
		return len(w) > 0 && labels[w[len(w)-1]]
	}
	return false
}

// table is a block of delimited lines (CSV, TSV, a Markdown table) under a
// header line of names, or of lines whose columns are aligned with spaces
// under their names (a printed pandas DataFrame, a fixed-width report):
// delim ' ', with cols the names' column spans in the header line.
type table struct {
	delim      byte
	names      []string
	cols       [][2]int
	start, end int // the byte span of its data lines (after the header)
}

// tables parses the text's tables, once.
func (s *scan) tables() []table {
	if s.tablesDone {
		return s.tabs
	}
	s.tablesDone = true
	text := s.text
	if strings.IndexByte(text, '\n') < 0 {
		return nil // one line: no table
	}
	type line struct{ start, end int }
	var lines []line
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		e := len(text)
		if j >= 0 {
			e = i + j
		}
		lines = append(lines, line{i, e})
		if j < 0 {
			break
		}
		i = e + 1
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(text[lines[i].start:lines[i].end], "\r")
		for _, delim := range []byte{',', ';', '\t', '|', ' '} {
			names := headerNames(l, delim)
			if names == nil {
				continue
			}
			t := table{delim: delim, names: names, start: lines[i].end}
			if delim == ' ' {
				t.cols = fieldSpans(l, ' ')
			}
			k := i + 1
			for ; k < len(lines); k++ {
				row := strings.TrimRight(text[lines[k].start:lines[k].end], "\r")
				if delim == '|' && mdRule.MatchString(row) {
					continue
				}
				if strings.TrimSpace(row) == "" || delim != ' ' && len(fieldSpans(row, delim)) != len(names) || delim == ' ' && !alignedRow(row, t.cols) {
					break
				}
				t.end = lines[k].end
			}
			if t.end > t.start {
				s.tabs = append(s.tabs, t)
				i = k - 1
				break
			}
		}
	}
	return s.tabs
}

// mdRule matches a Markdown table's rule line, |---|:---:|.
var mdRule = regexp.MustCompile(`^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$`)

// headerNames returns the names of a header line, or nil when it is not
// one: two or more fields, each a short name starting with a letter.
func headerNames(line string, delim byte) []string {
	spans := fieldSpans(line, delim)
	if len(spans) < 2 {
		return nil
	}
	names := make([]string, len(spans))
	for i, sp := range spans {
		n := strings.TrimSpace(strings.Trim(strings.TrimSpace(line[sp[0]:sp[1]]), `"*`))
		if delim == ' ' && n == "..." { // a printed DataFrame's elided columns
			names[i] = n
			continue
		}
		if n == "" || len(n) > 40 || strings.ContainsAny(n, "@=") || !unicode.IsLetter(rune(n[0])) {
			return nil
		}
		names[i] = n
	}
	return names
}

// alignedRow reports whether a line is a row of a table aligned with
// spaces under columns: two fields or more, each under a column (sharing
// some of its span) but for a first one left of them all (an index).
func alignedRow(row string, cols [][2]int) bool {
	fields := fieldSpans(row, ' ')
	if len(fields) < 2 {
		return false
	}
	for i, f := range fields {
		if alignedColumn(f, cols) < 0 && !(i == 0 && f[1] <= cols[0][0]) {
			return false
		}
	}
	return true
}

// alignedColumn is the index of the column whose span the field's shares
// most of, or -1.
func alignedColumn(f [2]int, cols [][2]int) int {
	best, most := -1, 0
	for i, c := range cols {
		if n := min(f[1], c[1]) - max(f[0], c[0]); n > most {
			best, most = i, n
		}
	}
	return best
}

// fieldSpans returns the spans of a delimited line's fields, keeping
// delimiters inside double quotes; a Markdown row's outer bars are not
// field separators. Fields aligned with spaces (delim ' ') are set apart
// by two spaces or more; one space is inside a field ("Grace Larsen").
func fieldSpans(line string, delim byte) [][2]int {
	if delim == ' ' {
		return spacedFields(line)
	}
	lo, hi := 0, len(line)
	if delim == '|' {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "|") {
			return nil
		}
		lo = strings.IndexByte(line, '|') + 1
		if strings.HasSuffix(t, "|") {
			hi = strings.LastIndexByte(line, '|')
		}
		if hi < lo {
			return nil
		}
	}
	var out [][2]int
	quoted := false
	last := lo
	for i := lo; i < hi; i++ {
		switch line[i] {
		case '"':
			quoted = !quoted
		case delim:
			if !quoted {
				out = append(out, [2]int{last, i})
				last = i + 1
			}
		}
	}
	return append(out, [2]int{last, hi})
}

// spacedFields are the spans of a line's fields set apart by two spaces
// or more (or a tab).
func spacedFields(line string) [][2]int {
	var out [][2]int
	start := -1
	for i := 0; i <= len(line); i++ {
		gap := i == len(line) || line[i] == '\t' || line[i] == ' ' && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t' || start < 0)
		if gap {
			if start >= 0 {
				out = append(out, [2]int{start, i})
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return out
}

// column is the header name of the table field text[pos] is in.
func (s *scan) column(pos int) (string, bool) {
	for _, t := range s.tables() {
		if pos <= t.start || pos > t.end {
			continue
		}
		lineStart := strings.LastIndexByte(s.text[:pos], '\n') + 1
		lineEnd := lineEnd(s.text, pos)
		line := strings.TrimRight(s.text[lineStart:lineEnd], "\r")
		for i, sp := range fieldSpans(line, t.delim) {
			if !(lineStart+sp[0] <= pos && pos <= lineStart+sp[1]) {
				continue
			}
			if t.delim == ' ' {
				i = alignedColumn(sp, t.cols)
			}
			if i >= 0 && i < len(t.names) {
				return t.names[i], true
			}
		}
	}
	return "", false
}

// cells calls f with the span of every data field under a column whose
// name labels ask for, trimmed of spaces and quotes.
func (s *scan) cells(labels func(name string) bool, f func(start, end int, name string)) {
	for _, t := range s.tables() {
		var cols []int
		for i, n := range t.names {
			if labels(n) {
				cols = append(cols, i)
			}
		}
		if len(cols) == 0 {
			continue
		}
		for ls := t.start + 1; ls < t.end; {
			le := lineEnd(s.text, ls)
			line := strings.TrimRight(s.text[ls:le], "\r")
			spans := fieldSpans(line, t.delim)
			if t.delim == ' ' {
				// Each field under the column it is aligned with.
				byCol := make([][2]int, len(t.names))
				for _, f := range spans {
					if c := alignedColumn(f, t.cols); c >= 0 {
						byCol[c] = f
					}
				}
				spans = byCol
			}
			if len(spans) == len(t.names) {
				for _, c := range cols {
					a, b := ls+spans[c][0], ls+spans[c][1]
					for a < b && (s.text[a] == ' ' || s.text[a] == '"') {
						a++
					}
					for b > a && (s.text[b-1] == ' ' || s.text[b-1] == '"') {
						b--
					}
					if b > a {
						f(a, b, t.names[c])
					}
				}
			}
			ls = le + 1
		}
	}
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
