package sandbox

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/egress"
	"github.com/codecell/codecell/internal/testnet"
)

// netEnv is a test network: api.test.example (allowed on 443 only, by
// name) and other.test.example (never allowed), each in a network
// namespace of its own with HTTP on 80 and HTTPS on 443, both pinned; a
// server on the host's loopback; and a Network for the sandbox.
type netEnv struct {
	api, other *testnet.Host
	loopback   *httptest.Server
	ca         *testnet.CA
	network    *Network
}

func newNetEnv(t *testing.T, allow ...string) *netEnv {
	t.Helper()
	ca := testnet.NewCA(t)
	e := &netEnv{ca: ca,
		api:   testnet.Start(t, testnet.Options{Name: "api.test.example", CA: ca}),
		other: testnet.Start(t, testnet.Options{Name: "other.test.example", CA: ca}),
	}
	e.loopback = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("CANARY-LOOPBACK\n"))
	}))
	t.Cleanup(e.loopback.Close)
	if len(allow) == 0 {
		allow = []string{"api.test.example:443"}
	}
	rules, err := egress.ParseRules(allow)
	if err != nil {
		t.Fatal(err)
	}
	trust, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Skipf("no system trust store: %v", err)
	}
	e.network = &Network{
		Policy: &egress.Policy{Allow: rules, Roots: ca.Pool, Pins: map[string][]netip.Addr{
			"api.test.example": {e.api.Addr}, "other.test.example": {e.other.Addr}}},
		MaxConnections: 50, MaxBytes: 8 << 20,
		Trust: append(append(trust, '\n'), ca.CertPEM...),
	}
	return e
}

// globals are what the attack corpus's snippets are told.
func (e *netEnv) globals() map[string]any {
	port := e.loopback.Listener.Addr().(*net.TCPAddr).Port
	return map[string]any{"API_IP": e.api.Addr.String(), "OTHER_IP": e.other.Addr.String(), "LOOPBACK_PORT": port}
}

func execNet(t *testing.T, m *Manager, ws string, n *Network, code string, globals map[string]any) *Result {
	t.Helper()
	return m.Exec(context.Background(), Request{Workspace: ws, Code: code, Network: n, Context: globals, Timeout: 60 * time.Second})
}

// TestNetworkAllowlist: code reaches the allowed host over HTTPS with
// urllib and with http.client, and the answer lists what went out; every
// other destination is refused with a reason the code can print.
func TestNetworkAllowlist(t *testing.T) {
	for _, level := range []Level{Production, Hardened} {
		t.Run(string(level), func(t *testing.T) { testNetworkAllowlist(t, level) })
	}
}

