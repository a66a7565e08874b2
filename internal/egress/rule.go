package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Rule admits destinations by name or by address, on some ports.
//
// The forms ParseRule reads:
//
//	api.example.com          that name, on ports 80 and 443
//	api.example.com:8443     that name, on that port
//	*.example.com            every name under example.com (not example.com itself)
//	api.example.com:*        that name, on any port
//	203.0.113.7, 10.0.0.0/8  that address or those addresses written as such, on
//	                         ports 80 and 443; a name another rule admits may
//	                         resolve there even when the address is private
//	10.0.0.0/8:5432          the same, on that port
//	[2001:db8::/32]:443      IPv6 with a port takes brackets
type Rule struct {
	name     string       // lower case, no trailing dot; "" for an address rule
	wildcard bool         // name is a suffix: "*.name"
	prefix   netip.Prefix // valid for an address rule
	port     uint16       // 0 with anyPort false means 80 and 443
	anyPort  bool
}

// ParseRule reads one allow rule.
func ParseRule(s string) (Rule, error) {
	var r Rule
	if strings.Contains(s, "://") {
		return r, fmt.Errorf("%q is a URL: write its host (api.example.com) or host:port", s)
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return r, fmt.Errorf("%q: missing ]", s)
		}
		host, port = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if port == "" && end+1 < len(s) {
			return r, fmt.Errorf("%q: write [address]:port", s)
		}
	} else if strings.Count(s, ":") == 1 {
		host, port, _ = strings.Cut(s, ":")
		if port == "" {
			return r, fmt.Errorf("%q: empty port", s)
		}
	}
	switch {
	case port == "":
	case port == "*":
		r.anyPort = true
	default:
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return r, fmt.Errorf("%q: %q is not a port (1 to 65535, or *)", s, port)
		}
		r.port = uint16(n)
	}
	if p, err := netip.ParsePrefix(host); err == nil {
		r.prefix = p.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return r, fmt.Errorf("%q: an address with a zone", s)
		}
		a = a.Unmap()
		r.prefix = netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		r.wildcard, name = true, rest
	}
	if err := checkName(name); err != nil {
		return r, fmt.Errorf("%q: %w (write a name such as api.example.com or *.example.com, an address or a CIDR)", s, err)
	}
	if !r.wildcard && !strings.Contains(name, ".") {
		return r, fmt.Errorf("%q: a single-label name (write the full name)", s)
	}
	r.name = name
	return r, nil
}

// ParseRules reads every rule, or says which one is wrong.
func ParseRules(list []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(list))
	for _, s := range list {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func (r Rule) String() string {
	host := r.name
	if r.wildcard {
		host = "*." + host
	}
	if r.prefix.IsValid() {
		host = r.prefix.String()
		if r.prefix.IsSingleIP() {
			host = r.prefix.Addr().String()
		}
		if r.prefix.Addr().Is6() && (r.port != 0 || r.anyPort) {
			host = "[" + host + "]"
		}
	}
	switch {
	case r.anyPort:
		return host + ":*"
	case r.port != 0:
		return host + ":" + strconv.Itoa(int(r.port))
	}
	return host
}

func (r Rule) portOK(port uint16) bool {
	switch {
	case r.anyPort:
		return true
	case r.port != 0:
		return port == r.port
	}
	return port == 80 || port == 443
}

// matchName says whether the rule admits the name (lower case, canonical).
func (r Rule) matchName(name string, port uint16) bool {
	if r.name == "" || !r.portOK(port) {
		return false
	}
	if r.wildcard {
		return strings.HasSuffix(name, "."+r.name)
	}
	return name == r.name
}

// matchAddr says whether the rule admits the address.
func (r Rule) matchAddr(a netip.Addr, port uint16) bool {
	return r.prefix.IsValid() && r.portOK(port) && r.prefix.Contains(a.Unmap())
}

// target is a destination as a request names it, checked for form.
type target struct {
	name string     // canonical lower-case name; "" for an address
	addr netip.Addr // valid for an address literal
	port uint16
}

func (t target) String() string {
	if t.name != "" {
		return net.JoinHostPort(t.name, strconv.Itoa(int(t.port)))
	}
	return netip.AddrPortFrom(t.addr, t.port).String()
}

// host is the target's host as a Host header or SNI names it.
func (t target) host() string {
	if t.name != "" {
		return t.name
	}
	return t.addr.String()
}

// parseTarget reads "host:port". Only canonical spellings pass: a host is
// a DNS name or an address in its usual form (dotted decimal, or IPv6 in
// brackets), never the other spellings that resolvers accept for an
// address (2130706433, 0x7f.1, 0177.0.0.1, 127.1), which could slip an
// address past a rule written for names.
func parseTarget(hostport string) (target, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return target{}, fmt.Errorf("%q is not host:port", hostport)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != port {
		return target{}, fmt.Errorf("%q: %q is not a port", hostport, port)
	}
	t := target{port: uint16(n)}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return target{}, fmt.Errorf("%q: an address with a zone", hostport)
		}
		if a.Is4() && a.String() != host {
			return target{}, fmt.Errorf("%q: not an address in its usual form", hostport)
		}
		t.addr = a.Unmap()
		return t, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if looksNumeric(name) {
		return target{}, fmt.Errorf("%q: %q spells an address in a form codecell does not accept (write it as dotted decimal)", hostport, host)
	}
	if err := checkName(name); err != nil {
		return target{}, fmt.Errorf("%q: %w", hostport, err)
	}
	t.name = name
	return t, nil
}

// looksNumeric says whether name could be read as an IPv4 address by
// inet_aton: labels of digits, or of hex with a 0x prefix.
func looksNumeric(name string) bool {
	for _, label := range strings.Split(name, ".") {
		l := strings.TrimPrefix(label, "0x")
		if l == "" {
			continue
		}
		hex := len(l) != len(label)
		for _, c := range l {
			if !('0' <= c && c <= '9' || hex && ('a' <= c && c <= 'f')) {
				return false
			}
		}
	}
	// A name of letters only ("a.b") is no address; the checks above let
	// only digit and 0x labels through, so any label decides.
	return name != ""
}

var errName = errors.New("not a host name")

// checkName accepts a DNS host name: labels of letters, digits and inner
// hyphens (underscores too, which some hosts use), 1 to 63 each, 253 in all.
func checkName(name string) error {
	if name == "" || len(name) > 253 {
		return errName
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return errName
		}
		for _, c := range label {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return errName
			}
		}
	}
	return nil
}

// Admits says whether the rule admits the name (as a request would name
// it) on port.
func (r Rule) Admits(name string, port uint16) bool {
	return r.matchName(strings.ToLower(strings.TrimSuffix(name, ".")), port)
}
