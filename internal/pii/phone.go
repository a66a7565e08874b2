package pii

import (
	"slices"
	"strings"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// Phone numbers are found in two steps: a pattern finds runs of digits
// with the punctuation numbers are written with, and libphonenumber's rules
// (github.com/nyaruka/phonenumbers) decide which part of a run, if any, is
// a valid number. What the pattern finds is not a phone number unless:
//
//   - it starts with + (or %2B, URL-encoded) or an international call
//     prefix (00, 011), and is a valid number of its country; or
//   - it is a valid number of the default region (Options.PhoneRegion)
//     written in groups that keep the region's own grouping together
//     ("(415) 555-2671", "415.555.2671"), or of another region of
//     nationalRegions written with that region's trunk prefix or grouping
//     ("020 7946 0958", "06 12 34 56 78"); or
//   - a label says it is one ("phone: 4155552671", a "mobile" column):
//     bare runs of digits are far more often order numbers or ids.

// phoneCandidates finds runs that may hold phone numbers: the regexp
// (?:\+|%2[Bb]|\(\+?)?\d(?:[\d\-. /()]|\x{00A0}){4,}\d, written out.
func phoneCandidates(text string) [][2]int {
	var out [][2]int
	inner := func(i int) int { // the length of a run character at i, or 0
		switch c := text[i]; {
		case isDigit(c) || c == '-' || c == '.' || c == ' ' || c == '/' || c == '(' || c == ')':
			return 1
		case c == 0xC2 && i+1 < len(text) && text[i+1] == 0xA0: // no-break space
			return 2
		}
		return 0
	}
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		s := i
		switch {
		case s >= 2 && text[s-2:s] == "(+":
			s -= 2
		case s >= 1 && (text[s-1] == '+' || text[s-1] == '('):
			s--
		case s >= 3 && (text[s-3:s] == "%2B" || text[s-3:s] == "%2b"):
			s -= 3
		}
		j := i + 1
		lastDigit := i
		for j < len(text) {
			n := inner(j)
			if n == 0 {
				break
			}
			if isDigit(text[j]) {
				lastDigit = j
			}
			j += n
		}
		e := lastDigit + 1
		if e-(i+1) >= 5 { // a digit, four or more characters, a digit
			out = append(out, [2]int{s, e})
		}
		i = j
	}
	return out
}

// nationalRegions are the regions besides the default one whose national
// formats are recognized: the most populous and the most present in
// business data. A number of any region is found when written with its
// country code.
var nationalRegions = []string{
	"GB", "DE", "FR", "IT", "ES", "NL", "BE", "CH", "AT", "SE", "FI", "IE", "PL", "PT", "TR", "RU", "UA",
	"AU", "NZ", "IN", "JP", "KR", "CN", "BR", "AR", "MX", "ZA", "NG", "EG", "IL", "CA",
}

// notPhoneLabels are labels of numbers that are not phone numbers, though
// written like them: a SKU 0345-221-908 has the shape of a Dutch number.
var notPhoneLabels = set("sku", "order", "invoice", "ref", "reference", "item", "part", "product", "tracking",
	"serial", "model", "isbn", "issn", "ean", "upc", "po", "ticket", "case", "build", "version", "batch", "lot",
	"account", "acct", "iban", "routing", "swift", "bic", "zip", "postcode", "amount", "total", "price", "qty", "quantity",
	"txn", "transaction", "confirmation", "booking", "pnr", "id", "uuid", "no", "nr", "number")

var phoneLabels = set("phone", "phones", "tel", "telephone", "telefon", "telefono", "téléphone", "mobile", "mob", "cell",
	"cellphone", "fax", "whatsapp", "wa me", "msisdn", "sms", "ph", "call", "contact", "landline", "handy", "portable",
	"phonenumber", "tel no", "mobile phone", "cell phone")

func findPhones(sc *scan, dst []Match) []Match {
	text := sc.text
	for _, loc := range phoneCandidates(text) {
		s, e := loc[0], loc[1]
		// A closing parenthesis with no opening one belongs to the text.
		groups := phoneGroups(text, s, e)
		longestRuns(len(groups), 8, func(i, j int) bool {
			gs, ge := groups[i].start, groups[j].end
			// Part of a longer run of groups must stand apart from the
			// rest ("…, 020 7946 0958 / 07700 900123"): a single space or
			// dash would make it a piece of one longer number.
			if i > 0 && weakGap(text[groups[i-1].end:gs]) && !opens(text[gs]) && joins(text, groups, i-1, i, j) ||
				j < len(groups)-1 && weakGap(text[ge:groups[j+1].start]) && !opens(text[groups[j+1].start]) && joins(text, groups, j+1, i, j) {
				return false
			}
			if !sc.det.isPhone(sc, gs, ge, groups[i:j+1]) {
				return false
			}
			dst = sc.add(dst, KindPhone, gs, ge)
			return true
		})
	}
	return dst
}

