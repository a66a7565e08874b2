package pii

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"net/netip"
	"regexp"
	"strings"
)

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '_'
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

func add(dst []Match, kind, text string, s, e int) []Match {
	return append(dst, Match{Kind: kind, Start: s, End: e, Value: text[s:e]})
}

// EMAIL

var emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}`)

func findEmails(text string, dst []Match) []Match {
	for _, loc := range emailRE.FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		// Leading dots belong to the sentence, not the address.
		for s < e && text[s] == '.' {
			s++
		}
		v := text[s:e]
		at := strings.IndexByte(v, '@')
		local, domain := v[:at], v[at+1:]
		if local == "" || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
			continue
		}
		if e < len(text) && (isAlnum(text[e]) || text[e] == '@') {
			continue
		}
		ok := true
		for _, label := range strings.Split(domain, ".") {
			if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
				ok = false
			}
		}
		if ok {
			dst = add(dst, KindEmail, text, s, e)
		}
	}
	return dst
}

// PHONE

// phoneRE has two shapes: international numbers written with a leading +
// (grouped or compact E.164), and North American national numbers
// ("(415) 555-2671", "415-555-2671", "1 415 555 2671"). Bare digit runs are
// never phones: they are far more often order numbers or ids.
var phoneRE = regexp.MustCompile(`\+[1-9]\d{0,2}(?:[ .\-]?\(\d{1,4}\)|[ .\-]?\d{1,5}){1,6}|(?:1[ .\-])?(?:\(\d{3}\) ?|\d{3}[ .\-])\d{3}[ .\-]\d{4}`)

func findPhones(text string, dst []Match) []Match {
	for _, loc := range phoneRE.FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if !numBoundary(text, s, e, "-./") {
			continue
		}
		if validPhone(text[s:e]) {
			dst = add(dst, KindPhone, text, s, e)
		}
	}
	return dst
}

func validPhone(v string) bool {
	d := digitsOf(v)
	if len(d) < 10 || len(d) > 15 {
		return false
	}
	// Mixed separators ("+1 415.555-2671") are rare in real numbers and
	// common in dates and version strings.
	var sep byte
	for i := 1; i < len(v); i++ {
		c := v[i]
		if c == '-' || c == '.' {
			if sep != 0 && sep != c {
				return false
			}
			sep = c
		}
	}
	nanp := ""
	switch {
	case v[0] != '+' && len(d) == 10:
		nanp = d
	case v[0] != '+' && len(d) == 11 && d[0] == '1':
		nanp = d[1:]
	case v[0] != '+':
		return false
	case d[0] == '1':
		if len(d) != 11 {
			return false
		}
		nanp = d[1:]
	}
	if nanp != "" {
		// NANP: area code and exchange start with 2-9; N11 area codes are
		// service numbers.
		if nanp[0] < '2' || nanp[3] < '2' || (nanp[1] == '1' && nanp[2] == '1') {
			return false
		}
	}
	return true
}

// SSN

var ssnRE = regexp.MustCompile(`\d{3}-\d{2}-\d{4}`)

func findSSNs(text string, dst []Match) []Match {
	for _, loc := range ssnRE.FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if numBoundary(text, s, e, "-./") && validSSN(text[s:e]) {
			dst = add(dst, KindSSN, text, s, e)
		}
	}
	return dst
}

func validSSN(v string) bool {
	area, group, serial := v[0:3], v[4:6], v[7:11]
	if area == "000" || area == "666" || area[0] == '9' {
		return false
	}
	return group != "00" && serial != "0000"
}

// CARD

var cardRE = regexp.MustCompile(`\d(?:[ \-]?\d){12,18}`)

func findCards(text string, dst []Match) []Match {
	for _, loc := range cardRE.FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if numBoundary(text, s, e, " -./,") && validCard(text[s:e]) {
			dst = add(dst, KindCard, text, s, e)
		}
	}
	return dst
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
	for i, n := range lens {
		if i < len(lens)-1 && n != 4 {
			return false
		}
		if i == len(lens)-1 && (n < 1 || n > 4) {
			return false
		}
	}
	return true
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
	switch {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		return n == 16
	case p2 == 34 || p2 == 37: // Amex
		return n == 15
	case p4 == 6011, p2 == 65, p3 >= 644 && p3 <= 649: // Discover
		return n >= 16 && n <= 19
	case p2 == 36, p3 >= 300 && p3 <= 305, p2 == 38, p2 == 39: // Diners
		return n >= 14 && n <= 19
	case p4 >= 3528 && p4 <= 3589: // JCB
		return n >= 16 && n <= 19
	case p2 == 62: // UnionPay
		return n >= 16 && n <= 19
	case p2 == 50, p2 >= 56 && p2 <= 58, p2 == 67: // Maestro
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

var ibanRE = regexp.MustCompile(`[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?`)

// ibanLength is the IBAN length per country for the countries we accept;
// an unknown country is not an IBAN as far as this package is concerned.
var ibanLength = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24,
	"FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21,
	"HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LI": 21,
	"LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30,
	"NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
	"SE": 24, "SI": 19, "SK": 24, "SM": 27, "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}

func findIBANs(text string, dst []Match) []Match {
	for _, loc := range ibanRE.FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if s > 0 && isAlnum(text[s-1]) {
			continue
		}
		want, ok := ibanLength[text[s:s+2]]
		if !ok {
			continue
		}
		// The pattern may have swallowed a following upper-case word
		// ("... 3000 THEN"); cut at the country's length if that falls
		// on a group boundary.
		n := 0
		end := -1
		for i := s; i < e; i++ {
			if text[i] != ' ' {
				n++
			}
			if n == want {
				end = i + 1
				break
			}
		}
		if end < 0 || (end < len(text) && isAlnum(text[end])) {
			continue
		}
		if validIBAN(text[s:end]) {
			dst = add(dst, KindIBAN, text, s, end)
		}
	}
	return dst
}

func validIBAN(v string) bool {
	c := strings.ReplaceAll(v, " ", "")
	if want, ok := ibanLength[c[:2]]; !ok || len(c) != want {
		return false
	}
	r := c[4:] + c[:4]
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		ch := r[i]
		switch {
		case isDigit(ch):
			b.WriteByte(ch)
		case 'A' <= ch && ch <= 'Z':
			b.WriteString(itoa(int(ch-'A') + 10))
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

func itoa(n int) string {
	return string([]byte{byte('0' + n/10), byte('0' + n%10)})
}

// IPV4

var ipv4RE = regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)

// versionCtx matches text just before a dotted quad that makes it a version
// number rather than an address: "v1.2.3.4", "version 10.0.1.5",
// "build 4.2.0.1", "Chrome/120.0.0.0" (product/version). Other dotted quads with valid octets are reported as
// addresses even when they are really versions: without context the two
// cannot be told apart, and missing an address costs more than a spare
// token.
var versionCtx = regexp.MustCompile(`(?i)(?:\bv|\bversion:?\s*|\bver\.?\s*|\brelease\s*|\bbuild\s*|\bfirmware\s*|\bkernel\s*|\brev\.?\s*|[A-Za-z]/)$`)

func findIPv4(text string, dst []Match) []Match {
	for _, loc := range ipv4RE.FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if !numBoundary(text, s, e, ".-") {
			continue
		}
		if s > 0 && text[s-1] == '.' {
			continue
		}
		lo := max(s-16, 0)
		if versionCtx.MatchString(text[lo:s]) {
			continue
		}
		ok := true
		for _, oct := range strings.Split(text[s:e], ".") {
			if (len(oct) > 1 && oct[0] == '0') || atoi(oct) > 255 {
				ok = false
			}
		}
		if ok {
			dst = add(dst, KindIPv4, text, s, e)
		}
	}
	return dst
}

// IPV6

var ipv6RE = regexp.MustCompile(`(?:[0-9A-Fa-f]{0,4}:){2,7}(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]{1,4})|(?:[0-9A-Fa-f]{1,4}:){1,7}:`)

func findIPv6(text string, dst []Match) []Match {
	for _, loc := range ipv6RE.FindAllStringIndex(text, -1) {
		s, e := loc[0], loc[1]
		if s > 0 && (isAlnum(text[s-1]) || text[s-1] == ':') {
			continue
		}
		if e < len(text) && (isAlnum(text[e]) || text[e] == ':') {
			continue
		}
		v := text[s:e]
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is6() || !strings.ContainsAny(v, "0123456789") {
			continue
		}
		// A lone "::" or "::1"-like run inside code ("std::") was already
		// refused by the boundary check; require some substance.
		if strings.Count(v, ":") < 2 {
			continue
		}
		dst = add(dst, KindIPv6, text, s, e)
	}
	return dst
}

// SECRET

var (
	awsKeyRE = regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)
	githubRE = regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})\b`)
	slackRE  = regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,250}`)
	pemRE    = regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----`)
	jwtRE    = regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{4,}={0,2}\.[A-Za-z0-9_\-]{4,}={0,2}\.[A-Za-z0-9_\-]{4,}={0,2}`)
	assignRE = regexp.MustCompile(`(?i)\b(?:[a-z0-9]+[_\-.])*(?:api[_\-]?key|apikey|access[_\-]?key|secret[_\-]?key|private[_\-]?key|client[_\-]?secret|access[_\-]?token|auth[_\-]?token|token|secret|password|passwd)["']?\s*[:=]\s*["']?([A-Za-z0-9_\-+/=.~]{16,512})`)
)

