package egress

import (
	"sync"
	"sync/atomic"
)

// Flow is what went to one destination during one execution: the
// connections made (or refused) and the bytes each way. Connections to
// the same host and port with the same outcome are one Flow.
type Flow struct {
	Host        string `json:"host"`
	Port        int    `json:"port"`
	Connections int    `json:"connections"`
	Sent        int64  `json:"sent"`     // bytes from the code to the host
	Received    int64  `json:"received"` // bytes from the host to the code
	// Refused says why the proxy refused (or cut) these connections; ""
	// when they were let through.
	Refused string `json:"refused,omitempty"`
}

// maxFlows bounds the flows a Meter keeps: code that tries a thousand
// hosts gets the first maxFlows listed and the rest counted in Dropped.
const maxFlows = 32

// Meter counts one execution's traffic and holds it to its bounds. Its
// methods are safe for concurrent use; a nil Meter counts nothing and
// bounds nothing.
type Meter struct {
	maxConns int   // 0: no bound
	maxBytes int64 // 0: no bound

	conns atomic.Int64
	bytes atomic.Int64

	mu      sync.Mutex
	flows   map[flowKey]*Flow
	order   []flowKey
	dropped int
}

type flowKey struct {
	host    string
	port    int
	refused string
}

// NewMeter bounds an execution to maxConns connections and maxBytes bytes
// (both directions together); zero means no bound.
func NewMeter(maxConns int, maxBytes int64) *Meter {
	return &Meter{maxConns: maxConns, maxBytes: maxBytes, flows: map[flowKey]*Flow{}}
}

// admit counts a new connection, or says the bound is reached.
func (m *Meter) admit() bool {
	if m == nil {
		return true
	}
	return m.maxConns == 0 || m.conns.Add(1) <= int64(m.maxConns)
}

// over says whether the bytes so far are past the bound.
func (m *Meter) over() bool {
	return m != nil && m.maxBytes > 0 && m.bytes.Load() > m.maxBytes
}

// record adds to the flow of host:port with the outcome refused ("" for
// let through) and returns it for add.
func (m *Meter) record(host string, port int, refused string) *Flow {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := flowKey{host, port, refused}
	f := m.flows[k]
	if f == nil {
		if len(m.flows) >= maxFlows {
			m.dropped++
			return nil
		}
		f = &Flow{Host: host, Port: port, Refused: refused}
		m.flows[k] = f
		m.order = append(m.order, k)
	}
	f.Connections++
	return f
}

// add counts bytes on a flow (nil: counted in the total only).
func (m *Meter) add(f *Flow, sent, received int64) {
	if m == nil {
		return
	}
	m.bytes.Add(sent + received)
	if f == nil {
		return
	}
	m.mu.Lock()
	f.Sent += sent
	f.Received += received
	m.mu.Unlock()
}

// Flows returns the flows so far, in the order they began, and how many
// destinations were left out past maxFlows.
func (m *Meter) Flows() (flows []Flow, dropped int) {
	if m == nil {
		return nil, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.order {
		flows = append(flows, *m.flows[k])
	}
	return flows, m.dropped
}

// Totals sums flows: connections let through and refused, bytes each way.
func Totals(flows []Flow) (allowed, refused int, sent, received int64) {
	for _, f := range flows {
		if f.Refused != "" {
			refused += f.Connections
		} else {
			allowed += f.Connections
		}
		sent += f.Sent
		received += f.Received
	}
	return
}
