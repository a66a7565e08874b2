// Package textcut says where to cut text to a size so that no part of a
// value is left readable: every cut codecell makes to what reaches a model
// (the sandbox's output limit, a result's repr, the answer budget, file
// pages, progress lines, log excerpts) asks it where.
//
// A detector finds the values it knows in their context, but half a value
// is no longer one it knows: dave.trunc@example.o, fifteen of a card's
// sixteen digits. So a cut does not rely on the detector alone: it never
// splits a run of the characters values are made of (letters, digits and
// @ . + - _ %). The run a cut would split is dropped whole, on the side
// the cut drops; the back-off is bounded by Bound characters, and a window
// that is all one run is dropped as a whole (no value is that long, so a
// value near the cut is dropped with it). It does not protect values
// written with separators inside them ("4111 1111 1111 1111", "+1 555 123
// 4567") unless the detector given to Cut and Resume finds them; nor a
// value inside a run longer than Bound, more than Bound characters from
// the cut.
package textcut

import (
	"unicode"
	"unicode/utf8"
)

// Bound is the most characters a cut backs off (or skips ahead) to leave
// no part of a run: longer than any value, e-mail addresses included
// (RFC 5321 allows 254).
const Bound = 256

// Window is how much of the text either side of a cut the detector is
// given: more than any value is long, a private key's block (about 3.3 KB
// for a 4096-bit RSA key) included, and little enough that a cut in 1 MiB
// of output costs what one in 8 KiB does.
const Window = 4 << 10

// Values is a detector's cut, such as the gate's: where to cut text to
// keep at most limit bytes, a character boundary at or before limit that
// is not inside a value it finds in text. Nil finds none.
type Values func(text string, limit int) int

// Cut returns where to end what is kept of text cut to at most limit
// bytes: a character boundary at or before limit inside no value that
// values finds and splitting no run of value characters (see the package
// doc). The caller marks the cut.
func Cut(text string, limit int, values Values) int {
	if limit >= len(text) {
		return len(text)
	}
	c := runeStart(text, max(limit, 0))
	// Each step only moves the cut back: the detector to a value's start,
	// the run rule to a run's start, which may be inside a value written
	// with separators that the detector then moves past.
	// A run longer than Bound has one window dropped, once: the cut is
	// then still inside it, and backing off again would drop it all.
	for range 4 {
		n := backOff(text, near(text, c, values))
		if n == c {
			break
		}
		if c = n; Splits(text, c) {
			return near(text, c, values)
		}
	}
	return c
}

// Resume returns where what is kept after a cut at byte i of text starts:
// at or after i past the run of value characters i splits, or at the start
// of a value that values finds across i (kept whole, for the gate to
// tokenize). It may be before i only in that last case.
func Resume(text string, i int, values Values) int {
	if i <= 0 {
		return 0
	}
	if i >= len(text) {
		return len(text)
	}
	i = skipAhead(text, runeStart(text, i))
	if s := near(text, i, values); s < i {
		return s
	}
	return i
}

// IsValueRune reports whether r is one of the characters values are made
// of, which a cut does not split runs of.
func IsValueRune(r rune) bool {
	switch r {
	case '@', '.', '+', '-', '_', '%':
		return true
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Splits reports whether a cut at byte i (a character boundary) falls
// inside a run of value characters.
func Splits(text string, i int) bool {
	if i <= 0 || i >= len(text) {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(text[:i])
	after, _ := utf8.DecodeRuneInString(text[i:])
	return IsValueRune(before) && IsValueRune(after)
}

// backOff moves a cut at i back to the start of the run it splits, or by
// Bound characters when the run is longer.
func backOff(text string, i int) int {
	if !Splits(text, i) {
		return i
	}
	j := i
	for range Bound {
		r, size := utf8.DecodeLastRuneInString(text[:j])
		if size == 0 || !IsValueRune(r) {
			return j
		}
		j -= size
	}
	return j
}

// skipAhead moves a cut at i forward past the end of the run it splits,
// or by Bound characters when the run is longer.
func skipAhead(text string, i int) int {
	if !Splits(text, i) {
		return i
	}
	j := i
	for range Bound {
		r, size := utf8.DecodeRuneInString(text[j:])
		if size == 0 || !IsValueRune(r) {
			return j
		}
		j += size
	}
	return j
}

// near asks values where to cut at i, giving it Window bytes either side.
func near(text string, i int, values Values) int {
	if values == nil || i <= 0 {
		return i
	}
	lo := runeStart(text, max(0, i-Window))
	hi := min(len(text), i+Window)
	return lo + min(values(text[lo:hi], i-lo), i-lo)
}

// runeStart is i, or the start of the character byte i is inside.
func runeStart(text string, i int) int {
	i = min(i, len(text))
	for i > 0 && i < len(text) && !utf8.RuneStart(text[i]) {
		i--
	}
	return i
}