// hasDigitWord reports whether the word at the end of before (or at the
// start of after, with fromStart) has a digit in it.
func hasDigitWord(s string, fromStart bool) bool {
	if fromStart {
		for i := 0; i < len(s) && isAlnum(s[i]); i++ {
			if isDigit(s[i]) {
				return true
			}
		}
		return false
	}
	for i := len(s) - 1; i >= 0 && isAlnum(s[i]); i-- {
		if isDigit(s[i]) {
			return true
		}
	}
	return false
}

// weakGap reports whether the text between two groups of digits joins
// them: nothing, or one space, dash or dot.
func weakGap(gap string) bool {
	return len(gap) <= 1
}

// joins reports whether the neighbour group k, across a weak gap from
// the number of groups i..j, would continue it: the gap must be written
// as the number's own separator next to it and as the neighbour's to its
// next group (where they have one). Otherwise the two are values printed
// side by side ("(718) 842-3317 4111 1111 1111 1111", "+1 214 865 6922
// 18.234.65.236", "...-3317 287-65-4321").
func joins(text string, groups []phoneGroup, k, i, j int) bool {
	sep := func(a int) string { return text[groups[a].end:groups[a+1].start] }
	var gap, inner, onward string
	hasInner, hasOnward := i < j, false
	if k < i { // before the number
		gap = sep(k)
		if hasInner {
			inner = sep(i)
		}
		if hasOnward = k > 0; hasOnward {
			onward = sep(k - 1)
		}
	} else {
		gap = sep(j)
		if hasInner {
			inner = sep(j - 1)
		}
		if hasOnward = k < len(groups)-1; hasOnward {
			onward = sep(k)
		}
	}
	if hasInner && len(strings.TrimPrefix(inner, ")")) > 1 {
		return true // the number itself is not written as one
	}
	return (!hasInner || sameSep(inner, gap)) && (!hasOnward || onward == gap)
}

// sameSep reports whether a number's separator next to a gap is the
// gap's: a parenthesized area code's ") " counts as a space.
func sameSep(inner, gap string) bool {
	return inner == gap || strings.TrimPrefix(inner, ")") == gap
}

// opens reports whether c starts a number of its own: a + or an opening
// parenthesis.
func opens(c byte) bool { return c == '+' || c == '%' || c == '(' }

// phoneGroup is a group of digits in a candidate, with the + or
// parentheses that belong to it.
type phoneGroup struct {
	start, end int // the group's span, with its +, %2B or parentheses
	digits     string
}

func phoneGroups(text string, s, e int) []phoneGroup {
	var out []phoneGroup
	i := s
	for i < e {
		// Skip separators.
		for i < e && !isDigit(text[i]) && text[i] != '+' && text[i] != '(' && text[i] != '%' {
			i++
		}
		if i >= e {
			break
		}
		g := phoneGroup{start: i}
		switch {
		case text[i] == '+':
			i++
		case text[i] == '%' && i+3 <= e && strings.EqualFold(text[i:i+3], "%2B"):
			i += 3
		case text[i] == '%':
			i++
			continue
		}
		paren := false
		if i < e && text[i] == '(' {
			paren = true
			i++
			if i < e && text[i] == '+' {
				i++
			}
		}
		ds := i
		for i < e && isDigit(text[i]) {
			i++
		}
		if i == ds {
			continue
		}
		g.digits = text[ds:i]
		if paren && i < e && text[i] == ')' {
			i++
		} else if paren {
			// An unclosed parenthesis is not the number's: "(+49 30 …)".
			g.start = ds
			if text[ds-1] == '+' {
				g.start = ds - 1
			}
		}
		g.end = i
		out = append(out, g)
	}
	return out
}

