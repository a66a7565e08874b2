package egress

import (
	"bufio"
	"context"
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
	"time"
)

// Proxy admits connections to Hosts only. The zero value admits nothing.
type Proxy struct {
	// Hosts are the "host:port" pairs admitted, compared without case.
	Hosts []string
	// Resolve looks a host name up; nil means net.DefaultResolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to an address that passed the checks; nil means a
	// net.Dialer with a 30 s timeout.
	Dial func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// Log gets one line per request, admitted or refused; nil is silent.
	Log *slog.Logger

	mu       sync.Mutex // guards refusals
	refusals []string
}

// maxRefusals bounds what Refusals keeps: a client that retries in a loop
// does not grow it.
const maxRefusals = 8

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

// CheckAddr says why a sandbox may not reach addr, or nil.
func CheckAddr(addr netip.Addr) error {
	addr = addr.Unmap()
	switch {
	case addr.IsLoopback():
		return fmt.Errorf("%w: %s is a loopback address", ErrRefused, addr)
	case addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast():
		return fmt.Errorf("%w: %s is a link-local address (cloud metadata lives there)", ErrRefused, addr)
	case addr.IsUnspecified() || addr.IsMulticast() || addr.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %s is not a unicast address", ErrRefused, addr)
	}
	for _, m := range metadata {
		if addr == m {
			return fmt.Errorf("%w: %s is a cloud metadata address", ErrRefused, addr)
		}
	}
	return nil
}

// Serve answers proxy requests on ln until it is closed or ctx ends.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second,
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
	target := r.Host
	if r.Method != http.MethodConnect {
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			p.refuse(w, r, http.StatusBadRequest, fmt.Errorf("%w: only CONNECT and absolute http:// requests are proxied", ErrRefused))
			return
		}
		target = r.URL.Host
		if r.URL.Port() == "" {
			target += ":80"
		}
	}
	conn, err := p.connect(r.Context(), target)
	if err != nil {
		p.refuse(w, r, http.StatusForbidden, err)
		return
	}
	defer conn.Close()
	p.logf("admitted", r, target, nil)
	if r.Method == http.MethodConnect {
		p.tunnel(w, conn)
		return
	}
	p.forward(w, r, conn)
}

// connect checks target against Hosts and the address rules and dials it.
func (p *Proxy) connect(ctx context.Context, target string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not host:port", ErrRefused, target)
	}
	if !p.listed(host, port) {
		return nil, fmt.Errorf("%w: %s is not a host this install may reach (%s)", ErrRefused, target, strings.Join(p.Hosts, ", "))
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = p.resolve(ctx, host); err != nil {
		return nil, fmt.Errorf("%w: resolve %s: %v", ErrRefused, host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", ErrRefused, host)
	}
	// Every answer is checked, not only the one dialled: a name that can
	// point inwards is refused outright.
	for _, a := range addrs {
		if err := CheckAddr(a); err != nil {
			return nil, fmt.Errorf("%s resolves to a forbidden address: %w", host, err)
		}
	}
	var portNum uint16
	if _, err := fmt.Sscan(port, &portNum); err != nil {
		return nil, fmt.Errorf("%w: bad port %q", ErrRefused, port)
	}
	var lastErr error
	for _, a := range addrs {
		conn, err := p.dial(ctx, netip.AddrPortFrom(a.Unmap(), portNum))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("connect %s: %w", target, lastErr)
}

func (p *Proxy) listed(host, port string) bool {
	want := strings.ToLower(net.JoinHostPort(strings.Trim(host, "[]"), port))
	for _, h := range p.Hosts {
		if strings.ToLower(h) == want {
			return true
		}
	}
	return false
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

// tunnel joins the client to conn after a CONNECT.
func (p *Proxy) tunnel(w http.ResponseWriter, conn net.Conn) {
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
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		io.Copy(conn, buf) // what the client sent after its request, then the rest
		closeWrite(conn)
	}()
	go func() {
		defer wg.Done()
		io.Copy(client, conn)
		closeWrite(client)
	}()
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

// forward sends a plain HTTP request over conn and copies the answer back.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, conn net.Conn) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Connection")
	out.Header.Del("Proxy-Authorization")
	out.Close = true
	if err := out.Write(conn); err != nil {
		http.Error(w, "forward: "+err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), out)
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

func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, status int, err error) {
	p.logf("refused", r, r.Host, err)
	p.mu.Lock()
	if reason := err.Error(); len(p.refusals) < maxRefusals && !slices.Contains(p.refusals, reason) {
		p.refusals = append(p.refusals, reason)
	}
	p.mu.Unlock()
	http.Error(w, err.Error(), status)
}

func (p *Proxy) logf(what string, r *http.Request, target string, err error) {
	if p.Log == nil {
		return
	}
	if err != nil {
		p.Log.Warn("egress "+what, "method", r.Method, "target", target, "reason", err)
		return
	}
	p.Log.Info("egress "+what, "method", r.Method, "target", target)
}