func testNetworkAllowlist(t *testing.T, level Level) {
	m, ws := newTestManager(t, level, DefaultLimits, 0)
	e := newNetEnv(t)
	res := execNet(t, m, ws, e.network, `
import urllib.request, http.client
print(urllib.request.urlopen("https://api.test.example/", timeout=10).read().decode())
c = http.client.HTTPSConnection("api.test.example", timeout=10)
c.request("GET", "/echo-host")
print("direct:", c.getresponse().read().decode())
`, nil)
	if !res.OK || !strings.Contains(res.Stdout, testnet.Canary("api.test.example")) || !strings.Contains(res.Stdout, "direct: api.test.example") {
		t.Fatalf("allowed host: ok=%v stdout=%q error=%+v", res.OK, res.Stdout, res.Error)
	}
	if len(res.Network) != 1 || res.Network[0].Host != "api.test.example" || res.Network[0].Port != 443 ||
		res.Network[0].Connections != 2 || res.Network[0].Sent == 0 || res.Network[0].Received == 0 || res.Network[0].Refused != "" {
		t.Errorf("network = %+v, want two connections to api.test.example:443 with bytes both ways", res.Network)
	}

	for _, tc := range []struct{ name, code, want string }{
		{"other host", `urllib.request.urlopen("https://other.test.example/", timeout=10)`, "other.test.example:443 is not allowed"},
		{"other port", `urllib.request.urlopen("http://api.test.example/", timeout=10)`, "api.test.example:80 is not allowed"},
		{"address", `urllib.request.urlopen("http://%s/" % OTHER_IP, timeout=10)`, "is not allowed"},
		// The sandbox's loopback is its own (NO_PROXY keeps it off the proxy).
		{"loopback", `urllib.request.urlopen("http://127.0.0.1:%d/" % LOOPBACK_PORT, timeout=10)`, "Connection refused"},
		{"direct socket", `import socket; socket.create_connection(("other.test.example", 443), timeout=10)`, "other.test.example:443 is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := execNet(t, m, ws, e.network, "import urllib.request\ntry:\n    "+tc.code+"\nexcept Exception as ex:\n    print('refused:', ex)\n    try: print(ex.read().decode())\n    except Exception: pass\n", e.globals())
			if !strings.Contains(res.Stdout, "refused:") || !strings.Contains(res.Stdout, tc.want) {
				t.Errorf("stdout %q (error %+v), want a refusal saying %q", res.Stdout, res.Error, tc.want)
			}
			for _, canary := range []string{testnet.Canary("other.test.example"), testnet.Canary("api.test.example"), "CANARY-LOOPBACK"} {
				if strings.Contains(res.Stdout+res.Stderr, canary) {
					t.Errorf("%s reached: %q", canary, res.Stdout)
				}
			}
			if tc.name != "loopback" && (len(res.Network) == 0 || res.Network[0].Refused == "") {
				t.Errorf("network = %+v, want the refusal listed", res.Network)
			}
		})
	}
	if n := len(e.other.Requests()); n != 0 {
		t.Errorf("other.test.example got %d requests", n)
	}
}

// TestNetworkHeaders: the proxy adds a secret header to HTTPS requests to
// its host, which the host sees; the code, its environment, its files and
// the answer never do, and a header of the same name the code sends is
// replaced.
func TestNetworkHeaders(t *testing.T) {
	m, ws := newTestManager(t, Production, DefaultLimits, 0)
	e := newNetEnv(t)
	const secret = "Bearer s3cr3t-token-never-in-the-sandbox"
	ca, err := egress.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	pol := *e.network.Policy
	pol.CA = ca
	pol.Headers = map[string]http.Header{"api.test.example": {"Authorization": {secret}}}
	n := *e.network
	n.Policy = &pol
	n.Trust = append(append([]byte{}, n.Trust...), ca.CertPEM...)
	res := execNet(t, m, ws, &n, `
import os, subprocess, urllib.request, urllib.parse
want = urllib.parse.quote(WANT)
print(urllib.request.urlopen("https://api.test.example/auth?want=" + want, timeout=10).read().decode())
req = urllib.request.Request("https://api.test.example/auth?want=" + want, headers={"Authorization": "Bearer mine"})
print(urllib.request.urlopen(req, timeout=10).read().decode())
# What the code can see of itself: its environment, its files, its processes.
seen = repr(dict(os.environ))
for root in ("/run", "/tmp", "/proc/self"):
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                seen += open(os.path.join(dirpath, f), "rb").read(1 << 20).decode("latin-1")
            except Exception:
                pass
print("secret seen:", "s3cr3t" in seen)
`, map[string]any{"WANT": secret})
	if !res.OK || strings.Count(res.Stdout, "authorized\n") != 2 || !strings.Contains(res.Stdout, "secret seen: False") {
		t.Fatalf("stdout %q, error %+v: want two authorized requests and no secret seen", res.Stdout, res.Error)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), "s3cr3t") {
		t.Errorf("the answer holds the secret: %s", b)
	}
	var auths int
	for _, r := range e.api.Requests() {
		if r.Path == "/auth" && r.Header.Get("Authorization") == secret {
			auths++
		}
	}
	if auths != 2 {
		t.Errorf("the host saw the secret on %d requests, want 2: %+v", auths, e.api.Requests())
	}
}

