package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in, str string
		admits  []string // name:port
		refuses []string
	}{
		{"api.example.com", "api.example.com", []string{"api.example.com:443", "API.example.com.:80"}, []string{"api.example.com:8443", "x.api.example.com:443", "example.com:443"}},
		{"api.example.com:8443", "api.example.com:8443", []string{"api.example.com:8443"}, []string{"api.example.com:443"}},
		{"*.example.com", "*.example.com", []string{"a.example.com:443", "a.b.example.com:80"}, []string{"example.com:443", "badexample.com:443", "a.example.com:22"}},
		{"api.example.com:*", "api.example.com:*", []string{"api.example.com:22", "api.example.com:65535"}, []string{"other.example.com:22"}},
	} {
		r, err := ParseRule(tc.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.in, err)
			continue
		}
		if r.String() != tc.str {
			t.Errorf("ParseRule(%q).String() = %q", tc.in, r.String())
		}
		for _, a := range tc.admits {
			tg, err := parseTarget(a)
			if err != nil || !r.matchName(tg.name, tg.port) {
				t.Errorf("%q does not admit %s (%v)", tc.in, a, err)
			}
		}
		for _, a := range tc.refuses {
			if tg, err := parseTarget(a); err == nil && r.matchName(tg.name, tg.port) {
				t.Errorf("%q admits %s", tc.in, a)
			}
		}
	}
	for _, tc := range []struct {
		in   string
		addr string
		port uint16
		ok   bool
	}{
		{"10.0.0.0/8:5432", "10.1.2.3", 5432, true},
		{"10.0.0.0/8:5432", "10.1.2.3", 443, false},
		{"203.0.113.7", "203.0.113.7", 443, true},
		{"203.0.113.7", "::ffff:203.0.113.7", 80, true},
		{"[2001:db8::/32]:443", "2001:db8::1", 443, true},
		{"2001:db8::/32", "2001:db9::1", 443, false},
	} {
		r, err := ParseRule(tc.in)
		if err != nil {
			t.Fatalf("ParseRule(%q): %v", tc.in, err)
		}
		if got := r.matchAddr(netip.MustParseAddr(tc.addr), tc.port); got != tc.ok {
			t.Errorf("%q admits %s:%d = %v", tc.in, tc.addr, tc.port, got)
		}
	}
	for _, bad := range []string{"", "https://api.example.com", "api.example.com:0", "api.example.com:99999", "localhost",
		"-bad.example.com", "bad_.exa mple.com", "[::1", "api.example.com:", "*.", "fe80::1%eth0"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
}

// TestParseTarget: only the usual spellings of an address pass; every
// other spelling a resolver would read as one is refused, not looked up.
func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"api.example.com:443":  "api.example.com:443",
		"API.Example.COM.:443": "api.example.com:443",
		"10.1.2.3:80":          "10.1.2.3:80",
		"[::ffff:10.1.2.3]:80": "10.1.2.3:80",
		"[2001:db8::1]:443":    "[2001:db8::1]:443",
	} {
		tg, err := parseTarget(in)
		if err != nil || tg.String() != want {
			t.Errorf("parseTarget(%q) = %v, %v; want %s", in, tg, err, want)
		}
	}
	for _, bad := range []string{"2130706433:80", "0x7f000001:80", "0177.0.0.1:80", "127.1:80", "0x7f.1:80", "010.001.002.003:80",
		"api.example.com", "api.example.com:0", "api.example.com:65536", "api.example.com:+443", "api.example.com:0443",
		"[fe80::1%25eth0]:80", "a b.example.com:80", "%31%32%37.0.0.1:80", "api.example.com :443"} {
		if tg, err := parseTarget(bad); err == nil {
			t.Errorf("parseTarget(%q) = %v, want an error", bad, tg)
		}
	}
	if _, err := parseTarget("2130706433:80"); err == nil || !strings.Contains(err.Error(), "dotted decimal") {
		t.Errorf("a decimal address's error: %v", err)
	}
}
