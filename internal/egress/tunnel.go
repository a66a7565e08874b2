package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tunnel joins the client to up after a CONNECT, looking at what the
// client says first: a TLS ClientHello must name the CONNECT's host (or
// none), plain HTTP is relayed request by request with each Host checked
// (see relay), anything else (or a host that speaks first, as SSH does)
// is copied as it is.
func (p *Proxy) tunnel(client net.Conn, cr *bufio.Reader, up net.Conn, t target, m *Meter) {
	ur := bufio.NewReader(up)
	clientFirst, upFirst := peek(cr), peek(ur)
	select {
	case err := <-clientFirst:
		if err != nil {
			return
		}
		first, _ := cr.Peek(1)
		switch {
		case first[0] == 0x16: // a TLS handshake record
			if err := checkHello(cr, t); err != nil {
				p.logf("refused", "CONNECT", t.String(), err)
				p.noteRefusal(m, t, err)
				return
			}
		case 'A' <= first[0] && first[0] <= 'Z': // a request line's method
			p.relay(client, cr, up, ur, upFirst, t, nil, m)
			return
		}
		clientFirst = closed
	case err := <-upFirst:
		if err != nil {
			return
		}
		upFirst = closed
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if <-clientFirst == nil {
			io.Copy(up, cr)
		}
		closeWrite(up)
	}()
	go func() {
		defer wg.Done()
		if <-upFirst == nil {
			io.Copy(client, ur)
		}
		closeWrite(client)
	}()
	wg.Wait()
}

// closed is a channel that says "ready" at once, for a reader already peeked.
var closed = func() chan error { c := make(chan error, 1); close(c); return c }()

// peek waits, in a goroutine, for r's first byte. The reader is not to be
// read until the channel answers.
func peek(r *bufio.Reader) chan error {
	c := make(chan error, 1)
	go func() {
		_, err := r.Peek(1)
		c <- err
		close(c)
	}()
	return c
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

// checkHello reads (without consuming) the ClientHello at the head of cr
// and checks the name it asks for. A name that differs from the
// CONNECT's would reach another site behind the same address (a CDN's
// "domain fronting"); an address CONNECT takes no name at all.
func checkHello(cr *bufio.Reader, t target) error {
	head, err := cr.Peek(5)
	if err != nil {
		return fmt.Errorf("%w: a TLS record cut short", ErrRefused)
	}
	n := int(head[3])<<8 | int(head[4])
	rec, err := cr.Peek(5 + n)
	if err != nil {
		return fmt.Errorf("%w: a TLS ClientHello past one record", ErrRefused)
	}
	sni, ok := helloName(rec)
	switch {
	case !ok:
		return fmt.Errorf("%w: the tunnel to %s did not start with a TLS ClientHello", ErrRefused, t)
	case sni == "":
		return nil
	case t.name == "":
		return fmt.Errorf("%w: TLS asks for %q through a tunnel to the address %s", ErrRefused, clip(sni), t)
	case strings.TrimSuffix(strings.ToLower(sni), ".") != t.name:
		return fmt.Errorf("%w: TLS asks for %q through a tunnel to %s", ErrRefused, clip(sni), t)
	}
	return nil
}

// helloName returns the server name a ClientHello record asks for, by
// letting crypto/tls parse it and stopping the handshake there.
func helloName(record []byte) (name string, ok bool) {
	errStop := errors.New("stop")
	conn := &replay{r: bytes.NewReader(record)}
	tls.Server(conn, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name, ok = h.ServerName, true
		return nil, errStop
	}}).Handshake()
	return name, ok
}

// replay is a connection that reads from a buffer and writes nowhere.
type replay struct{ r io.Reader }

func (c *replay) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *replay) Write(b []byte) (int, error)      { return len(b), nil }
func (c *replay) Close() error                     { return nil }
func (c *replay) SetDeadline(time.Time) error      { return nil }
func (c *replay) SetReadDeadline(time.Time) error  { return nil }
func (c *replay) SetWriteDeadline(time.Time) error { return nil }
func (c *replay) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *replay) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

