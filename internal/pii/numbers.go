package pii

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isLetter(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

// isWord reports whether c continues a word: a letter, digit or underscore.
func isWord(c byte) bool { return isDigit(c) || isLetter(c) || c == '_' }

// isAlnum reports whether c is a letter or digit. Numeric values stand
// apart from letters and digits, but not from underscores: a file name
// joins its parts with them (scan_203.0.113.7_2024-05-01.xml,
// w2_123-45-6789.pdf).
func isAlnum(c byte) bool { return isDigit(c) || isLetter(c) }

// fileExt reports whether text at i is a file name's extension: a dot,
// a letter, at most four more letters or digits, and the name's end.
func fileExt(text string, i int) bool {
	if i+1 >= len(text) || text[i] != '.' || !isLetter(text[i+1]) {
		return false
	}
	j := i + 2
	for j < len(text) && j-i <= 5 && isAlnum(text[j]) {
		j++
	}
	return j-i <= 5 && (j == len(text) || !isWord(text[j]) && text[j] != '.')
}

// numBoundary reports whether text[s:e] stands alone as a number: no word
// character touches it, and it is not continued by one of seps followed by
// another digit (so "415-555-2671-99" or "1.2.3.4.5" are not cut short into
// a match).
func numBoundary(text string, s, e int, seps string) bool {
	if s > 0 {
		c := text[s-1]
		if isAlnum(c) {
			return false
		}
		if strings.IndexByte(seps, c) >= 0 && s > 1 && isDigit(text[s-2]) {
			return false
		}
	}
	if e < len(text) {
		c := text[e]
		if isAlnum(c) {
			return false
		}
		if strings.IndexByte(seps, c) >= 0 && e+1 < len(text) && isDigit(text[e+1]) {
			return false
		}
	}
	return true
}

func digitsOf(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// SSN

// ssnSpans finds the three ways an SSN is written: with dashes (an SSN
// wherever its ranges are valid), and with spaces or with nothing between
// the groups (an SSN only under a label that says so). It is the
// regexp \d{3}-\d{2}-\d{4}|\d{3} \d{2} \d{4}|\d{9}, written out: the
// regexp package scans large texts a hundred times slower.
func ssnSpans(text string) [][2]int {
	var out [][2]int
	digitsAt := func(i, n int) bool {
		if i+n > len(text) {
			return false
		}
		for k := i; k < i+n; k++ {
			if !isDigit(text[k]) {
				return false
			}
		}
		return true
	}
	for i := 0; i+9 <= len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		if digitsAt(i, 3) && i+11 <= len(text) && (text[i+3] == '-' || text[i+3] == ' ') && text[i+6] == text[i+3] && digitsAt(i+4, 2) && digitsAt(i+7, 4) {
			out = append(out, [2]int{i, i + 11})
			i += 11
			continue
		}
		if digitsAt(i, 9) {
			out = append(out, [2]int{i, i + 9})
			i += 9
			continue
		}
		i++
	}
	return out
}

var ssnLabels = set("ssn", "ssns", "social", "social security", "socialsecurity", "soc sec", "ss", "ssnumber")

func findSSNs(sc *scan, dst []Match) []Match {
	text := sc.text
	for _, loc := range ssnSpans(text) {
		s, e := loc[0], loc[1]
		if !numBoundary(text, s, e, "-./") || !validSSN(digitsOf(text[s:e])) {
			continue
		}
		if text[s+3] == '-' || sc.labelled(s, ssnLabels) {
			dst = sc.add(dst, KindSSN, s, e)
		}
	}
	return dst
}

// validSSN checks the ranges the Social Security Administration never
// issues: area 000, 666 and 900-999, group 00, serial 0000.
func validSSN(d string) bool {
	area, group, serial := d[0:3], d[3:5], d[5:9]
	if area == "000" || area == "666" || area[0] == '9' {
		return false
	}
	return group != "00" && serial != "0000"
}

// CARD

// digitRuns finds runs of digit groups joined by single spaces or dashes,
// the way card numbers are printed: the regexp \d+(?:[ \-]\d+)*.
func digitRuns(text string) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		s := i
		for {
			for i < len(text) && isDigit(text[i]) {
				i++
			}
			if i+1 < len(text) && (text[i] == ' ' || text[i] == '-') && isDigit(text[i+1]) {
				i++
				continue
			}
			break
		}
		out = append(out, [2]int{s, i})
	}
	return out
}

