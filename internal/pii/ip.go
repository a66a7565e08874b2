package pii

import (
	"net/netip"
	"regexp"
	"strings"
)

// IPV4

// dottedQuads finds the regexp \d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}.
func dottedQuads(text string) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); {
		if !isDigit(text[i]) {
			i++
			continue
		}
		if e := quadAt(text, i); e > 0 {
			out = append(out, [2]int{i, e})
			i = e
			continue
		}
		i++
	}
	return out
}

// quadAt is the end of a dotted quad starting at i, or -1. Each number
// takes up to three digits, as the regexp's greedy \d{1,3} would, backing
// off when the dot is not where it must be.
func quadAt(text string, i int) int {
	var try func(pos, part int) int
	try = func(pos, part int) int {
		for n := 3; n >= 1; n-- {
			if pos+n > len(text) {
				continue
			}
			ok := true
			for k := pos; k < pos+n; k++ {
				if !isDigit(text[k]) {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			if part == 3 {
				return pos + n
			}
			if pos+n < len(text) && text[pos+n] == '.' {
				if e := try(pos+n+1, part+1); e > 0 {
					return e
				}
			}
		}
		return -1
	}
	return try(i, 0)
}

// versionCtx matches text just before a dotted quad that makes it a version
// number rather than an address: "v1.2.3.4", "version 10.0.1.5", "build
// 4.2.0.1", "Chrome/120.0.0.0" (product/version), "pkg==1.2.0.3",
// "lib@1.2.3.4", "OID 2.5.4.3". Other dotted quads with valid octets are
// reported as addresses even when they are really versions: without
// context the two cannot be told apart, and missing an address costs more
// than a spare token.
var versionCtx = regexp.MustCompile(`(?i)(?:\bv|\bversion:?\s*|\bver\.?\s*|\brelease\s*|\bbuild\s*|\bfirmware\s*|\bkernel\s*|\brev\.?\s*|\bupdate\s*|\bpatch\s*|\bsdk\s*|\bdriver\s*|[A-Za-z]/|[=~<>!]=\s*|\bv=|\boid[\s:=]*|urn:oid:|\bversions?["']?\s*[:=]\s*[\["'\s]*)$`)

// ipContext matches text before an address that says it is one.
var ipContext = regexp.MustCompile(`(?i)(?:\bip|\baddr(?:ess)?(?:es)?|\bhost|\bfrom|\bto|\bclient|\bserver|\bpeer|\bremote|\bsrc|\bdst|\bsource|\bdestination|\bgateway4?|\bdns|\bnameservers?|\bresolver|\bconnect(?:ing|ed)?(?: to)?|\bvia|\binet|\blisten(?:ing)?(?: on)?|\bping|@)[\s"':=\[{(,]*(?:\d{1,3}(?:\.\d{1,3}){3}[\s"',;]*)*$`)

// versionAfter matches what follows a dotted quad that is a version:
// a pre-release or build suffix ("-rc1", "+build5"), or an OID's "=" in a
// distinguished name.
var versionAfter = regexp.MustCompile(`^(?:-(?:rc|beta|alpha|dev|pre|snapshot)|\+[A-Za-z]|=)`)

func findIPv4(sc *scan, dst []Match) []Match {
	text := sc.text
	for _, loc := range dottedQuads(text) {
		s, e := loc[0], loc[1]
		if !numBoundary(text, s, e, ".") {
			continue
		}
		if s > 0 && text[s-1] == '.' {
			continue
		}
		lo := max(s-20, 0)
		// A product/version pair (Chrome/120.0.6099.71) is not followed
		// by a file extension or a file name's next part, as a path with
		// an address in it is (captures/192.0.2.7.pcap).
		inPath := fileExt(text, e) || e < len(text) && (text[e] == '_' || text[e] == '/')
		if versionCtx.MatchString(text[lo:s]) && !(inPath && strings.HasSuffix(text[lo:s], "/")) || versionAfter.MatchString(text[e:min(len(text), e+12)]) {
			continue
		}
		a, err := netip.ParseAddr(text[s:e])
		if err != nil || !a.Is4() {
			continue
		}
		// An address ending in .0 names a network ("10.0.0.0/8"), not a
		// host; dotted quads ending in .0 are also far more often versions
		// (Microsoft.NETCore.App 8.0.1.0).
		if a.As4()[3] == 0 {
			continue
		}
		// Four one-digit numbers (4.2.1.7) are a section, a version or a
		// well-known resolver (1.1.1.1) unless the text says it is an
		// address.
		if e-s == 7 && !ipContext.MatchString(text[max(s-64, 0):s]) {
			continue
		}
		if !personalIPv4(a) {
			continue
		}
		dst = sc.add(dst, KindIPv4, s, e)
	}
	return dst
}

// personalIPv4 reports whether an address can say something about someone:
// not the loopback, unspecified or broadcast address, nor a netmask or a
// wildcard mask (255.255.255.0, 0.0.0.255).
func personalIPv4(a netip.Addr) bool {
	if a.IsLoopback() || a.IsUnspecified() {
		return false
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if v == 0xffffffff {
		return false
	}
	// A netmask is ones then zeros; a wildcard mask zeros then ones. Only
	// those that look like masks (starting 255. or ending .255 with a
	// leading 0) are taken for one.
	if b[0] == 255 && isMask(v) {
		return false
	}
	if b[0] == 0 && isMask(^v) {
		return false
	}
	return true
}

func isMask(v uint32) bool {
	inv := ^v
	return inv&(inv+1) == 0
}

// IPV6

var ipv6RE = regexp.MustCompile(`(?:[0-9A-Fa-f]{0,4}:)+(?:\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[0-9A-Fa-f]{1,4})?`)

// ipv6Spans finds what ipv6RE matches, running it only on the runs of hex
// digits, colons and dots around each colon: on a whole text the regexp
// would try every hex letter of every word.
func ipv6Spans(text string) [][2]int {
	var out [][2]int
	hexy := func(c byte) bool { return isHex(c) || c == ':' || c == '.' }
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], ':')
		if j < 0 {
			break
		}
		s, e := i+j, i+j
		for s > 0 && hexy(text[s-1]) {
			s--
		}
		for e < len(text) && hexy(text[e]) {
			e++
		}
		if strings.Count(text[s:e], ":") >= 2 {
			for _, loc := range ipv6RE.FindAllStringIndex(text[s:e], -1) {
				out = append(out, [2]int{s + loc[0], s + loc[1]})
			}
		}
		i = e + 1
	}
	return out
}