// intercept ends the client's TLS with a certificate for t's host that
// the proxy's CA issues, makes its own TLS connection to the host, and
// relays the requests between them with headers added.
func (p *Proxy) intercept(client net.Conn, cr *bufio.Reader, up net.Conn, t target, headers http.Header, m *Meter) {
	pol := p.policy()
	if err := checkHello(cr, t); err != nil {
		p.logf("refused", "CONNECT", t.String(), err)
		p.noteRefusal(m, t, err)
		return
	}
	cert, err := pol.CA.leaf(t.name)
	if err != nil {
		p.logf("refused", "CONNECT", t.String(), err)
		return
	}
	tc := tls.Server(&buffered{Conn: client, r: cr}, &tls.Config{
		Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	deadline := time.Now().Add(30 * time.Second)
	tc.SetDeadline(deadline)
	if err := tc.Handshake(); err != nil {
		return
	}
	tc.SetDeadline(time.Time{})
	uc := tls.Client(up, &tls.Config{ServerName: t.name, RootCAs: pol.Roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	uc.SetDeadline(deadline)
	if err := uc.Handshake(); err != nil {
		err = fmt.Errorf("%w: TLS to %s: %v", ErrRefused, t, err)
		p.logf("refused", "CONNECT", t.String(), err)
		p.noteRefusal(m, t, err)
		writeRefusal(tc, err)
		return
	}
	uc.SetDeadline(time.Time{})
	p.relay(tc, bufio.NewReader(tc), uc, bufio.NewReader(uc), closed, t, headers, m)
}

// buffered reads what a bufio.Reader holds before its connection.
type buffered struct {
	net.Conn
	r *bufio.Reader
}

func (b *buffered) Read(p []byte) (int, error) { return b.r.Read(p) }

// relay passes HTTP/1 requests from client to up one at a time, each
// checked to name t's host, with headers set, and their answers back; a
// request for another host ends the tunnel with a 403 answer. An upgrade
// (101) turns the rest into a plain copy. upReady says when up may be
// read (see tunnel's peek).
func (p *Proxy) relay(client net.Conn, cr *bufio.Reader, up net.Conn, ur *bufio.Reader, upReady chan error, t target, headers http.Header, m *Meter) {
	limit := &limited{r: cr}
	lr := bufio.NewReader(limit)
	for {
		limit.n = maxHeader
		req, err := http.ReadRequest(lr)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: a request in the tunnel to %s that is not HTTP/1 or is too long: %v", ErrRefused, t, err)
				p.noteRefusal(m, t, err)
				writeRefusal(client, err)
			}
			return
		}
		limit.n = -1
		if err := checkHost(req, t); err != nil {
			p.logf("refused", req.Method, t.String(), err)
			p.noteRefusal(m, t, err)
			writeRefusal(client, err)
			return
		}
		stripHop(req.Header)
		if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			// The body is copied to the host as the request is written,
			// so the client is told to send it now.
			req.Header.Del("Expect")
			if _, err := io.WriteString(client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				return
			}
		}
		for k, v := range headers {
			req.Header[k] = v
		}
		if err := req.Write(up); err != nil {
			return
		}
		if upReady != nil {
			if <-upReady != nil {
				return
			}
			upReady = nil
		}
		resp, err := http.ReadResponse(ur, req)
		// Informational answers (100 Continue, 103) come before the one
		// that ends the request: passed on as they come.
		for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if err = resp.Write(client); err == nil {
				resp, err = http.ReadResponse(ur, req)
			}
		}
		if err != nil {
			return
		}
		if err := resp.Write(client); err != nil {
			return
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			go io.Copy(up, lr)
			io.Copy(client, ur)
			return
		}
		if req.Close || resp.Close {
			return
		}
	}
}

// checkHost says whether a request in a tunnel names the tunnel's host
// (and port, when it names one).
func checkHost(req *http.Request, t target) error {
	host, port := req.Host, ""
	if h, p, err := net.SplitHostPort(req.Host); err == nil {
		host, port = h, p
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == t.host() && (port == "" || port == strconv.Itoa(int(t.port))) {
		return nil
	}
	return fmt.Errorf("%w: a request for %q in the tunnel to %s", ErrRefused, clip(req.Host), t)
}

// writeRefusal answers a request with a 403 whose status line and body
// say why, and closes the connection.
func writeRefusal(w io.Writer, err error) {
	reason := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, clip(strings.TrimPrefix(err.Error(), ErrRefused.Error()+": ")))
	body := err.Error() + "\n"
	fmt.Fprintf(w, "HTTP/1.1 403 Forbidden by codecell: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", reason, len(body), body)
}

// limited reads at most n bytes while n >= 0 (a header block's bound),
// without bound while n < 0.
type limited struct {
	r io.Reader
	n int
}

func (l *limited) Read(b []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(b)
	}
	if l.n == 0 {
		return 0, errors.New("header block too long")
	}
	if len(b) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= n
	return n, err
}
