package egress

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Policy is what a proxy lets through. It is read, never changed, once a
// Proxy serves it, so one Policy serves many proxies.
type Policy struct {
	// Allow admits destinations (see Rule); nothing else passes.
	Allow []Rule
	// Pins resolve names (lower case) without DNS: the operator's word
	// for where a host is. A pinned address may be a private one.
	Pins map[string][]netip.Addr
	// Private admits private addresses (RFC 1918, unique local, shared
	// address space) for every admitted name, as a package index inside
	// an organisation needs. Without it a name that resolves to one is
	// refused unless a pin or an address rule says it may.
	Private bool
	// Headers are added to every HTTPS request to a host on port 443 (the
	// lower-case name a rule admits), such as an Authorization the code
	// must not see: the proxy ends the code's TLS to that host with a certificate
	// CA issues, and makes its own to the host, verified against Roots.
	// A header the code sent under the same name is replaced.
	Headers map[string]http.Header
	CA      *CA
	Roots   *x509.CertPool // nil means the system's
}

// ForHosts is the policy of an installer: "host:port" pairs (see Rule),
// private addresses admitted, since package indexes live there too.
func ForHosts(hosts []string) (*Policy, error) {
	rules, err := ParseRules(hosts)
	if err != nil {
		return nil, err
	}
	return &Policy{Allow: rules, Private: true}, nil
}

// Proxy serves a Policy. The zero Policy admits nothing.
type Proxy struct {
	Policy *Policy
	// Resolve looks a host name up; nil means net.DefaultResolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to an address that passed the checks; nil means a
	// net.Dialer with a 30 s timeout.
	Dial func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// Log gets one line per connection, admitted or refused; nil is
	// silent. It never gets a header's value.
	Log *slog.Logger

	meter atomic.Pointer[Meter]

	mu       sync.Mutex // guards refusals
	refusals []string
}

// SetMeter makes m count and bound the connections from now on (one
// execution's); nil counts nothing.
func (p *Proxy) SetMeter(m *Meter) { p.meter.Store(m) }

// maxRefusals bounds what Refusals keeps: a client that retries in a loop
// does not grow it.
const maxRefusals = 8

// maxHeader bounds one request's header block, in a tunnel as in a
// request to the proxy itself.
const maxHeader = 64 << 10

// Refusals returns why the proxy refused requests so far, each reason
// once, in order, at most maxRefusals. A client such as pip shows only
// the status ("Tunnel connection failed: 403 Forbidden"); whoever ran it
// adds these to its error, so that the cause (a name that did not
// resolve, a host not admitted) reaches the user and not only the log.
func (p *Proxy) Refusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refusals...)
}

// ErrRefused wraps every refusal.
var ErrRefused = errors.New("refused by codecell's egress proxy")

// metadata are cloud metadata endpoints outside the link-local range.
var metadata = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
}

// CheckAddr says why a sandbox may never reach addr, whatever the rules,
// or nil.
func CheckAddr(addr netip.Addr) error {
	addr = addr.Unmap()
	switch {
	case addr.IsLoopback():
		return fmt.Errorf("%w: %s is a loopback address", ErrRefused, addr)
	case addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast():
		return fmt.Errorf("%w: %s is a link-local address (cloud metadata lives there)", ErrRefused, addr)
	case addr.IsUnspecified() || addr.IsMulticast() || addr.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %s is not a unicast address", ErrRefused, addr)
	case addr.Is4() && addr.As4()[0] == 0, addr.Is4() && addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%w: %s is not a unicast address", ErrRefused, addr)
	}
	if slices.Contains(metadata, addr) {
		return fmt.Errorf("%w: %s is a cloud metadata address", ErrRefused, addr)
	}
	return nil
}

// sharedSpace is 100.64.0.0/10 (RFC 6598), private in all but name.
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

func isPrivate(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsPrivate() || sharedSpace.Contains(a)
}

// Serve answers proxy requests on ln until it is closed or ctx ends.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, MaxHeaderBytes: maxHeader,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