// minEntropy is the Shannon entropy, in bits per character, that an
// assigned value must reach to count as a secret: random 16+ character keys
// score about 3.7 and above, placeholders ("xxxxxxxxxxxxxxxx",
// "your_api_key_here") score lower or lack a digit.
const minEntropy = 3.3

func findSecrets(text string, dst []Match) []Match {
	for _, re := range []*regexp.Regexp{awsKeyRE, githubRE, slackRE, pemRE} {
		for _, loc := range re.FindAllStringIndex(text, -1) {
			dst = add(dst, KindSecret, text, loc[0], loc[1])
		}
	}
	for _, loc := range jwtRE.FindAllStringIndex(text, -1) {
		if jwtHeader(text[loc[0]:loc[1]]) {
			dst = add(dst, KindSecret, text, loc[0], loc[1])
		}
	}
	for _, loc := range assignRE.FindAllStringSubmatchIndex(text, -1) {
		s, e := loc[2], loc[3]
		for e > s && (text[e-1] == '.' || text[e-1] == '-') {
			e--
		}
		if e-s >= 16 && highEntropy(text[s:e]) {
			dst = add(dst, KindSecret, text, s, e)
		}
	}
	return dst
}

func jwtHeader(v string) bool {
	h, _, _ := strings.Cut(v, ".")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(h, "="))
	if err != nil {
		return false
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, alg := m["alg"]
	_, typ := m["typ"]
	return alg || typ
}

func highEntropy(v string) bool {
	var lower, upper, digit bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		lower = lower || ('a' <= c && c <= 'z')
		upper = upper || ('A' <= c && c <= 'Z')
		digit = digit || isDigit(c)
	}
	if !digit || !(lower || upper) {
		return false
	}
	return entropy(v) >= minEntropy
}

func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
