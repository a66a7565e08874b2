package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
)

// State is where a server's connection stands.
type State string

// The states of a server.
const (
	Starting  State = "starting"
	Connected State = "connected"
	Failed    State = "failed"
	Disabled  State = "disabled"
)

// Status describes one server for list_tool_categories and doctor.
type Status struct {
	Name         string `json:"name"`
	State        State  `json:"state"`
	Error        string `json:"error,omitempty"`
	Tools        int    `json:"tool_count"`
	Instructions string `json:"instructions,omitempty"` // the first line of the server's instructions
	Transport    string `json:"transport"`
}

// Options configure a Manager.
type Options struct {
	Servers map[string]config.Server
	// BaseEnv is the environment every stdio server starts from (PATH and
	// HOME, as KEY=VALUE); the server's own env is added to it.
	BaseEnv []string
	// OnChange is called (from any goroutine) when a server's tool list
	// changes: it connected, failed, or sent tools/list_changed.
	OnChange func()
	// ConnectTimeout bounds connecting and listing tools; zero means 30s.
	ConnectTimeout time.Duration
	Logger         *slog.Logger // nil means silent
	Version        string       // codecell's version, sent to servers
	// InProcess are servers that live in this process, by name, connected
	// over in-memory transports instead of their config's command or URL
	// (benchmarks and tests measure codecell's own overhead with them).
	InProcess map[string]*mcp.Server
}

// ErrUnknownServer reports a call to a server that is not configured.
var ErrUnknownServer = errors.New("unknown server")

// ErrUnavailable reports a server that is disabled, failed or not connected.
var ErrUnavailable = errors.New("server unavailable")

// Manager holds the connections to the upstream servers. It is safe for
// concurrent use.
type Manager struct {
	opts    Options
	log     *slog.Logger
	servers map[string]*server
	wg      sync.WaitGroup
	closed  chan struct{}
}

// New prepares a Manager; Start connects.
func New(opts Options) *Manager {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 30 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: opts, log: log, servers: map[string]*server{}, closed: make(chan struct{})}
	for name, cfg := range opts.Servers {
		cfg.Name = name
		s := &server{m: m, cfg: cfg, state: Starting}
		if cfg.Disabled {
			s.state = Disabled
		}
		m.servers[name] = s
	}
	return m
}

// Start connects to every enabled server in parallel, in the background.
func (m *Manager) Start() {
	for _, s := range m.servers {
		if s.cfg.Disabled {
			continue
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.ensure(context.Background())
		}()
	}
}

// WaitStarted waits until no server is still in its first connection, or ctx
// ends.
func (m *Manager) WaitStarted(ctx context.Context) {
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close disconnects every server and stops their processes.
func (m *Manager) Close() {
	close(m.closed)
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.disconnect(errors.New("codecell is shutting down"))
		}()
	}
	wg.Wait()
}

// Statuses reports every server, sorted by name.
func (m *Manager) Statuses() []Status {
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Tools returns the tools of every connected server.
func (m *Manager) Tools() []catalog.Tool {
	var out []catalog.Tool
	for _, s := range m.servers {
		// A server that went away keeps its tools: the next call restarts it.
		s.mu.Lock()
		for _, t := range s.tools {
			ct := catalog.Tool{Server: s.cfg.Name, Name: t.Name, Title: t.Title, Description: t.Description}
			if t.InputSchema != nil {
				ct.InputSchema, _ = json.Marshal(t.InputSchema)
			}
			if t.OutputSchema != nil {
				ct.OutputSchema, _ = json.Marshal(t.OutputSchema)
			}
			out = append(out, ct)
		}
		s.mu.Unlock()
	}
	return out
}

// Call calls a tool. The context bounds it, on top of the server's own
// per-call timeout; cancelling it cancels the call upstream. A tool that
// reports an error is a result with IsError, not an error; errors are for
// calls that could not be made or answered.
func (m *Manager) Call(ctx context.Context, serverName, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	s, ok := m.servers[serverName]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, serverName)
	}
	return s.call(ctx, tool, args)
}

// server is one upstream server and its connection.
type server struct {
	m   *Manager
	cfg config.Server

	mu           sync.Mutex // guards the fields below
	state        State
	err          error
	session      *mcp.ClientSession
	tools        []*mcp.Tool
	instructions string
	failures     int           // consecutive failed connections
	retryAt      time.Time     // no reconnection before this
	connecting   chan struct{} // closed when the connection in flight ends
	stderr       *tail
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.cfg.Name, State: s.state, Tools: len(s.tools), Instructions: firstLine(s.instructions), Transport: s.transport()}
	if s.err != nil && s.state == Failed {
		st.Error = s.err.Error()
	}
	return st
}