func findCards(sc *scan, dst []Match) []Match {
	text := sc.text
	for _, loc := range digitRuns(text) {
		s, e := loc[0], loc[1]
		if e-s < 13 {
			continue
		}
		// Digits after "=" that follows a long run of digits continue a
		// record (the expiry and service code of magnetic-stripe track 2,
		// after the card number).
		if s > 12 && text[s-1] == '=' && len(digitsOf(text[s-13:s-1])) == 12 {
			continue
		}
		// A number written with + is a phone number, never a card.
		if s > 0 && text[s-1] == '+' || s > 2 && strings.EqualFold(text[s-3:s], "%2B") {
			continue
		}
		// A fraction's digits ("0.4111111111111111") are not a card.
		if s > 1 && text[s-1] == '.' && isDigit(text[s-2]) {
			continue
		}
		if e+1 < len(text) && text[e] == '.' && isDigit(text[e+1]) {
			continue
		}
		groups := groupSpans(text, s, e)
		if len(groups) == 1 {
			if e-s <= 19 && gluedOK(text, s, e) && validCard(text[s:e]) {
				dst = sc.add(dst, KindCard, s, e)
			}
			continue
		}
		if !gluedOK(text, s, e) {
			continue
		}
		// The run may hold more than the card ("4111 1111 1111 1111 2027"
		// with its expiry): take the longest valid card from the leftmost
		// group that starts one.
		longestRuns(len(groups), len(groups), func(i, j int) bool {
			cs, ce := groups[i][0], groups[j][1]
			if n := len(digitsOf(text[cs:ce])); n < 13 || n > 19 || !validCard(text[cs:ce]) {
				return false
			}
			// A group joined to the card's first or last by a dash or a
			// dot the card does not use belongs to another value (the
			// serial of an SSN before it: 287-65-4321 4111 1111 ...).
			if foreignJoin(text, cs, ce) {
				return false
			}
			dst = sc.add(dst, KindCard, cs, ce)
			return true
		})
	}
	return dst
}

// longestRuns walks n groups of digits from the left: from group i it
// tries the runs i..j, longest first (at most maxRun groups), and goes on
// after the first that take accepts (which records it), or from i+1 when
// none does. Cards and phone numbers are found so in runs of groups that
// may hold more than one value.
func longestRuns(n, maxRun int, take func(i, j int) bool) {
	for i := 0; i < n; {
		j := min(n-1, i+maxRun-1)
		for j >= i && !take(i, j) {
			j--
		}
		i = max(j, i) + 1
	}
}

// groupSpans splits text[s:e] at its spaces and dashes.
func groupSpans(text string, s, e int) [][2]int {
	var out [][2]int
	start := s
	for i := s; i < e; i++ {
		if text[i] == ' ' || text[i] == '-' {
			out = append(out, [2]int{start, i})
			start = i + 1
		}
	}
	return append(out, [2]int{start, e})
}

// gluedOK decides whether a card number written without separators may
// touch letters: magnetic-stripe data ("%B4111111111111111^DOE/JOHN"), a
// file name ("x4111111111111111.txt") or a field name ("card4111...") glue
// it to a few letters. Digits on either side mean a longer number, and a
// long run of hex or mixed letters is a hash or an encoded blob, whose
// digits mean nothing.
func gluedOK(text string, s, e int) bool {
	ws, we := s, e
	for ws > 0 && isLetter(text[ws-1]) {
		ws--
	}
	for we < len(text) && isLetter(text[we]) {
		we++
	}
	if ws > 0 && isDigit(text[ws-1]) || we < len(text) && isDigit(text[we]) {
		return false
	}
	if s-ws > 8 || we-e > 8 {
		return false
	}
	if ws == s && we == e {
		return true
	}
	// The letters must not be part of a longer alphanumeric token.
	if ws > 0 && (isDigit(text[ws-1]) || text[ws-1] == '_' && ws > 1 && isDigit(text[ws-2])) {
		return false
	}
	return true
}

func validCard(v string) bool {
	d := digitsOf(v)
	if len(d) < 13 || len(d) > 19 || !cardGrouping(v) || !luhn(d) {
		return false
	}
	return cardPrefix(d)
}

// cardGrouping accepts numbers written without separators or with one kind
// of separator in the groups cards are printed in: fours (the last group
// may be shorter), 4-6-5 (Amex) and 4-6-4 (Diners).
func cardGrouping(v string) bool {
	groups := strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '-' })
	if len(groups) == 1 {
		return true
	}
	if strings.Contains(v, " ") && strings.Contains(v, "-") {
		return false
	}
	lens := make([]int, len(groups))
	for i, g := range groups {
		lens[i] = len(g)
	}
	if len(lens) == 3 && lens[0] == 4 && lens[1] == 6 && (lens[2] == 5 || lens[2] == 4) {
		return true
	}
	// Fours, the last group shorter, or of five for a 13-digit card
	// (4-4-5, as Visa's are printed).
	for i, n := range lens {
		if i < len(lens)-1 && n != 4 {
			return false
		}
		if i == len(lens)-1 && (n < 1 || n > 4) && !(n == 5 && len(lens) == 3) {
			return false
		}
	}
	return true
}

