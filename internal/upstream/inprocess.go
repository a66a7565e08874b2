package upstream

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inProcessTransports returns the two ends of a connection to a server that
// lives in this process. Messages pass as values over channels rather than
// as JSON over the SDK's in-memory transport (a net.Pipe): that one encodes
// every message, hands it byte by byte across a synchronous pipe, and the
// other end decodes it twice (once trying it as a batch), each decoding
// allocating a 32 KB buffer. Per tool call, that was about a fifth of the
// CPU of the in-process tool-call benchmark, none of it codecell's own work.
//
// What crosses is what the wire would carry: a copy of the message with its
// own Params or Result bytes, without Extra (which never appears on the
// wire); a response carrying an error crosses as JSON, so that the error
// arrives as the wire's *jsonrpc.Error whatever Go error the other side made.
func inProcessTransports() (server, client mcp.Transport) {
	a, b := make(chan jsonrpc.Message, inProcessQueue), make(chan jsonrpc.Message, inProcessQueue)
	done := &closer{ch: make(chan struct{})}
	return &inProcessTransport{conn: &inProcessConn{in: a, out: b, done: done}},
		&inProcessTransport{conn: &inProcessConn{in: b, out: a, done: done}}
}

// inProcessQueue is how many messages each direction holds before a Write
// waits for the reader: enough that a writer rarely has to hand over to the
// reader's goroutine mid-call, few enough to bound what a stalled reader
// holds.
const inProcessQueue = 16

// inProcessTransport is one end of inProcessTransports; Connect returns its
// connection (the SDK calls it once).
type inProcessTransport struct{ conn *inProcessConn }

func (t *inProcessTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// inProcessConn is one end of an in-process connection. It is safe for
// concurrent use, as mcp.Connection requires; closing either end closes both.
type inProcessConn struct {
	in   <-chan jsonrpc.Message
	out  chan<- jsonrpc.Message
	done *closer
}

// closer closes ch once.
type closer struct {
	once sync.Once
	ch   chan struct{}
}

func (c *closer) close() { c.once.Do(func() { close(c.ch) }) }

func (c *inProcessConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	// Messages already queued are still delivered after a close, as bytes
	// already in a pipe would be; only then does Read report the end.
	select {
	case m := <-c.in:
		return m, nil
	default:
	}
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done.ch:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *inProcessConn) Write(ctx context.Context, m jsonrpc.Message) error {
	m, err := wireCopy(m)
	if err != nil {
		return err
	}
	select {
	case <-c.done.ch:
		return io.ErrClosedPipe
	default:
	}
	select {
	case c.out <- m:
		return nil
	case <-c.done.ch:
		return io.ErrClosedPipe
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *inProcessConn) Close() error {
	c.done.close()
	return nil
}

func (c *inProcessConn) SessionID() string { return "" }

// wireCopy returns what the other end would decode from m's JSON, without
// encoding it where it can: the sender keeps no hold on what it sent, and
// nothing that never crosses a wire crosses here either.
func wireCopy(m jsonrpc.Message) (jsonrpc.Message, error) {
	switch m := m.(type) {
	case *jsonrpc.Request:
		return &jsonrpc.Request{ID: m.ID, Method: m.Method, Params: bytes.Clone(m.Params)}, nil
	case *jsonrpc.Response:
		if m.Error == nil {
			return &jsonrpc.Response{ID: m.ID, Result: bytes.Clone(m.Result)}, nil
		}
	}
	raw, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return nil, err
	}
	return jsonrpc.DecodeMessage(raw)
}
