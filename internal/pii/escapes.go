package pii

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Values reach the gate escaped as often as plain: json.dumps writes é as
// \u00e9 (and may escape any character so), a Python repr writes bytes as
// \xc3\xa9, a JSON string holds its line ends as \n. A detector reading
// the escaped text sees josé's address as "jos\u00e9..." and finds
// nothing, or only a piece of it. So every detector also runs on a view
// of the text with its backslash escapes decoded (twice over, for JSON
// inside a JSON string), and what it finds there is mapped back to the
// span of the escaped text it came from: the escaped writing is replaced
// whole. What is not protected: other encodings (HTML entities, quoted-
// printable, base64).

// maxUnescape is how many layers of escaping are decoded: json.dumps of
// json.dumps is common, deeper nesting is not.
const maxUnescape = 2

// view is a text decoded from another: text[i] came from the original's
// bytes [start[i], end[i]).
type view struct {
	text       string
	start, end []int
}

// hasEscape reports whether s holds a backslash escape unescape decodes.
func hasEscape(s string) bool {
	for i := strings.IndexByte(s, '\\'); i >= 0 && i+1 < len(s); {
		if escapeLen(s, i) > 0 {
			return true
		}
		j := strings.IndexByte(s[i+2:], '\\')
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}

// escapeLen is the length of the escape at s[i] (a backslash), 0 if it is
// not one unescape decodes.
func escapeLen(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	switch s[i+1] {
	case 'n', 't', 'r', 'b', 'f', 'v', 'a', '0', '"', '\'', '\\', '/':
		return 2
	case 'x':
		if hexRun(s, i+2, 2) {
			return 4
		}
	case 'u':
		if hexRun(s, i+2, 4) {
			return 6
		}
	case 'U':
		if hexRun(s, i+2, 8) {
			return 10
		}
	}
	return 0
}

func hexRun(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for k := i; k < i+n; k++ {
		if !isHex(s[k]) {
			return false
		}
	}
	return true
}

func hexVal(s string) rune {
	var r rune
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isDigit(c):
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}

// unescape decodes s's backslash escapes, JSON's and Python's: \n \t \r
// \b \f \v \a \0, \" \' \\ \/, \uXXXX (a UTF-16 surrogate pair makes one
// character), \UXXXXXXXX, and \xXX (a run of them that is UTF-8, as a
// bytes repr writes it, makes its characters; else each is the Latin-1
// character of its value). Other backslashes stay as they are.
func unescape(s string) view {
	v := view{start: make([]int, 0, len(s)), end: make([]int, 0, len(s))}
	var b strings.Builder
	b.Grow(len(s))
	emit := func(str string, from, to int) {
		b.WriteString(str)
		for range len(str) {
			v.start = append(v.start, from)
			v.end = append(v.end, to)
		}
	}
	for i := 0; i < len(s); {
		n := 0
		if s[i] == '\\' {
			n = escapeLen(s, i)
		}
		if n == 0 {
			emit(s[i:i+1], i, i+1)
			i++
			continue
		}
		switch c := s[i+1]; c {
		case 'u':
			r := hexVal(s[i+2 : i+6])
			if 0xD800 <= r && r < 0xDC00 && escapeLen(s, i+6) == 6 && s[i+7] == 'u' {
				if lo := hexVal(s[i+8 : i+12]); 0xDC00 <= lo && lo < 0xE000 {
					emit(string((r-0xD800)<<10|(lo-0xDC00)+0x10000), i, i+12)
					i += 12
					continue
				}
			}
			emit(string(r), i, i+6) // a lone surrogate is U+FFFD
		case 'U':
			emit(string(hexVal(s[i+2:i+10])), i, i+10)
		case 'x':
			// A run of \xXX: UTF-8 where it decodes, Latin-1 elsewhere.
			j := i
			var raw []byte
			var at []int
			for escapeLen(s, j) == 4 && s[j+1] == 'x' {
				raw = append(raw, byte(hexVal(s[j+2:j+4])))
				at = append(at, j)
				j += 4
			}
			at = append(at, j)
			for k := 0; k < len(raw); {
				r, size := utf8.DecodeRune(raw[k:])
				if r == utf8.RuneError && size <= 1 {
					r, size = rune(raw[k]), 1
				}
				emit(string(r), at[k], at[k+size])
				k += size
			}
			i = j
			continue
		default:
			emit(string(simpleEscape(c)), i, i+2)
		}
		i += n
	}
	v.text = b.String()
	return v
}

func simpleEscape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'v':
		return '\v'
	case 'a':
		return '\a'
	case '0':
		return 0
	}
	return c // " ' \ /
}

// compose is v read through outer, a view of v.text: a view of the
// original text.
func (v view) compose(outer view) view {
	out := view{text: outer.text, start: make([]int, len(outer.text)), end: make([]int, len(outer.text))}
	for i := range outer.text {
		out.start[i] = v.start[outer.start[i]]
		out.end[i] = v.end[outer.end[i]-1]
	}
	return out
}

// views are the decoded views of text, one per layer of escaping, then
// one with its spelling normalized (see normalize), each mapped to text.
func views(text string) []view {
	var out []view
	cur := text
	var prev *view
	add := func(v view) {
		if prev != nil {
			v = prev.compose(v)
		}
		out = append(out, v)
		prev = &out[len(out)-1]
		cur = v.text
	}
	for range maxUnescape {
		if !hasEscape(cur) {
			break
		}
		add(unescape(cur))
	}
	if needsNormal(cur) {
		add(normalize(cur))
	}
	return out
}