// foreignJoin reports whether text[s:e], a run of groups, is joined at
// either end to more digits by a dash or dot it does not use inside.
func foreignJoin(text string, s, e int) bool {
	inside := text[s:e]
	if s > 1 && (text[s-1] == '-' || text[s-1] == '.') && isDigit(text[s-2]) && !strings.ContainsRune(inside, rune(text[s-1])) {
		return true
	}
	return e+1 < len(text) && (text[e] == '-' || text[e] == '.') && isDigit(text[e+1]) && !strings.ContainsRune(inside, rune(text[e]))
}

func luhn(d string) bool {
	sum := 0
	double := false
	for i := len(d) - 1; i >= 0; i-- {
		n := int(d[i] - '0')
		if double {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
		double = !double
	}
	return sum%10 == 0
}

// cardPrefix checks the issuer prefix and length of the major networks.
func cardPrefix(d string) bool {
	n := len(d)
	p2 := atoi(d[:2])
	p3 := atoi(d[:3])
	p4 := atoi(d[:4])
	p6 := atoi(d[:6])
	switch {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		return n == 16
	case p2 == 34 || p2 == 37: // Amex
		return n == 15
	case p4 == 6011, p2 == 65, p3 >= 644 && p3 <= 649, p6 >= 622126 && p6 <= 622925: // Discover
		return n >= 16 && n <= 19
	case p2 == 36, p3 >= 300 && p3 <= 305, p2 == 38, p2 == 39: // Diners
		return n >= 14 && n <= 19
	case p4 >= 3528 && p4 <= 3589: // JCB
		return n >= 16 && n <= 19
	case p2 == 62 || p2 == 81: // UnionPay
		return n >= 16 && n <= 19
	case p4 >= 2200 && p4 <= 2204: // Mir
		return n >= 16 && n <= 19
	case p2 == 50, p2 >= 56 && p2 <= 58, p2 == 63, p2 == 67, p2 == 60: // Maestro, RuPay, others
		return n >= 13 && n <= 19
	}
	return false
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// IBAN

// ibanStart finds where an IBAN may start in text[from:]: a country code
// and two check digits (the regexp [A-Z]{2}\d{2} ?[A-Z0-9]); -1 if none.
func ibanStart(text string, from int) int {
	upper := func(c byte) bool { return 'A' <= c && c <= 'Z' }
	for i := from; i+5 <= len(text); i++ {
		if !upper(text[i]) || !upper(text[i+1]) || !isDigit(text[i+2]) || !isDigit(text[i+3]) {
			continue
		}
		c := text[i+4]
		if c == ' ' && i+6 <= len(text) {
			c = text[i+5]
		}
		if upper(c) || isDigit(c) {
			return i
		}
	}
	return -1
}

func findIBANs(sc *scan, dst []Match) []Match {
	text := sc.text
	for pos := 0; pos < len(text); {
		s := ibanStart(text, pos)
		if s < 0 {
			break
		}
		pos = s + 1
		if s > 0 && (isAlnum(text[s-1])) {
			continue
		}
		spec, ok := ibanFormats[text[s:s+2]]
		if !ok {
			continue
		}
		end := ibanEnd(text, s, spec.length)
		if end < 0 || end < len(text) && isAlnum(text[end]) {
			continue
		}
		if validIBAN(strings.ReplaceAll(text[s:end], " ", ""), spec) {
			dst = sc.add(dst, KindIBAN, s, end)
			pos = end
		}
	}
	return dst
}

// ibanEnd is where an IBAN of n characters starting at s ends, written
// compact or in groups of four separated by single spaces; -1 if the text
// has not that shape.
func ibanEnd(text string, s, n int) int {
	count := 0
	spaced := false
	i := s
	for i < len(text) && count < n {
		c := text[i]
		switch {
		case isDigit(c) || 'A' <= c && c <= 'Z':
			count++
			i++
		case c == ' ' && count%4 == 0 && count > 0 && (spaced || count == 4) && i+1 < len(text) && text[i+1] != ' ':
			spaced = true
			i++
		default:
			return -1
		}
	}
	if count < n {
		return -1
	}
	// Grouped, every group but the last has four characters; compact,
	// there is no space at all.
	if spaced && i < len(text) && text[i] != ' ' && isWord(text[i]) {
		return -1
	}
	return i
}

// ibanFormat is a country's IBAN: its length and the structure of its BBAN
// as SWIFT's registry gives it ("4!n4!n12!c").
type ibanFormat struct {
	length int
	bban   []ibanPart
}

type ibanPart struct {
	n     int
	class byte // n: digits, a: upper-case letters, c: both
}

func validIBAN(c string, spec ibanFormat) bool {
	if len(c) != spec.length {
		return false
	}
	i := 4
	for _, p := range spec.bban {
		for k := 0; k < p.n; k++ {
			ch := c[i]
			switch p.class {
			case 'n':
				if !isDigit(ch) {
					return false
				}
			case 'a':
				if !('A' <= ch && ch <= 'Z') {
					return false
				}
			}
			i++
		}
	}
	r := c[4:] + c[:4]
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		ch := r[i]
		switch {
		case isDigit(ch):
			b.WriteByte(ch)
		case 'A' <= ch && ch <= 'Z':
			b.WriteString(strconv.Itoa(int(ch-'A') + 10))
		default:
			return false
		}
	}
	n, ok := new(big.Int).SetString(b.String(), 10)
	if !ok {
		return false
	}
	return new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// ibanRegistry is the BBAN structure of every country in SWIFT's IBAN
// Registry (release 101, as python-stdnum's iban.dat transcribes it).
var ibanRegistry = map[string]string{
	"AD": "4!n4!n12!c", "AE": "3!n16!n", "AL": "8!n16!c", "AT": "5!n11!n", "AZ": "4!a20!c", "BA": "3!n3!n8!n2!n",
	"BE": "3!n7!n2!n", "BG": "4!a4!n2!n8!c", "BH": "4!a14!c", "BI": "5!n5!n11!n2!n", "BR": "8!n5!n10!n1!a1!c", "BY": "4!c4!n16!c",
	"CH": "5!n12!c", "CR": "4!n14!n", "CY": "3!n5!n16!c", "CZ": "4!n16!n", "DE": "8!n10!n", "DJ": "5!n5!n11!n2!n",
	"DK": "4!n9!n1!n", "DO": "4!c20!n", "EE": "2!n14!n", "EG": "4!n4!n17!n", "ES": "4!n4!n1!n1!n10!n", "FI": "3!n11!n",
	"FK": "2!a12!n", "FO": "4!n9!n1!n", "FR": "5!n5!n11!c2!n", "GB": "4!a6!n8!n", "GE": "2!a16!n", "GI": "4!a15!c",
	"GL": "4!n9!n1!n", "GR": "3!n4!n16!c", "GT": "4!c20!c", "HN": "4!a20!n", "HR": "7!n10!n", "HU": "3!n4!n1!n15!n1!n",
	"IE": "4!a6!n8!n", "IL": "3!n3!n13!n", "IQ": "4!a3!n12!n", "IS": "4!n2!n6!n10!n", "IT": "1!a5!n5!n12!c", "JO": "4!a4!n18!c",
	"KW": "4!a22!c", "KZ": "3!n13!c", "LB": "4!n20!c", "LC": "4!a24!c", "LI": "5!n12!c", "LT": "5!n11!n",
	"LU": "3!n13!c", "LV": "4!a13!c", "LY": "3!n3!n15!n", "MC": "5!n5!n11!c2!n", "MD": "2!c18!c", "ME": "3!n13!n2!n",
	"MK": "3!n10!c2!n", "MN": "4!n12!n", "MR": "5!n5!n11!n2!n", "MT": "4!a5!n18!c", "MU": "4!a2!n2!n12!n3!n3!a", "NI": "4!a20!n",
	"NL": "4!a10!n", "NO": "4!n6!n1!n", "OM": "3!n16!c", "PK": "4!a16!c", "PL": "8!n16!n", "PS": "4!a21!c",
	"PT": "4!n4!n11!n2!n", "QA": "4!a21!c", "RO": "4!a16!c", "RS": "3!n13!n2!n", "RU": "9!n5!n15!c", "SA": "2!n18!c",
	"SC": "4!a2!n2!n16!n3!a", "SD": "2!n12!n", "SE": "3!n16!n1!n", "SI": "5!n8!n2!n", "SK": "4!n6!n10!n", "SM": "1!a5!n5!n12!c",
	"SO": "4!n3!n12!n", "ST": "4!n4!n11!n2!n", "SV": "4!a20!n", "TL": "3!n14!n2!n", "TN": "2!n3!n13!n2!n", "TR": "5!n1!n16!c",
	"UA": "6!n19!c", "VA": "3!n15!n", "VG": "4!a16!n", "XK": "4!n10!n2!n", "YE": "4!a4!n18!c",
}

// ibanFormats is ibanRegistry parsed.
var ibanFormats = func() map[string]ibanFormat {
	out := make(map[string]ibanFormat, len(ibanRegistry))
	partRE := regexp.MustCompile(`(\d+)!?([nac])`)
	for cc, spec := range ibanRegistry {
		f := ibanFormat{length: 4}
		for _, m := range partRE.FindAllStringSubmatch(spec, -1) {
			n, _ := strconv.Atoi(m[1])
			f.bban = append(f.bban, ibanPart{n: n, class: m[2][0]})
			f.length += n
		}
		out[cc] = f
	}
	return out
}()