// ServeHTTP handles one proxy request: CONNECT host:port, or a plain HTTP
// request in absolute form.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := p.meter.Load()
	hostport := r.Host
	if r.Method != http.MethodConnect {
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			p.refuse(w, r, m, target{}, fmt.Errorf("%w: only CONNECT host:port and absolute http:// requests are proxied, not %s %s", ErrRefused, r.Method, clip(r.RequestURI)))
			return
		}
		// r.Host is the URL's host here (a Host header is ignored, as
		// RFC 9112 says for a request in absolute form), and it is what
		// the host is sent.
		hostport = r.URL.Host
		if r.URL.Port() == "" {
			hostport = net.JoinHostPort(r.URL.Hostname(), "80")
		}
	}
	t, err := parseTarget(hostport)
	if err != nil {
		p.refuse(w, r, m, target{}, fmt.Errorf("%w: %v", ErrRefused, err))
		return
	}
	if !m.admit() {
		p.refuse(w, r, m, t, fmt.Errorf("%w: this execution made its most connections (sandbox.network.maxConnections)", ErrRefused))
		return
	}
	conn, err := p.connect(r.Context(), t)
	if err != nil {
		p.refuse(w, r, m, t, err)
		return
	}
	f := m.record(t.host(), int(t.port), "")
	up := &counted{Conn: conn, m: m, f: f}
	defer up.Close()
	p.logf("admitted", r.Method, t.String(), nil)
	if r.Method != http.MethodConnect {
		p.forward(w, r, up)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer client.Close()
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	// Room for a whole TLS ClientHello (one record, at most 16 KiB) past
	// what the server's reader already holds.
	cr := bufio.NewReaderSize(buf.Reader, 17<<10)
	pol := p.policy()
	if h := pol.Headers[t.name]; h != nil && pol.CA != nil && t.port == 443 {
		p.intercept(client, cr, up, t, h, m)
		return
	}
	p.tunnel(client, cr, up, t, m)
}

func (p *Proxy) policy() *Policy {
	if p.Policy == nil {
		return &Policy{}
	}
	return p.Policy
}

