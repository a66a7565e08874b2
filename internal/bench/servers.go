package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Servers are the scenario servers and the state behind them: docs (team
// documents), storage (versioned file storage), sheets (spreadsheets), crm
// (accounts, contacts, deals) and tickets (the support desk). One value is
// one world: a file saved to storage through one connection is there for
// every other, in memory or over HTTP. Servers is safe for concurrent use.
type Servers struct {
	servers map[string]*mcp.Server
	files   *fileStore
}

// NewServers builds the scenario servers with their generated data (about
// 20 MB of memory, mostly the 10,000-row sheet).
func NewServers() *Servers {
	accounts, tickets := genCRM()
	files := newFileStore()
	return &Servers{
		files: files,
		servers: map[string]*mcp.Server{
			"docs":    docsServer(newDocStore()),
			"storage": storageServer(files),
			"sheets":  sheetsServer(newSheetStore()),
			"crm":     crmServer(newCRMStore(accounts)),
			"tickets": ticketsServer(newTicketStore(tickets)),
		},
	}
}

// Names returns the servers' names, sorted. They are the names to give them
// in codecell's config, so that code imports them as servers.<name>.
func (s *Servers) Names() []string {
	names := make([]string, 0, len(s.servers))
	for n := range s.servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Server returns the named server, or nil.
func (s *Servers) Server(name string) *mcp.Server { return s.servers[name] }

// StoredFile returns the newest content of a file in the storage server.
func (s *Servers) StoredFile(path string) (content string, ok bool) { return s.files.content(path) }

// Connect connects a new MCP client to the named server over an in-memory
// transport. The caller closes the session.
func (s *Servers) Connect(ctx context.Context, name string) (*mcp.ClientSession, error) {
	srv := s.servers[name]
	if srv == nil {
		return nil, fmt.Errorf("no scenario server is named %q", name)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("serve %s: %w", name, err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		ss.Close()
		return nil, fmt.Errorf("connect to %s: %w", name, err)
	}
	return cs, nil
}

// ServeHTTP serves every server over Streamable HTTP on one loopback port,
// each at its own path, and returns their URLs by name: put them in
// codecell's config as {"mcpServers": {name: {"url": url}}} (see
// [MCPServers]). stop shuts the listener down, waiting at most a few seconds
// for requests in flight; it must be called, once.
func (s *Servers) ServeHTTP(ctx context.Context) (urls map[string]string, stop func(), err error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	mux := http.NewServeMux()
	urls = map[string]string{}
	for name, srv := range s.servers {
		path := "/mcp/" + name
		mux.Handle(path, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		urls[name] = "http://" + ln.Addr().String() + path
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve returns ErrServerClosed after stop, or the listener's
		// error, which the clients see as failed requests.
		hs.Serve(ln)
	}()
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		// Streamable HTTP holds GET streams open for server notifications:
		// Shutdown waits for them until the deadline, then Close ends them.
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
		<-done
	}
	return urls, stop, nil
}

// MCPServers returns the "mcpServers" section of a codecell config that
// names each URL of [Servers.ServeHTTP] as a Streamable HTTP upstream.
func MCPServers(urls map[string]string) map[string]any {
	out := map[string]any{}
	for name, u := range urls {
		out[name] = map[string]any{"url": u, "transport": "streamable-http"}
	}
	return out
}
