package pii

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// An e-mail address is found from its @ (or %40, URL-encoded) outwards:
// the local part to the left, the domain to the right. The local part may
// hold letters of any script, digits, . _ + - and %XX escapes, an
// apostrophe between letters (o'brien@), or be quoted ("john doe"@). The
// domain's top-level domain must be one the Public Suffix List
// (golang.org/x/net/publicsuffix) knows, or a name reserved for private
// use (.test, .local, .internal...), so that logo@2x.png or a@b.c are not
// addresses. What is not an address although it has the shape of one:
// the user of an SSH or SCP remote (git@github.com:org/repo) and the user
// part of a URL (ssh://deploy@host).

// reservedTLDs are top-level names not in the Public Suffix List that
// addresses still use: RFC 2606 and 6761 names and common private ones.
var reservedTLDs = set("test", "example", "invalid", "localhost", "local", "internal", "corp", "lan", "home", "intranet", "localdomain")

func findEmails(sc *scan, dst []Match) []Match {
	text := sc.text
	for i := 0; i < len(text); i++ {
		var at, after int
		switch {
		case text[i] == '@':
			at, after = i, i+1
		case text[i] == '%' && i+3 <= len(text) && text[i+1] == '4' && text[i+2] == '0':
			at, after = i, i+3
		default:
			continue
		}
		s := localStart(text, at)
		if s < 0 {
			continue
		}
		e := domainEnd(text, after)
		if e < 0 {
			continue
		}
		if !emailContextOK(text, s, e) {
			continue
		}
		dst = sc.add(dst, KindEmail, s, e)
		i = e - 1
	}
	return dst
}

// localStart is where the local part ending at at starts, or -1.
func localStart(text string, at int) int {
	if at > 0 && text[at-1] == '"' {
		// A quoted local part: back to the opening quote on the same line.
		open := strings.LastIndexByte(text[:at-1], '"')
		if open < 0 || at-1-open > 64 || at-1-open < 1 || strings.ContainsAny(text[open+1:at-1], "\n\r\\") {
			return -1
		}
		if open > 0 && isWord(text[open-1]) {
			return -1
		}
		return open
	}
	s := at
	for s > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:s])
		switch {
		case r < utf8.RuneSelf && (isWord(byte(r)) || strings.IndexByte(".+-", byte(r)) >= 0):
		case r == '\'' && s-size > 0 && s < at && isLetterRune(lastRune(text[:s-size])) && isLetterRune(firstRune(text[s:])) && !stringPrefix(text[:s-size]):
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)):
		case r == '%' && s+2 <= at && isHex(text[s]) && isHex(text[s+1]) && text[s:s+2] != "40":
		default:
			goto done
		}
		s -= size
	}
done:
	// An escape sequence printed as text ("\njane@...") is not part of
	// the address.
	if s >= 1 && s < at && text[s-1] == '\\' && strings.IndexByte("nrtbf", text[s]) >= 0 {
		s++
	}
	for s < at && strings.IndexByte(".+-_", text[s]) >= 0 {
		s++
	}
	// A local part is at most 64 characters: before a longer run, in a
	// file name (00042_nnnn…_alice@example.com.txt), the address starts
	// after the last joiner that leaves it no longer.
	for at-s > 64 {
		i := strings.IndexAny(text[s:at], "_-.+")
		if i < 0 {
			return -1
		}
		s += i + 1
	}
	local := text[s:at]
	if local == "" || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return -1
	}
	// The password of a URL (ftp://user:pass@host) is not an address.
	if s >= 1 && text[s-1] == ':' && text[at] == '@' {
		if i := strings.LastIndex(text[max(0, s-140):s], "://"); i >= 0 && !strings.ContainsAny(text[max(0, s-140)+i+3:s-1], " \t\n/@") {
			return -1
		}
	}
	// The user part of a URL (ssh://git@host, https://user@host) is not an
	// address, unless it is one itself, its @ encoded
	// (smtp://jane%40example.com:pass@host). After three slashes
	// (file:///ada@example.org) it is a path, not a user.
	if s >= 2 && text[s-2:s] == "//" && (s < 3 || text[s-3] != '/') && text[at] == '@' {
		return -1
	}
	return s
}

// domainEnd is where the domain starting at s ends, or -1 if there is no
// valid domain there.
func domainEnd(text string, s int) int {
	e := s
	for e < len(text) {
		r, size := utf8.DecodeRuneInString(text[e:])
		if r < utf8.RuneSelf {
			c := byte(r)
			if !(isDigit(c) || isLetter(c) || c == '-' || c == '.') {
				break
			}
		} else if !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)) {
			break
		}
		e += size
	}
	for e > s && (text[e-1] == '.' || text[e-1] == '-') {
		e--
	}
	domain := text[s:e]
	labels := strings.Split(domain, ".")
	if len(labels) < 2 || len(domain) > 253 {
		return -1
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return -1
		}
	}
	// The greedy domain may run on into what follows the address: a file
	// extension (alice@example.com.txt) or a name's next part. The domain
	// is the longest prefix, in whole labels, that ends in a known
	// top-level domain.
	for n := len(labels); n >= 2; n-- {
		d := strings.Join(labels[:n], ".")
		if knownTLD(d, labels[n-1]) {
			return s + len(d)
		}
		// A dash after a known top-level domain starts the next part of a
		// name (judy@example.at-95.eml).
		if tld, _, ok := strings.Cut(labels[n-1], "-"); ok && tld != "" {
			d := strings.Join(append(labels[:n-1:n-1], tld), ".")
			if knownTLD(d, tld) {
				return s + len(d)
			}
		}
	}
	return -1
}

// knownTLD reports whether the domain's top-level domain exists.
func knownTLD(domain, tld string) bool {
	ascii, err := idna.Lookup.ToASCII(strings.ToLower(domain))
	if err != nil {
		// Lookup is strict about things real addresses do (underscores,
		// a few scripts); fall back to the punycode of each label.
		if ascii, err = idna.Punycode.ToASCII(strings.ToLower(domain)); err != nil {
			return false
		}
	}
	at := strings.LastIndexByte(ascii, '.')
	t := ascii[at+1:]
	if t == "" || isDigit(t[0]) {
		return false
	}
	if reservedTLDs[t] {
		return true
	}
	suffix, icann := publicsuffix.PublicSuffix(ascii)
	return icann || suffix != t
}

// emailContextOK rejects address-shaped text that is something else: an
// SSH or SCP remote (git@github.com:org/repo) or part of a longer token.
func emailContextOK(text string, s, e int) bool {
	if e < len(text) {
		c := text[e]
		// An underscore cannot be part of a host name: after a domain
		// that ends in a known top-level domain it starts the next part
		// of a file name (bob@corp.co.uk_report.csv).
		if c == '@' || isWord(c) && c != '_' {
			return false
		}
		if c == ':' && text[s:e] != "" && !strings.Contains(text[s:e], "%40") && e+1 < len(text) && (isWord(text[e+1]) || text[e+1] == '/' || text[e+1] == '~') {
			return false
		}
	}
	return true
}

// stringPrefix reports whether text ends with a word that is a Python
// string literal's prefix (b'jose@example.org' is a bytes repr, not an
// address with an apostrophe).
func stringPrefix(text string) bool {
	i := len(text)
	for i > 0 && isLetter(text[i-1]) {
		i--
	}
	if i > 0 && isWord(text[i-1]) {
		return false
	}
	switch strings.ToLower(text[i:]) {
	case "b", "r", "u", "f", "br", "rb", "fr", "rf":
		return true
	}
	return false
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isLetterRune(r rune) bool { return unicode.IsLetter(r) }

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}