func (s *server) transport() string {
	if s.cfg.Command != "" {
		return "stdio"
	}
	return s.cfg.Transport
}

// backoff is the wait before the n-th reconnection after consecutive
// failures: none for the first, so a server that crashed once comes back on
// the next call, then doubling from a second up to a minute.
func backoff(failures int) time.Duration {
	if failures <= 1 {
		return 0
	}
	d := time.Second << min(failures-2, 6)
	return min(d, time.Minute)
}

// ensure returns a connected session, connecting (or waiting for the
// connection in flight) when there is none and backoff allows.
func (s *server) ensure(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		s.mu.Lock()
		if s.cfg.Disabled {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %s is disabled in the config", ErrUnavailable, s.cfg.Name)
		}
		if s.session != nil {
			cs := s.session
			s.mu.Unlock()
			return cs, nil
		}
		if wait := s.connecting; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if s.state == Failed && time.Now().Before(s.retryAt) {
			err := s.err
			retry := time.Until(s.retryAt).Round(time.Second)
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %s failed (%v); next try in %s", ErrUnavailable, s.cfg.Name, err, retry)
		}
		done := make(chan struct{})
		s.connecting = done
		s.mu.Unlock()

		cs, tools, instr, err := s.connect()
		s.mu.Lock()
		if err != nil {
			s.state, s.err = Failed, err
			s.failures++
			s.retryAt = time.Now().Add(backoff(s.failures + 1))
			s.tools = nil
		} else {
			s.err, s.tools, s.instructions = nil, tools, instr
		}
		s.mu.Unlock()
		// The tools are published (OnChange) before the server counts as
		// connected, so code that sees it connected can import them.
		s.changed()
		s.mu.Lock()
		s.connecting = nil
		if err == nil {
			s.state, s.session = Connected, cs
		}
		s.mu.Unlock()
		close(done)
		if err != nil {
			s.m.log.Warn("upstream server failed", "server", s.cfg.Name, "error", err)
			return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, s.cfg.Name, err)
		}
		s.m.log.Info("upstream server connected", "server", s.cfg.Name, "tools", len(tools))
		go s.watch(cs)
		return cs, nil
	}
}

func (s *server) changed() {
	if s.m.opts.OnChange != nil {
		s.m.opts.OnChange()
	}
}

// connect starts (or dials) the server, initializes and lists its tools.
func (s *server) connect() (*mcp.ClientSession, []*mcp.Tool, string, error) {
	// The context given to Connect lives as long as the session: the SSE
	// and Streamable HTTP transports tie their long-lived streams to it.
	// The connection timeout cancels it only while connecting.
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(s.m.opts.ConnectTimeout, cancel)
	ok := false
	defer func() {
		if !ok {
			timer.Stop()
			cancel()
		}
	}()
	transport, err := s.newTransport()
	if err != nil {
		return nil, nil, "", err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "codecell", Version: s.m.opts.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go s.refresh()
		},
	})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, "", s.explain(fmt.Errorf("connect: %w", err))
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		cs.Close()
		return nil, nil, "", s.explain(fmt.Errorf("list tools: %w", err))
	}
	instr := ""
	if r := cs.InitializeResult(); r != nil {
		instr = r.Instructions
	}
	if !timer.Stop() {
		cs.Close()
		return nil, nil, "", fmt.Errorf("connect: no answer within %s", s.m.opts.ConnectTimeout)
	}
	ok = true
	go func() { cs.Wait(); cancel() }()
	return cs, tools, instr, nil
}

// explain adds what the server printed on stderr to a connection error.
func (s *server) explain(err error) error {
	s.mu.Lock()
	t := s.stderr
	s.mu.Unlock()
	if t != nil {
		if msg := t.String(); msg != "" {
			return fmt.Errorf("%w (stderr: %s)", err, msg)
		}
	}
	return err
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// refresh re-reads the tool list after notifications/tools/list_changed.
func (s *server) refresh() {
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.m.opts.ConnectTimeout)
	defer cancel()
	tools, err := listTools(ctx, cs)
	if err != nil {
		s.m.log.Warn("upstream tools changed but could not be listed", "server", s.cfg.Name, "error", err)
		return
	}
	s.mu.Lock()
	if s.session == cs {
		s.tools = tools
	}
	s.mu.Unlock()
	s.changed()
}

