package codegen

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pyString returns s as a Python string literal. For valid UTF-8, Go's
// quoting is also Python's: the same escapes (\n, \x1b, \u2028, \U0001f600)
// mean the same characters. Invalid bytes, which a Python str cannot hold,
// become U+FFFD first.
func pyString(s string) string {
	return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD"))
}

// docText makes arbitrary text safe inside a triple-quoted Python string
// while keeping it readable: newlines are normalized to "\n", backslashes
// are doubled, every third quote of a run is escaped so no run closes the
// string, and control characters other than tab and newline (NUL among
// them, which Python source cannot contain) become \x escapes. Callers put
// the closing quotes on a line of their own, so a quote at the end of the
// text cannot join them either.
func docText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s))
	quotes := 0
	for _, r := range s {
		if r == '"' {
			quotes++
			if quotes == 3 {
				b.WriteString(`\"`)
				quotes = 0
				continue
			}
			b.WriteByte('"')
			continue
		}
		quotes = 0
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\r':
			b.WriteByte('\n')
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xf])
		case r == '\u2028' || r == '\u2029':
			// Line separators: Python's tokenizer ignores them, but
			// str.splitlines, and so help(), would break the line there.
			b.WriteString(`\u`)
			b.WriteString(strconv.FormatInt(int64(r), 16))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oneLine collapses every run of white space and control characters in s,
// newlines included, into one space and trims the ends.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToValidUTF8(s, "\uFFFD"), isSpaceOrControl), " ")
}

func isSpaceOrControl(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// paragraph returns s with newlines normalized, trailing white space cut
// from every line and blank lines trimmed from both ends.
func paragraph(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\f\v")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// indent prefixes every non-empty line of s but the first with prefix.
func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = prefix + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// maxSentence bounds the first sentence of a description, in characters.
const maxSentence = 200

// firstSentence returns the first sentence of a description on one line, at
// most maxSentence characters: the text up to the first ".", "!" or "?"
// followed by white space, within the first paragraph. "e.g." and "i.e." do
// not end a sentence.
func firstSentence(s string) string {
	s = paragraph(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	s = oneLine(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '.' && c != '!' && c != '?' || i+1 < len(s) && s[i+1] != ' ' {
			continue
		}
		word := s[strings.LastIndexByte(s[:i], ' ')+1 : i]
		if c == '.' && (strings.EqualFold(word, "e.g") || strings.EqualFold(word, "i.e")) {
			continue
		}
		s = s[:i+1]
		break
	}
	return truncate(s, maxSentence)
}

// truncate cuts s to at most n characters, ending it with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}

// codeSpan returns s as a Markdown code span: fenced with one backtick more
// than its longest run of backticks, and padded with spaces when it starts
// or ends with one, as CommonMark requires.
func codeSpan(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