func findIPv6(sc *scan, dst []Match) []Match {
	text := sc.text
	for _, loc := range ipv6Spans(text) {
		s, e := loc[0], loc[1]
		if strings.Count(text[s:e], ":") < 2 {
			continue
		}
		if s > 0 && (isAlnum(text[s-1]) || text[s-1] == '.') {
			continue
		}
		if e < len(text) && (isAlnum(text[e]) || text[e] == '.' && !fileExt(text, e)) {
			continue
		}
		// A trailing single colon belongs to the sentence or a port
		// ("[::1]:80" is bracketed; "fe80::1: up" is prose).
		v := text[s:e]
		if strings.HasSuffix(v, ":") && !strings.HasSuffix(v, "::") {
			v = v[:len(v)-1]
			e--
		}
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is6() || a.Is4In6() && !strings.Contains(v, ".") {
			continue
		}
		if !strings.ContainsAny(v, "0123456789") || a.IsLoopback() || a.IsUnspecified() {
			continue
		}
		// Eight groups without "::" are the only full form; fewer groups
		// without it are something else (a MAC address has six).
		if !strings.Contains(v, "::") && strings.Count(v, ":") != 7 && !strings.Contains(v, ".") {
			continue
		}
		dst = sc.add(dst, KindIPv6, s, e)
	}
	return dst
}