// A value can also be spelled so that a model reads it and a pattern does
// not: fullwidth forms (（７１８） ８４２－３３１７), zero-width characters inside
// it, no-break or thin spaces and Unicode dashes between its groups, HTML
// character references (alice&#64;example.com). normalize maps these to
// what they stand for: NFKC-like for fullwidth ASCII, spaces and dashes
// to ' ' and '-', zero-width characters dropped, numeric and a few named
// references decoded. Homoglyphs of other scripts are not mapped.

// needsNormal reports whether s holds anything normalize changes.
func needsNormal(s string) bool {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '&':
			if _, n := entity(s[i:]); n > 0 {
				return true
			}
		case s[i] >= 0x80:
			r, _ := utf8.DecodeRuneInString(s[i:])
			if normalRune(r) != r || zeroWidth(r) {
				return true
			}
		}
	}
	return false
}

func zeroWidth(r rune) bool {
	switch r {
	case 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD:
		return true
	}
	return false
}

// normalRune is the ASCII a character stands for in a value, or itself.
func normalRune(r rune) rune {
	switch {
	case 0xFF01 <= r && r <= 0xFF5E: // fullwidth ASCII
		return r - 0xFEE0
	case r == 0x3000, r == 0x00A0, 0x2000 <= r && r <= 0x200A, r == 0x202F, r == 0x205F:
		return ' '
	case 0x2010 <= r && r <= 0x2015, r == 0x2212, r == 0xFE63:
		return '-'
	case r == 0xFF0E, r == 0x3002, r == 0xFE52:
		return '.'
	}
	return r
}

// entities are the named character references that spell values.
var entities = map[string]string{"amp": "&", "commat": "@", "period": ".", "plus": "+", "hyphen": "-", "dash": "-", "nbsp": " ", "lpar": "(", "rpar": ")", "colon": ":", "lowbar": "_", "sol": "/"}

// normalize maps s's spelling to plain ASCII where it stands for it.
func normalize(s string) view {
	v := view{start: make([]int, 0, len(s)), end: make([]int, 0, len(s))}
	var b strings.Builder
	emit := func(str string, from, to int) {
		b.WriteString(str)
		for range len(str) {
			v.start = append(v.start, from)
			v.end = append(v.end, to)
		}
	}
	for i := 0; i < len(s); {
		if s[i] == '&' {
			if r, n := entity(s[i:]); n > 0 {
				emit(r, i, i+n)
				i += n
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case zeroWidth(r):
			// dropped
		default:
			emit(string(normalRune(r)), i, i+size)
		}
		i += size
	}
	v.text = b.String()
	return v
}

// entity decodes the character reference at the start of s: &#64;,
// &#x40;, &commat;. It returns what it stands for and its length, or 0.
func entity(s string) (string, int) {
	end := strings.IndexByte(s[:min(len(s), 12)], ';')
	if end < 3 {
		return "", 0
	}
	body := s[1:end]
	if body[0] == '#' {
		var r rune
		digits := body[1:]
		base := rune(10)
		if len(digits) > 0 && (digits[0] == 'x' || digits[0] == 'X') {
			digits, base = digits[1:], 16
		}
		if digits == "" {
			return "", 0
		}
		for i := 0; i < len(digits); i++ {
			c := digits[i]
			switch {
			case isDigit(c):
				r = r*base + rune(c-'0')
			case base == 16 && isHex(c):
				r = r*base + hexVal(string(c))
			default:
				return "", 0
			}
		}
		if !utf8.ValidRune(r) || r == 0 {
			return "", 0
		}
		return string(normalRune(r)), end + 1
	}
	if t, ok := entities[body]; ok {
		return t, end + 1
	}
	return "", 0
}

// span maps a match in the view back to the original text's span.
func (v view) span(m Match) (int, int) {
	return v.start[m.Start], v.end[m.End-1]
}

// offset is the view's offset of the original offset from: the first byte
// that came from at or after it.
func (v view) offset(from int) int {
	for i, s := range v.start {
		if s >= from {
			return i
		}
	}
	return len(v.text)
}

// mergeView adds to found (sorted, not overlapping, in text) what the
// detectors found in a decoded view of it: a value found only there, or
// one that covers values found in text (pieces of it, as the local part
// after an escape), takes its escaped span. Where text's own reading is as
// wide, it stays, with its value as written.
func mergeView(text string, found []Match, v view, inView []Match) []Match {
	var add []Match
	for _, m := range inView {
		s, e := v.span(m)
		i := sort.Search(len(found), func(i int) bool { return found[i].End > s })
		ok := true
		for j := i; j < len(found) && found[j].Start < e; j++ {
			if f := found[j]; f.Start < s || f.End > e || f.Start == s && f.End == e {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		nm := Match{Kind: m.Kind, Start: s, End: e, Value: text[s:e]}
		if m.Value != nm.Value {
			nm.Decoded = m.Value
			if m.Decoded != "" {
				nm.Decoded = m.Decoded
			}
		}
		add = append(add, nm)
	}
	if len(add) == 0 {
		return found
	}
	// Both are sorted; what add covers of found goes.
	out := make([]Match, 0, len(found)+len(add))
	j := 0
	for _, f := range found {
		for j < len(add) && add[j].End <= f.Start {
			out = append(out, add[j])
			j++
		}
		if j < len(add) && add[j].Start < f.End {
			continue
		}
		out = append(out, f)
	}
	return append(out, add[j:]...)
}
