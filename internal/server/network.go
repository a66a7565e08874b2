package server

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/netip"
	"os"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/egress"
	"github.com/codecell/codecell/internal/sandbox"
)

// networks are the namespaces' sandbox networks (sandbox.network), made
// once: the sandbox pools per Network value, so each namespace keeps one.
type networks struct {
	all  *sandbox.Network            // the config's allow list; nil with mode "none"
	byNS map[string]*sandbox.Network // the namespaces the config gives their own
}

// systemRoots are where Debian and its kin keep the system's certificates.
var systemRoots = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}

func newNetworks(c config.Network) (*networks, error) {
	n := &networks{byNS: map[string]*sandbox.Network{}}
	if c.Mode != "allowlist" {
		return n, nil
	}
	pins := map[string][]netip.Addr{}
	for name, addrs := range c.Hosts {
		for _, a := range addrs {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				return nil, fmt.Errorf("sandbox.network.hosts.%s: %w", name, err)
			}
			pins[name] = append(pins[name], ip)
		}
	}
	// The code trusts what the system trusts, the operator's roots, and
	// the proxy's CA where it adds headers.
	var trust []byte
	for _, f := range systemRoots {
		if b, err := os.ReadFile(f); err == nil {
			trust = b
			break
		}
	}
	var roots *x509.CertPool
	if c.Roots != "" {
		pem, err := os.ReadFile(c.Roots)
		if err != nil {
			return nil, fmt.Errorf("sandbox.network.roots: %w", err)
		}
		if roots, err = x509.SystemCertPool(); err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("sandbox.network.roots: %s holds no PEM certificate", c.Roots)
		}
		trust = append(append(trust, '\n'), pem...)
	}
	var ca *egress.CA
	if len(c.Headers) > 0 || anyHeaders(c.Namespaces) {
		var err error
		if ca, err = egress.NewCA(); err != nil {
			return nil, fmt.Errorf("sandbox.network: the proxy's CA: %w", err)
		}
		trust = append(append(trust, '\n'), ca.CertPEM...)
	}
	build := func(allow []string, headers map[string]map[string]string) (*sandbox.Network, error) {
		if len(allow) == 0 {
			return nil, nil
		}
		rules, err := egress.ParseRules(allow)
		if err != nil {
			return nil, err
		}
		pol := &egress.Policy{Allow: rules, Pins: pins, CA: ca, Roots: roots}
		if len(headers) > 0 {
			pol.Headers = map[string]http.Header{}
			for host, hs := range headers {
				h := http.Header{}
				for k, v := range hs {
					h.Set(k, v)
				}
				pol.Headers[host] = h
			}
		}
		return &sandbox.Network{Policy: pol, MaxConnections: c.MaxConnections, MaxBytes: c.MaxBytes, Trust: trust}, nil
	}
	var err error
	if n.all, err = build(c.Allow, c.Headers); err != nil {
		return nil, fmt.Errorf("sandbox.network.allow: %w", err)
	}
	for ns, nn := range c.Namespaces {
		if n.byNS[ns], err = build(nn.Allow, nn.Headers); err != nil {
			return nil, fmt.Errorf("sandbox.network.namespaces.%s.allow: %w", ns, err)
		}
	}
	return n, nil
}

func anyHeaders(nss map[string]config.NamespaceNetwork) bool {
	for _, nn := range nss {
		if len(nn.Headers) > 0 {
			return true
		}
	}
	return false
}

// of is namespace ns's network; nil means none.
func (n *networks) of(ns string) *sandbox.Network {
	if nn, ok := n.byNS[ns]; ok {
		return nn
	}
	return n.all
}