// TestNetworkBounds: past maxConnections an execution's connections are
// refused, past maxBytes its transfer is cut; the next execution starts
// afresh.
func TestNetworkBounds(t *testing.T) {
	m, ws := newTestManager(t, Production, DefaultLimits, 0)
	e := newNetEnv(t)
	n := *e.network
	n.MaxConnections, n.MaxBytes = 3, 2<<20
	res := execNet(t, m, ws, &n, `
import urllib.request
for i in range(5):
    try:
        urllib.request.urlopen("https://api.test.example/", timeout=10).read()
        print("ok", i)
    except Exception as ex:
        print("refused", i, ex)
`, nil)
	if strings.Count(res.Stdout, "ok ") != 3 || !strings.Contains(res.Stdout, "most connections") {
		t.Errorf("connections: stdout %q", res.Stdout)
	}
	res = execNet(t, m, ws, &n, `
import urllib.request
try:
    data = urllib.request.urlopen("https://api.test.example/bytes?n=%d" % (16 << 20), timeout=30).read()
    print("got", len(data))
except Exception as ex:
    print("cut:", type(ex).__name__)
`, nil)
	if !strings.Contains(res.Stdout, "cut:") {
		t.Errorf("bytes: stdout %q, want the transfer cut", res.Stdout)
	}
	var cut bool
	for _, f := range res.Network {
		cut = cut || strings.Contains(f.Refused, "most bytes")
	}
	if !cut {
		t.Errorf("network = %+v, want the cut listed", res.Network)
	}
}

// TestNetworkNoOtherRoute: with a network, the sandbox still has no
// interface but loopback, no resolver, and no UDP or raw socket that goes
// anywhere.
func TestNetworkNoOtherRoute(t *testing.T) {
	m, ws := newTestManager(t, Production, DefaultLimits, 0)
	e := newNetEnv(t)
	res := execNet(t, m, ws, e.network, `
import socket
# (netlink, which if_nameindex uses, is refused by seccomp)
print("interfaces:", sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]))
def attempt(name, f):
    try:
        f()
        print(name, "WENT")
    except Exception as ex:
        print(name, "held:", type(ex).__name__)
attempt("dns", lambda: socket.getaddrinfo("api.test.example", 443))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", (OTHER_IP, 53)))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("tcp", lambda: socket.socket().connect((OTHER_IP, 80)))
`, e.globals())
	if !strings.Contains(res.Stdout, "interfaces: ['lo']") || strings.Contains(res.Stdout, "WENT") || strings.Count(res.Stdout, "held:") != 4 {
		t.Errorf("stdout %q, error %+v", res.Stdout, res.Error)
	}
}

// TestNetworkSession: a session's executions each get their own account.
func TestNetworkSession(t *testing.T) {
	m, ws := newTestManager(t, Production, DefaultLimits, 0)
	e := newNetEnv(t)
	s, err := m.OpenSession(context.Background(), Request{Workspace: ws, Network: e.network})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 2 {
		res := s.Exec(context.Background(), Request{Workspace: ws, Network: e.network, Timeout: 30 * time.Second,
			Code: "import urllib.request\nprint(len(urllib.request.urlopen('https://api.test.example/', timeout=10).read()))"})
		if !res.OK || len(res.Network) != 1 || res.Network[0].Connections != 1 {
			t.Errorf("session execution %d: ok=%v stdout=%q network=%+v error=%+v", i, res.OK, res.Stdout, res.Network, res.Error)
		}
	}
}

// TestEgressSocketUnguessable: the proxy's socket (which adds the
// configured headers) is in a directory other host users may cross but
// not list, under a name of 128 random bits.
func TestEgressSocketUnguessable(t *testing.T) {
	m, _ := newTestManager(t, Production, DefaultLimits, 0)
	sock, _, stop, err := m.startEgress(context.Background(), &egress.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	info, err := os.Stat(filepath.Dir(sock))
	if err != nil || info.Mode().Perm() != 0o711 {
		t.Errorf("the socket's directory: %v %v, want mode 0711", info.Mode(), err)
	}
	if name := filepath.Base(sock); !regexp.MustCompile(`^[0-9a-f]{32}\.sock$`).MatchString(name) {
		t.Errorf("socket named %q, want 32 random hex digits", name)
	}
}