// isPhone decides whether text[s:e], made of groups, is a phone number.
func (d *Detector) isPhone(sc *scan, s, e int, groups []phoneGroup) bool {
	text := sc.text
	span := text[s:e]
	var digits strings.Builder
	for _, g := range groups {
		digits.WriteString(g.digits)
	}
	n := digits.Len()
	if n < 7 || n > 17 {
		return false
	}
	// Word characters on either side make it part of something else
	// (an id, a hash, a word).
	if s > 0 && isAlnum(text[s-1]) || e < len(text) && isAlnum(text[e]) {
		return false
	}
	// A run continued by a dot or dash and more digits is a longer number:
	// a version, an address, a date-time.
	if e+1 < len(text) && strings.IndexByte(".-/", text[e]) >= 0 && isDigit(text[e+1]) {
		return false
	}
	if s > 1 && strings.IndexByte(".-/", text[s-1]) >= 0 && isDigit(text[s-2]) {
		return false
	}
	// Joined by dashes to words on both sides, or to a word with digits
	// in it, it is a piece of an identifier (the groups of a UUID).
	left := s > 1 && text[s-1] == '-' && isWord(text[s-2])
	right := e+1 < len(text) && text[e] == '-' && isWord(text[e+1])
	if left && right || left && hasDigitWord(text[:s-1], false) || right && hasDigitWord(text[e+1:], true) {
		return false
	}
	intl := span[0] == '+' || span[0] == '%' || strings.HasPrefix(span, "(+")
	labelled := !intl && sc.labelled(s, phoneLabels)
	if !intl && !plausibleNational(span, groups, labelled) {
		return false
	}
	if intl && strings.ContainsRune(span, '.') && strings.ContainsRune(span, '-') {
		return false
	}
	norm := span
	if span[0] == '%' {
		norm = "+" + span[3:]
	}
	if intl {
		// A + and a country code are a strong sign: a number of a possible
		// length for its country is taken, valid or not (fictitious ranges
		// such as the UK's 07700 900xxx for drama are not valid).
		num, err := phonenumbers.Parse(norm, "ZZ")
		return err == nil && (phonenumbers.IsValidNumber(num) || n >= 10 && phonenumbers.IsPossibleNumber(num) &&
			phonenumbers.GetRegionCodeForCountryCode(int(num.GetCountryCode())) != "ZZ")
	}
	if !labelled && sc.labelledExact(s, notPhoneLabels) {
		return false
	}
	formatted := len(groups) > 1
	all := digits.String()
	// International call prefixes: 00 (most of the world), 011 (North America).
	if strings.HasPrefix(all, "00") && n >= 10 {
		num, err := phonenumbers.Parse("+"+all[2:], "ZZ")
		return err == nil && phonenumbers.IsValidNumber(num)
	}
	if strings.HasPrefix(all, "011") && n >= 11 && d.phoneRegion == "US" {
		// 011 is also the area code of Delhi (011 2497 9675): fall through
		// to the national readings when it is not an international call.
		if num, err := phonenumbers.Parse("+"+all[3:], "ZZ"); err == nil && phonenumbers.IsValidNumber(num) {
			return true
		}
	}
	if !formatted && !labelled {
		return false
	}
	// The default region's national format, and North America's whatever
	// the region: its formats are the most common in data from anywhere.
	for _, r := range d.homeRegions {
		if !possibleIn(r, all) {
			continue
		}
		if num, err := phonenumbers.ParseAndKeepRawInput(norm, r); err == nil && phonenumbers.IsValidNumberForRegion(num, r) &&
			phonenumbers.IsNationalPrefixPresentIfRequired(num) && (labelled || keepsGrouping(num, r, groups) || trunkGrouping(span, all, r, groups)) {
			return true
		}
	}
	if labelled && !strings.HasPrefix(all, "0") && n >= 11 {
		// A label makes a bare E.164 number without its + a phone.
		if num, err := phonenumbers.Parse("+"+all, "ZZ"); err == nil && phonenumbers.IsValidNumber(num) {
			return true
		}
	}
	// Another region's national number must start with 0, as it does
	// in the regions with a trunk prefix and in Italy, unless a label says
	// it is a phone number: without a country code, a 0 or a label, digits
	// in groups are more often something else.
	// A parenthesized area code written in the region's own grouping
	// ("(21) 5813-4869" in Brazil) is as clear a sign.
	paren := strings.ContainsRune(span, '(')
	if all[0] != '0' && !labelled && !paren {
		return false
	}
	for _, r := range nationalRegions {
		if slices.Contains(d.homeRegions, r) || !possibleIn(r, all) {
			continue
		}
		num, err := phonenumbers.ParseAndKeepRawInput(norm, r)
		if err != nil || !phonenumbers.IsValidNumberForRegion(num, r) || !phonenumbers.IsNationalPrefixPresentIfRequired(num) {
			continue
		}
		if (keepsGrouping(num, r, groups) || trunkGrouping(span, all, r, groups)) && (all[0] == '0' || paren) || labelled {
			return true
		}
	}
	return false
}

// possibleLengths are the lengths of national significant numbers per
// region, from libphonenumber's metadata: checking them first spares a
// parse (tens of microseconds) for most runs of digits.
var possibleLengths = sync.OnceValue(func() map[string][]int32 {
	out := map[string][]int32{}
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		return out
	}
	for _, m := range coll.GetMetadata() {
		out[m.GetId()] = m.GetGeneralDesc().GetPossibleLength()
	}
	return out
})