// watch notices a session that ended (a stdio server that exited, a
// connection that broke) so the next call reconnects.
func (s *server) watch(cs *mcp.ClientSession) {
	err := cs.Wait()
	if err == nil {
		err = errors.New("the server closed the connection")
	}
	reason := s.explain(fmt.Errorf("disconnected: %w", err)) // explain locks s.mu
	s.mu.Lock()
	if s.session != cs {
		s.mu.Unlock()
		return
	}
	s.session = nil
	s.state, s.err = Failed, reason
	s.failures++
	s.retryAt = time.Now().Add(backoff(s.failures))
	s.mu.Unlock()
	select {
	case <-s.m.closed:
	default:
		s.m.log.Warn("upstream server disconnected", "server", s.cfg.Name, "error", err)
		s.changed()
	}
}

func (s *server) disconnect(reason error) {
	s.mu.Lock()
	cs := s.session
	s.session = nil
	if cs != nil {
		s.state, s.err = Failed, reason
	}
	s.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// call makes one tool call, connecting first if needed.
func (s *server) call(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
	}
	cs, err := s.ensure(ctx)
	if err != nil {
		return nil, err
	}
	var arguments any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		arguments = args
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("%s.%s: no answer within %s: %w", s.cfg.Name, tool, s.cfg.Timeout, context.DeadlineExceeded)
			}
			return nil, ctx.Err()
		}
		// A session that broke during the call: make sure the next call
		// reconnects, even if watch has not noticed yet.
		if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) {
			s.mu.Lock()
			if s.session == cs {
				s.session = nil
				s.state, s.err = Failed, fmt.Errorf("disconnected during a call: %w", err)
				s.failures++
				s.retryAt = time.Now().Add(backoff(s.failures))
			}
			s.mu.Unlock()
			cs.Close()
			return nil, fmt.Errorf("%s.%s: the server went away during the call (%v); it is restarted on the next call", s.cfg.Name, tool, s.explain(err))
		}
		return nil, fmt.Errorf("%s.%s: %w", s.cfg.Name, tool, err)
	}
	s.mu.Lock()
	if s.session == cs {
		s.failures = 0
	}
	s.mu.Unlock()
	return res, nil
}

// newTransport builds the client transport the config names.
func (s *server) newTransport() (mcp.Transport, error) {
	c := s.cfg
	if srv := s.m.opts.InProcess[c.Name]; srv != nil {
		serverSide, clientSide := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}
	if c.Command != "" {
		cmd := exec.Command(c.Command, c.Args...)
		cmd.Env = append(append([]string{}, s.m.opts.BaseEnv...), envList(c.Env)...)
		cmd.Dir = c.Cwd
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		t := &tail{}
		cmd.Stderr = t
		s.mu.Lock()
		s.stderr = t
		s.mu.Unlock()
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
	client := &http.Client{Transport: headerTransport{headers: c.Headers, base: http.DefaultTransport}}
	switch c.Transport {
	case "sse":
		return &mcp.SSEClientTransport{Endpoint: c.URL, HTTPClient: client}, nil
	case "", "streamable-http":
		return &mcp.StreamableClientTransport{Endpoint: c.URL, HTTPClient: client}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", c.Transport)
}

func envList(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// tail keeps the last lines a stdio server wrote on stderr, for errors.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2048 {
		t.buf = append([]byte{}, t.buf[len(t.buf)-1024:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

func firstLine(s string) string {
	// Instructions are often Markdown whose first line is a title ("#
	// Everything Server – Server Instructions"), which says nothing a
	// server's name does not: the first line of text is taken instead, or
	// the first title's text when there is none.
	lines := strings.Split(s, "\n")
	title := ""
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || rule(line) || setextUnderline.MatchString(line) {
			continue
		}
		heading := atxHeading.MatchString(line)
		if heading {
			line = strings.TrimSpace(strings.Trim(line, "#"))
		} else if i+1 < len(lines) && setextUnderline.MatchString(strings.TrimSpace(lines[i+1])) {
			heading = true
		}
		if !heading {
			return line
		}
		if title == "" {
			title = line
		}
	}
	return title
}

var (
	atxHeading      = regexp.MustCompile(`^#{1,6}(\s|$)`)
	setextUnderline = regexp.MustCompile(`^(=+|-+)$`)
)

// rule reports whether line is a Markdown thematic break (---, ***, ___).
func rule(line string) bool {
	return len(line) >= 3 && strings.Trim(line, "-*_ ") == ""
}
