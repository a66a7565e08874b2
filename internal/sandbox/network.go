package sandbox

import (
	"context"
	"fmt"
	"strconv"

	"github.com/codecell/codecell/internal/egress"
)

// Network is what a sandbox's code may reach: nothing but its egress
// proxy, which admits Policy. The sandbox has no network of its own (only
// loopback): the proxy's socket is bound in, the runner relays a loopback
// port to it, and HTTP_PROXY and HTTPS_PROXY name that port.
type Network struct {
	Policy *egress.Policy
	// MaxConnections and MaxBytes bound each execution's traffic (bytes
	// both ways together); zero means no bound.
	MaxConnections int
	MaxBytes       int64
	// Trust is the PEM of the certificates the code trusts, shown at
	// TrustMount: the system's, with the roots the operator added and the
	// proxy's CA (see egress.Policy.Headers); nil leaves the system's.
	Trust []byte
}

// Where the code finds its proxy: the socket the runner relays to, the
// loopback port it relays from, and the certificates it trusts.
const (
	EgressMount = "/run/codecell/egress.sock"
	EgressPort  = 3128
	TrustMount  = "/run/codecell/ca-certificates.pem"
)

// networkEnv is the environment of a sandbox with a Network: the proxy for
// every client that reads it (urllib, requests, pip, curl), and the trust
// store for those that read one from the environment.
func networkEnv(n *Network) [][2]string {
	proxy := fmt.Sprintf("http://127.0.0.1:%d", EgressPort)
	env := [][2]string{
		{"CODECELL_EGRESS", EgressMount}, {"CODECELL_EGRESS_PORT", strconv.Itoa(EgressPort)},
		{"HTTP_PROXY", proxy}, {"HTTPS_PROXY", proxy}, {"http_proxy", proxy}, {"https_proxy", proxy},
		{"NO_PROXY", "localhost,127.0.0.1,::1"}, {"no_proxy", "localhost,127.0.0.1,::1"},
	}
	if len(n.Trust) > 0 {
		env = append(env, [][2]string{{"SSL_CERT_FILE", TrustMount}, {"REQUESTS_CA_BUNDLE", TrustMount},
			{"CURL_CA_BUNDLE", TrustMount}, {"PIP_CERT", TrustMount}}...)
	}
	return env
}

// egressFor serves n's proxy for one sandbox on a socket of its own.
func (m *Manager) egressFor(n *Network) (*sandboxEgress, error) {
	sock, p, stop, err := m.startEgress(context.Background(), n.Policy)
	if err != nil {
		return nil, err
	}
	return &sandboxEgress{network: n, sock: sock, proxy: p, stop: stop}, nil
}

// sandboxEgress is one sandbox's proxy.
type sandboxEgress struct {
	network *Network
	sock    string // host path of the socket
	proxy   *egress.Proxy
	stop    func()
}

// begin counts and bounds the connections of the execution about to run;
// end puts what it made in res.
func (e *sandboxEgress) begin() *egress.Meter {
	if e == nil {
		return nil
	}
	m := egress.NewMeter(e.network.MaxConnections, e.network.MaxBytes)
	e.proxy.SetMeter(m)
	return m
}

func (e *sandboxEgress) end(m *egress.Meter, res *Result) {
	if e == nil {
		return
	}
	res.Network, res.NetworkDropped = m.Flows()
}

func (e *sandboxEgress) socket() string {
	if e == nil {
		return ""
	}
	return e.sock
}
