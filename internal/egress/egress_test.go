package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// setup serves a proxy for hosts on a Unix socket and returns a client that
// goes through it. Names resolve by the table; every dial of a checked
// address reaches backend, a local test server, so nothing leaves the
// machine. A TLS backend's client trusts its certificate.
func setup(t *testing.T, backend *httptest.Server, hosts []string, table map[string][]netip.Addr) (*http.Client, *[]netip.AddrPort) {
	t.Helper()
	var dialled []netip.AddrPort
	p := &Proxy{
		Policy: mustHosts(t, hosts...),
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if a, ok := table[host]; ok {
				return a, nil
			}
			return nil, errors.New("no such host")
		},
		Dial: func(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
			dialled = append(dialled, addr)
			return (&net.Dialer{}).DialContext(ctx, "tcp", backend.Listener.Addr().String())
		},
	}
	sock := serveOn(t, p)
	proxyURL, _ := url.Parse("http://proxy.invalid")
	tr := backend.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(proxyURL)
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}
	if tr.TLSClientConfig != nil {
		tr.TLSClientConfig.ServerName = "example.com" // httptest's certificate names example.com
	}
	return &http.Client{Transport: tr}, &dialled
}

// indexServer is a local stand-in for a package index.
func indexServer(t *testing.T, tls bool) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "index page %s", r.URL.Path)
	})
	s := httptest.NewUnstartedServer(h)
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

var public = netip.MustParseAddr("203.0.113.7") // TEST-NET-3: never dialled for real here

func TestProxyAdmitsListedHosts(t *testing.T) {
	client, dialled := setup(t, indexServer(t, false), []string{"pkgs.example:80"}, map[string][]netip.Addr{"pkgs.example": {public}})
	resp, err := client.Get("http://pkgs.example/simple/demo/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "index page /simple/demo/" {
		t.Errorf("GET through the proxy: %s %q", resp.Status, body)
	}
	if len(*dialled) != 1 || (*dialled)[0] != netip.AddrPortFrom(public, 80) {
		t.Errorf("dialled %v, want the checked address", *dialled)
	}
}

func TestProxyRefuses(t *testing.T) {
	table := map[string][]netip.Addr{
		"pkgs.example":     {public},
		"rebind.example":   {public, netip.MustParseAddr("127.0.0.1")},
		"meta.example":     {netip.MustParseAddr("169.254.169.254")},
		"v6meta.example":   {netip.MustParseAddr("fd00:ec2::254")},
		"mapped.example":   {netip.MustParseAddr("::ffff:127.0.0.1")},
		"loopback.example": {netip.MustParseAddr("::1")},
	}
	hosts := []string{"pkgs.example:443", "rebind.example:443", "meta.example:80", "v6meta.example:443", "mapped.example:443", "loopback.example:443", "127.0.0.1:8080", "[::1]:443"}
	client, dialled := setup(t, indexServer(t, false), hosts, table)
	for _, tc := range []struct{ url, want string }{
		{"https://other.example/", "is not allowed"},
		{"https://pkgs.example:8443/", "is not allowed"},
		{"https://rebind.example/", "loopback"},
		{"http://meta.example/latest/meta-data/", "link-local"},
		{"https://v6meta.example/", "metadata"},
		{"https://mapped.example/", "loopback"},
		{"https://loopback.example/", "loopback"},
		{"http://127.0.0.1:8080/simple/", "loopback"},
		{"https://[::1]/", "loopback"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			resp, err := client.Get(tc.url)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), tc.want) {
					t.Errorf("%s: %s %q, want 403 saying %q", tc.url, resp.Status, body, tc.want)
				}
			} else if !strings.Contains(err.Error(), "Forbidden") {
				t.Errorf("%s: %v, want a 403", tc.url, err)
			}
		})
	}
	if len(*dialled) != 0 {
		t.Errorf("refused requests dialled %v", *dialled)
	}
}

func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"8.8.8.8": true, "10.1.2.3": true, "192.168.1.1": true, "2001:db8::1": true,
		"127.0.0.53": false, "0.0.0.0": false, "169.254.169.254": false, "fe80::1": false,
		"224.0.0.1": false, "::": false, "100.100.100.200": false, "::ffff:169.254.169.254": false,
	} {
		if err := CheckAddr(netip.MustParseAddr(addr)); (err == nil) != ok {
			t.Errorf("CheckAddr(%s) = %v", addr, err)
		}
	}
}

// TestProxyTunnels: an https:// request to a listed host goes through a
// CONNECT tunnel to the checked address, TLS end to end.
func TestProxyTunnels(t *testing.T) {
	client, dialled := setup(t, indexServer(t, true), []string{"example.com:443"}, map[string][]netip.Addr{"example.com": {public}})
	resp, err := client.Get("https://example.com/simple/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "index page /simple/" || len(*dialled) != 1 || (*dialled)[0] != netip.AddrPortFrom(public, 443) {
		t.Errorf("body %q, dialled %v", body, *dialled)
	}
}

// TestProxyRefusals: the proxy keeps why it refused, once per reason and
// boundedly, for whoever ran the client to show (issue #30: pip showed
// only "403 Forbidden", the unresolved name was in the log alone).
func TestProxyRefusals(t *testing.T) {
	p := &Proxy{Policy: mustHosts(t, "pypi.org:443"),
		Resolve: func(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no such host") }}
	for range 3 { // a retrying client: one reason kept
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodConnect, "pypi.org:443", nil))
		if rec.Code != http.StatusForbidden {
			t.Fatalf("CONNECT pypi.org:443: %d, want 403", rec.Code)
		}
	}
	for i := range 2 * maxRefusals {
		p.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodConnect, fmt.Sprintf("other%d.example:443", i), nil))
	}
	got := p.Refusals()
	if len(got) != maxRefusals {
		t.Fatalf("%d refusals kept, want %d: %q", len(got), maxRefusals, got)
	}
	if !strings.Contains(got[0], "resolve pypi.org: no such host") {
		t.Errorf("first refusal %q, want the resolver's reason", got[0])
	}
}

func mustHosts(t *testing.T, hosts ...string) *Policy {
	t.Helper()
	p, err := ForHosts(hosts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
