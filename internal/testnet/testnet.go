// Package testnet starts real test hosts for tests of the egress proxy: an HTTP and HTTPS
// server in a network namespace of its own, at a non-loopback address (the proxy refuses
// loopback), reached from the test's network namespace through a veth pair.
//
// Each host gets a /30 of its own in 10.213.0.0/16: the host side of the veth is .1, the
// server is .2. The namespace is named cc-<pid>-<n> and the host-side veth ccv<index>; Sweep
// deletes namespaces left behind by test processes that are gone. Start needs root and the
// `ip` command; without them it skips the test.
//
// The default handler (Options.Handler replaces it; requests are recorded either way):
//
//   - / and any path not below: 200, "hello from <Name>\n" then the canary line
//     "CANARY-<NAME>\n" (Canary), so a test can check that a forbidden host's body never
//     reached the client.
//   - /redirect?to=URL: 302 with Location URL.
//   - /auth?want=VALUE: 200 "authorized" if the Authorization header is exactly VALUE,
//     else 401 "unauthorized". The header's value is never echoed back.
//   - /bytes?n=N: N bytes of 'x', N at most 256 MiB, for byte-limit tests.
//   - /echo-host: the Host header as the server received it.
//   - /slow?seconds=S: answers "slept" after S seconds; gives up without an answer when the
//     client goes away or the host stops.
package testnet

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/proc"
	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` bind-mounts the namespaces it names.
const netnsDir = "/var/run/netns"

// MaxBytes is the largest n /bytes answers.
const MaxBytes = 256 << 20

// Host is an HTTP and HTTPS server in a network namespace of its own.
type Host struct {
	Name  string     // the DNS name its certificate is for
	Addr  netip.Addr // its address; the host side of the veth is Addr-1
	Netns string     // the network namespace, cc-<pid>-<n>

	handler http.Handler
	probe   string // the readiness probe's token; such requests are not recorded

	mu      sync.Mutex
	reqs    []Request
	stopped bool
	running sync.WaitGroup // handlers in flight, waited for on stop
	stop    chan struct{}  // closed on stop, so /slow returns
}

// Request is what a host recorded of one request.
type Request struct {
	Method, Host, Path string
	Header             http.Header
	TLS                bool
	Port               int    // the port it arrived on
	ServerName         string // SNI, "" if none (or plain HTTP)
}

// Requests returns every request the host received so far, in order (not Start's own
// readiness probes).
func (h *Host) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.reqs...)
}

// Canary is the line the default handler puts in its body for the host name:
// "CANARY-" and the name upper-cased with anything but letters and digits as '-'.
func Canary(name string) string {
	return "CANARY-" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '-'
	}, name)
}

// CA is a test certificate authority (ECDSA P-256, in memory).
type CA struct {
	CertPEM []byte
	Pool    *x509.CertPool

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a CA valid from an hour ago for a day (the margin absorbs clock skew).
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "codecell testnet CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Pool:    pool,
		cert:    cert,
		key:     key,
	}
}

// Leaf issues a server certificate for the DNS name and the IP addresses.
func (ca *CA) Leaf(t testing.TB, name string, ips ...netip.Addr) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Options configures Start.
type Options struct {
	Name string // DNS name (required), in the leaf cert's SANs along with the IP
	CA   *CA    // signs the HTTPS cert (required)
	// Ports are the HTTP ports, [80] if nil; TLSPorts the HTTPS ports, [443] if nil.
	// A non-nil empty slice means none.
	Ports    []int
	TLSPorts []int
	Handler  http.Handler // replaces the default handler if set
}

// Start creates the namespace, the veth pair, the addresses and routes, starts the servers,
// checks from the test's namespace that every port answers, and registers a cleanup that stops
// the servers and deletes the namespace and the veth. Without root or the `ip` command (or
// without the right to make namespaces) it skips the test.
func Start(t testing.TB, o Options) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("testnet: needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("testnet: no ip command: ", err)
	}
	if o.Name == "" || o.CA == nil {
		t.Fatal("testnet: Options.Name and Options.CA are required")
	}
	if o.Ports == nil {
		o.Ports = []int{80}
	}
	if o.TLSPorts == nil {
		o.TLSPorts = []int{443}
	}
	if len(o.Ports)+len(o.TLSPorts) == 0 {
		t.Fatal("testnet: no ports")
	}
	for _, p := range append(append([]int(nil), o.Ports...), o.TLSPorts...) {
		if p < 1 || p > 65535 {
			t.Fatalf("testnet: port %d", p)
		}
	}
	Sweep()

	h := &Host{Name: o.Name, handler: o.Handler, stop: make(chan struct{})}
	if h.handler == nil {
		h.handler = defaultHandler(o.Name, h.stop)
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	h.probe = hex.EncodeToString(tok[:])

	// The namespace. The counter makes the name unique in this process, the pid across live
	// processes; a name left by an earlier process with our pid is skipped, never reused.
	for try := 0; h.Netns == ""; try++ {
		if try == 100 {
			t.Fatal("testnet: no free namespace name")
		}
		name := fmt.Sprintf("cc-%d-%d", os.Getpid(), nsCounter.Add(1))
		out, err := ip("netns", "add", name)
		if err == nil {
			h.Netns = name
			continue
		}
		if strings.Contains(out, "File exists") {
			continue
		}
		if strings.Contains(out, "not permitted") || strings.Contains(out, "denied") {
			t.Skip("testnet: cannot make a network namespace: ", err)
		}
		t.Fatal("testnet: ", err)
	}
	var srv *http.Server
	veth := ""
	// One cleanup, registered before anything else can fail, tears down whatever was made.
	t.Cleanup(func() {
		if srv != nil {
			h.mu.Lock()
			h.stopped = true
			h.mu.Unlock()
			_ = srv.Close() // closes the connections first, so a /slow cut short cannot look answered
			close(h.stop)
			h.running.Wait()
		}
		if out, err := ip("netns", "del", h.Netns); err != nil && !strings.Contains(out, "No such file") {
			t.Errorf("testnet: %v", err)
		}
		// Deleting the namespace deletes the peer and with it the pair, but not necessarily
		// before `ip netns del` returns, and not at all while a socket still pins it.
		if veth != "" {
			if out, err := ip("link", "del", veth); err != nil && !strings.Contains(out, "Cannot find device") {
				t.Errorf("testnet: %v", err)
			}
		}
	})

	veth, sub := allocVeth(t, h.Netns)
	h.Addr = sub.Addr().Next().Next()
	gw := sub.Addr().Next()
	for _, args := range [][]string{
		{"addr", "add", gw.String() + "/30", "dev", veth},
		{"link", "set", veth, "up"},
		{"-n", h.Netns, "link", "set", "lo", "up"},
		{"-n", h.Netns, "addr", "add", h.Addr.String() + "/30", "dev", "veth0"},
		{"-n", h.Netns, "link", "set", "veth0", "up"},
		{"-n", h.Netns, "route", "add", "default", "via", gw.String()},
	} {
		if _, err := ip(args...); err != nil {
			t.Fatal("testnet: ", err)
		}
	}

	cert := o.CA.Leaf(t, o.Name, h.Addr)
	var addrs []string
	for _, p := range append(append([]int(nil), o.Ports...), o.TLSPorts...) {
		addrs = append(addrs, netip.AddrPortFrom(h.Addr, uint16(p)).String())
	}
	ls, err := listenIn(h.Netns, addrs)
	if err != nil {
		t.Fatal("testnet: ", err)
	}
	srv = &http.Server{
		Handler:           http.HandlerFunc(h.serve),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          h.errorLog(t),
	}
	for i, l := range ls {
		if i < len(o.Ports) {
			go func() { _ = srv.Serve(l) }()
		} else {
			go func() { _ = srv.ServeTLS(l, "", "") }()
		}
	}
	for i, a := range addrs {
		if err := h.waitReady(a, i >= len(o.Ports), o.CA.Pool); err != nil {
			t.Fatalf("testnet: %s (%s) does not answer from the test's namespace: %v", a, o.Name, err)
		}
	}
	return h
}

var nsCounter atomic.Int64

// allocVeth makes the veth pair, host side ccv<i> in this namespace and peer veth0 in ns, for
// the i-th /30 of 10.213.0.0/16. Creating the host side fails with "File exists" if another
// process (or an earlier run) holds i, which makes the pick atomic across processes; a /30 that
// something else already routes is skipped too.
func allocVeth(t testing.TB, ns string) (string, netip.Prefix) {
	t.Helper()
	const subnets = 1 << 14 // /30s in a /16
	start := (os.Getpid()*97 + int(nsCounter.Load())*13) % subnets
	for try := 0; try < 256; try++ {
		i := (start + try) % subnets
		sub := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte(i >> 6), byte(i&63) << 2}), 30)
		if inUse(sub) {
			continue
		}
		name := "ccv" + strconv.Itoa(i)
		out, err := ip("link", "add", name, "type", "veth", "peer", "name", "veth0", "netns", ns)
		if err == nil {
			return name, sub
		}
		if !strings.Contains(out, "File exists") {
			t.Fatal("testnet: ", err)
		}
	}
	t.Fatal("testnet: no free /30 in 10.213.0.0/16")
	return "", netip.Prefix{}
}

// inUse reports whether an address or route of this namespace overlaps p.
func inUse(p netip.Prefix) bool {
	addrs, _ := ip("-o", "-4", "addr", "show")
	routes, _ := ip("-4", "route", "show")
	for _, f := range strings.Fields(addrs + " " + routes) {
		if !strings.HasPrefix(f, "10.") {
			continue
		}
		q, err := netip.ParsePrefix(f)
		if err != nil {
			a, err := netip.ParseAddr(f)
			if err != nil {
				continue
			}
			q = netip.PrefixFrom(a, 32)
		}
		if q.Overlaps(p) {
			return true
		}
	}
	return false
}

// listenIn opens TCP listeners on addrs inside the named network namespace. A socket stays in
// the namespace it was made in, so only the making needs to happen there: on a locked thread
// switched into the namespace. That goroutine exits without unlocking, so the runtime kills the
// thread rather than let other goroutines run in the test host's namespace.
func listenIn(ns string, addrs []string) ([]net.Listener, error) {
	type result struct {
		ls  []net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(filepath.Join(netnsDir, ns))
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{nil, fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		var ls []net.Listener
		for _, a := range addrs {
			l, err := net.Listen("tcp", a)
			if err != nil {
				for _, l := range ls {
					_ = l.Close()
				}
				ch <- result{nil, err}
				return
			}
			ls = append(ls, l)
		}
		ch <- result{ls, nil}
	}()
	r := <-ch
	return r.ls, r.err
}

const probeHeader = "X-Testnet-Probe"

// waitReady GETs / on addr from this namespace until it answers. It retries because a loaded
// machine may take a moment; the deadline only bounds a host that never comes up.
func (h *Host) waitReady(addr string, useTLS bool, pool *x509.CertPool) error {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: h.Name, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	u := "http://" + addr + "/"
	if useTLS {
		u = "https://" + addr + "/"
	}
	deadline := time.Now().Add(time.Minute)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set(probeHeader, h.probe)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
}

// serve records the request and passes it to the handler; the readiness probe is answered here.
func (h *Host) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(probeHeader) == h.probe {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rec := Request{Method: r.Method, Host: r.Host, Path: r.URL.Path, Header: r.Header.Clone(), TLS: r.TLS != nil}
	if r.TLS != nil {
		rec.ServerName = r.TLS.ServerName
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			rec.Port = int(ap.Port())
		}
	}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		http.Error(w, "stopped", http.StatusServiceUnavailable)
		return
	}
	h.reqs = append(h.reqs, rec)
	h.running.Add(1) // under mu, so never after the cleanup's Wait began
	h.mu.Unlock()
	defer h.running.Done()
	h.handler.ServeHTTP(w, r)
}

func defaultHandler(name string, stop <-chan struct{}) http.Handler {
	hello := "hello from " + name + "\n" + Canary(name) + "\n"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch r.URL.Path {
		case "/redirect":
			if q.Get("to") == "" {
				http.Error(w, "no to", http.StatusBadRequest)
				return
			}
			// Set as given: http.Redirect would clean relative and odd URLs.
			w.Header().Set("Location", q.Get("to"))
			w.WriteHeader(http.StatusFound)
		case "/auth":
			got, ok := r.Header["Authorization"]
			if ok && len(got) == 1 && got[0] == q.Get("want") {
				_, _ = w.Write([]byte("authorized"))
				return
			}
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		case "/bytes":
			n, err := strconv.Atoi(q.Get("n"))
			if err != nil || n < 0 || n > MaxBytes {
				http.Error(w, "n must be 0 to 256 MiB", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(n))
			chunk := bytes.Repeat([]byte{'x'}, 32<<10)
			for n > 0 {
				k, err := w.Write(chunk[:min(n, len(chunk))])
				if err != nil {
					return
				}
				n -= k
			}
		case "/echo-host":
			_, _ = w.Write([]byte(r.Host))
		case "/slow":
			s, err := strconv.ParseFloat(q.Get("seconds"), 64)
			if err != nil || !(s >= 0) {
				http.Error(w, "bad seconds", http.StatusBadRequest)
				return
			}
			tm := time.NewTimer(time.Duration(s * float64(time.Second)))
			defer tm.Stop()
			select {
			case <-tm.C:
				_, _ = w.Write([]byte("slept"))
			case <-r.Context().Done():
			case <-stop:
				panic(http.ErrAbortHandler) // no answer, rather than an empty 200
			}
		default:
			_, _ = w.Write([]byte(hello))
		}
	})
}

// logWriter passes the server's error log (TLS handshake failures, say) to t.Logf, until the
// host stops: t.Logf after the test has finished panics.
type logWriter struct {
	t testing.TB
	h *Host
}

func (w logWriter) Write(p []byte) (int, error) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	if !w.h.stopped {
		w.t.Logf("testnet %s: %s", w.h.Name, bytes.TrimSpace(p))
	}
	return len(p), nil
}

func (h *Host) errorLog(t testing.TB) *log.Logger { return log.New(logWriter{t, h}, "", 0) }

var nsName = regexp.MustCompile(`^cc-([0-9]+)-[0-9]+$`)

// Sweep deletes the cc-<pid>-<n> namespaces whose process is gone (left by a crashed or killed
// test run). Deleting a namespace deletes its veth pair with it.
func Sweep() {
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		m := nsName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		_, _ = ip("netns", "del", e.Name()) // another process may be sweeping it too
	}
}

// ip runs the ip command and returns its output; the error includes it.
func ip(args ...string) (string, error) {
	out, err := proc.Command(context.Background(), "ip", args...).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), err
}