// connect checks t against the policy and the address rules and dials it.
func (p *Proxy) connect(ctx context.Context, t target) (net.Conn, error) {
	pol := p.policy()
	// A name is looked up only once a rule admits it: a lookup of any
	// name the code chose would carry what it encodes in the name to
	// whoever serves that domain's DNS.
	admitted := slices.ContainsFunc(pol.Allow, func(r Rule) bool {
		return t.name != "" && r.matchName(t.name, t.port) || t.addr.IsValid() && r.matchAddr(t.addr, t.port)
	})
	if !admitted {
		return nil, p.notListed(t)
	}
	addrs, pinned := pol.Pins[t.name]
	if t.addr.IsValid() {
		addrs = []netip.Addr{t.addr}
	} else if !pinned {
		var err error
		if addrs, err = p.resolve(ctx, t.name); err != nil {
			return nil, fmt.Errorf("%w: resolve %s: %v", ErrRefused, t.name, err)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", ErrRefused, t.host())
	}
	// Every answer is checked, not only the one dialled: a name that can
	// point inwards is refused outright.
	for _, a := range addrs {
		if err := CheckAddr(a); err != nil {
			return nil, fmt.Errorf("%s resolves to a forbidden address: %w", t.host(), err)
		}
		byAddr := slices.ContainsFunc(pol.Allow, func(r Rule) bool { return r.matchAddr(a, t.port) })
		if isPrivate(a) && !byAddr && !pinned && !pol.Private {
			return nil, fmt.Errorf("%w: %s resolves to %s, a private address (pin the name in sandbox.network.hosts, or allow the address, to reach it)", ErrRefused, t.host(), a.Unmap())
		}
	}
	var lastErr error
	for _, a := range addrs {
		conn, err := p.dial(ctx, netip.AddrPortFrom(a.Unmap(), t.port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("connect %s: %w", t, lastErr)
}

func (p *Proxy) notListed(t target) error {
	var rules []string
	for i, r := range p.policy().Allow {
		if i == 6 {
			rules = append(rules, "...")
			break
		}
		rules = append(rules, r.String())
	}
	if len(rules) == 0 {
		return fmt.Errorf("%w: %s is not allowed (nothing is)", ErrRefused, t)
	}
	return fmt.Errorf("%w: %s is not allowed (the allowlist: %s)", ErrRefused, t, strings.Join(rules, ", "))
}

func (p *Proxy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if p.Resolve != nil {
		return p.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

func (p *Proxy) dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	if p.Dial != nil {
		return p.Dial(ctx, addr)
	}
	d := net.Dialer{Timeout: 30 * time.Second}
	return d.DialContext(ctx, "tcp", addr.String())
}

// forward sends one plain HTTP request to the host over up and copies the
// answer back.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, up net.Conn) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Close = true
	stripHop(out.Header)
	if err := out.Write(up); err != nil {
		http.Error(w, "forward: "+err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), out)
	if err != nil {
		http.Error(w, "forward: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// stripHop removes what is for the proxy, not the host.
func stripHop(h http.Header) {
	h.Del("Proxy-Connection")
	h.Del("Proxy-Authorization")
}

func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, m *Meter, t target, err error) {
	p.logf("refused", r.Method, r.Host, err)
	p.noteRefusal(m, t, err)
	// The reason goes in the status line as well as the body: a client
	// that fails a CONNECT shows only the status line (Python's
	// "Tunnel connection failed: 403 ..."), so the code can print why.
	if hj, ok := w.(http.Hijacker); ok {
		if conn, buf, herr := hj.Hijack(); herr == nil {
			defer conn.Close()
			writeRefusal(buf, err)
			buf.Flush()
			return
		}
	}
	http.Error(w, err.Error(), http.StatusForbidden)
}

// noteRefusal keeps why for Refusals and the execution's flows.
func (p *Proxy) noteRefusal(m *Meter, t target, err error) {
	reason := err.Error()
	p.mu.Lock()
	if len(p.refusals) < maxRefusals && !slices.Contains(p.refusals, reason) {
		p.refusals = append(p.refusals, reason)
	}
	p.mu.Unlock()
	host := t.host()
	if !t.addr.IsValid() && t.name == "" {
		host = "?"
	}
	m.record(host, int(t.port), strings.TrimPrefix(reason, ErrRefused.Error()+": "))
}

func (p *Proxy) logf(what, method, target string, err error) {
	if p.Log == nil {
		return
	}
	if err != nil {
		p.Log.Warn("egress "+what, "method", method, "target", clip(target), "reason", err)
		return
	}
	p.Log.Info("egress "+what, "method", method, "target", target)
}

// clip shortens what the code sent for a message or a log line.
func clip(s string) string {
	if len(s) > 200 {
		return strings.ToValidUTF8(s[:200], "") + "..."
	}
	return s
}

// counted counts the bytes through a connection to a host on its Meter
// and cuts it once the execution is past its bound.
type counted struct {
	net.Conn
	m    *Meter
	f    *Flow
	once sync.Once
}

var errBytes = fmt.Errorf("%w: this execution moved its most bytes (sandbox.network.maxBytes)", ErrRefused)

func (c *counted) Read(b []byte) (int, error) {
	if c.m.over() {
		c.cut()
		return 0, errBytes
	}
	n, err := c.Conn.Read(b)
	c.m.add(c.f, 0, int64(n))
	return n, err
}

func (c *counted) Write(b []byte) (int, error) {
	if c.m.over() {
		c.cut()
		return 0, errBytes
	}
	n, err := c.Conn.Write(b)
	c.m.add(c.f, int64(n), 0)
	return n, err
}

func (c *counted) cut() {
	c.once.Do(func() {
		if c.f != nil {
			c.m.record(c.f.Host, c.f.Port, strings.TrimPrefix(errBytes.Error(), ErrRefused.Error()+": "))
		}
		c.Conn.Close()
	})
}

func (c *counted) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