// possibleIn reports whether digits, less the region's national prefix if
// they start with it, have the length of a number of region. A region
// whose lengths are unknown admits any.
func possibleIn(region, digits string) bool {
	lens, ok := possibleLengths()[region]
	if !ok || len(lens) == 0 {
		return true
	}
	n := len(digits)
	if ndd := phonenumbers.GetNddPrefixForRegion(region, true); ndd != "" && strings.HasPrefix(digits, ndd) {
		n -= len(ndd)
	}
	for _, l := range lens {
		if int(l) == n || int(l) == len(digits) {
			return true
		}
	}
	return false
}

// plausibleNational rejects what national numbers are never written as:
// dates, IPv4 addresses, decimal fractions, thousands-grouped amounts
// (unless a label says it is a phone number: Spain writes 933 838 257),
// ISBN-like runs of one-digit groups, and mixed dots and dashes.
func plausibleNational(span string, groups []phoneGroup, labelled bool) bool {
	dots := strings.Count(span, ".")
	if dots > 0 && strings.ContainsAny(span, "-/") {
		return false
	}
	if dots > 0 && (len(groups) == 2 || len(groups) == 4 && maxLen(groups) <= 3) {
		return false
	}
	if len(groups) >= 3 && (isDate(groups[0].digits, groups[1].digits, groups[2].digits) || len(groups) == 3 && isDate(groups[2].digits, groups[1].digits, groups[0].digits)) {
		return false
	}
	if !labelled && len(groups) >= 3 && len(groups[0].digits) <= 3 && groups[0].digits[0] != '0' && span[0] != '(' {
		thousands := true
		for _, g := range groups[1:] {
			if len(g.digits) != 3 {
				thousands = false
			}
		}
		if thousands {
			return false
		}
	}
	ones := 0
	for i, g := range groups {
		if len(g.digits) == 1 && !(i == 0 && (g.digits == "1" || g.digits == "0")) {
			ones++
			if i == len(groups)-1 {
				return false
			}
		}
	}
	return ones <= 1
}

func maxLen(groups []phoneGroup) int {
	m := 0
	for _, g := range groups {
		m = max(m, len(g.digits))
	}
	return m
}

// isDate reports whether y, m, d read as a year, month and day.
func isDate(y, m, d string) bool {
	if len(y) != 4 || len(m) > 2 || len(d) > 2 {
		return false
	}
	yy, mm, dd := atoi(y), atoi(m), atoi(d)
	return yy >= 1900 && yy <= 2100 && mm >= 1 && mm <= 12 && dd >= 1 && dd <= 31 ||
		yy >= 1900 && yy <= 2100 && dd >= 1 && dd <= 12 && mm >= 1 && mm <= 31
}

// keepsGrouping reports whether a number is written in the groups
// libphonenumber formats it in for region ("020 7946 0958", "(415)
// 555-2671"), whatever the separators. A national prefix written as a
// group of its own ("1-415-555-2671") is skipped. One group only (a number
// written without separators) does not count: it keeps no grouping.
func keepsGrouping(num *phonenumbers.PhoneNumber, region string, groups []phoneGroup) bool {
	if len(groups) < 2 {
		return false
	}
	want := digitGroups(phonenumbers.Format(num, phonenumbers.NATIONAL))
	got := make([]string, 0, len(groups))
	for _, g := range groups {
		got = append(got, g.digits)
	}
	if ndd := phonenumbers.GetNddPrefixForRegion(region, true); ndd != "" && len(got) > 1 && got[0] == ndd && (len(want) == 0 || !strings.HasPrefix(want[0], ndd)) {
		got = got[1:]
	}
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// trunkGrouping reports whether a number of a region with a trunk prefix
// is written as people there write it when not in libphonenumber's own
// grouping ("0207 946 0958" for 020 7946 0958, "0151 12345678", "030 123
// 456 78"): it starts with the trunk prefix, in a group of its own with
// the area code, every group has two digits or more, and the groups after
// the first are set apart all alike. That shape, a valid number of the
// region and the trunk prefix make digits in groups a phone number more
// often than anything else; the exact grouping is a matter of habit.
func trunkGrouping(span, digits, region string, groups []phoneGroup) bool {
	ndd := phonenumbers.GetNddPrefixForRegion(region, true)
	if ndd == "" || !strings.HasPrefix(digits, ndd) || len(groups) < 2 || len(groups) > 5 {
		return false
	}
	if len(groups[0].digits) <= len(ndd) {
		return false
	}
	// A parenthesized first group may stand apart otherwise: "(030) 123-4567".
	first := 1
	if span[0] == '(' {
		first = 2
	}
	var gap string
	for i, g := range groups {
		if len(g.digits) < 2 {
			return false
		}
		if i < first {
			continue
		}
		sep := span[groups[i-1].end-groups[0].start : g.start-groups[0].start]
		if i == first {
			gap = sep
		} else if sep != gap {
			return false
		}
	}
	return true
}

// digitGroups splits a formatted number into its runs of digits.
func digitGroups(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isDigit(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
	}
	return out
}
