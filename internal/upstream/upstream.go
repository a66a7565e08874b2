package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/proc"
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
	// changes: it connected, failed, or sent tools/list_changed. A server
	// counts as connected only once OnChange has returned, so that whoever
	// waits for it (Wait) finds what OnChange made of its tools.
	OnChange func()
	Logger   *slog.Logger // nil means silent
	Version  string       // codecell's version, sent to servers
	// InProcess are servers that live in this process, by name, connected
	// instead of their config's command or URL over a transport that hands
	// messages over without encoding them (benchmarks and tests measure
	// codecell's own overhead with them).
	InProcess map[string]*mcp.Server
	// Redact, when set, is applied to what a server writes on stderr, a
	// line at a time as it comes, before any of it is kept, and to the
	// errors Statuses reports: those are shown to every namespace, and a
	// server may print the arguments it was called with, values restored
	// from one namespace's tokens among them. Nil keeps them as they are.
	Redact func(string) string
}

// ErrUnknownServer reports a call to a server that is not configured.
var ErrUnknownServer = errors.New("unknown server")

// ErrUnavailable reports a server that is disabled, failed or not connected.
var ErrUnavailable = errors.New("server unavailable")

// ErrStarting reports a server whose connection was still being made when the
// caller stopped waiting for it. Such an error also wraps the reason the
// caller stopped (its context's error).
var ErrStarting = errors.New("server still starting")

// Manager holds the connections to the upstream servers. It is safe for
// concurrent use.
type Manager struct {
	opts    Options
	log     *slog.Logger
	servers map[string]*server
	wg      sync.WaitGroup // Start's first connections, for WaitStarted
	closed  chan struct{}

	// attempts bounds every connection attempt on top of its server's
	// startupTimeout; Close cancels it, then waits for them (attemptWG).
	attempts  context.Context
	stop      context.CancelFunc
	attemptWG sync.WaitGroup
	mu        sync.Mutex // guards closing, so no attempt begins once Close waits
	closing   bool
}

// New prepares a Manager; Start connects.
func New(opts Options) *Manager {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: opts, log: log, servers: map[string]*server{}, closed: make(chan struct{})}
	m.attempts, m.stop = context.WithCancel(context.Background())
	for name, cfg := range opts.Servers {
		cfg.Name = name
		if cfg.StartupTimeout <= 0 {
			// A config from config.Load always has one; this keeps a
			// hand-built one (tests, benchmarks) from being unbounded.
			cfg.StartupTimeout = config.DefaultStartupTimeout
		}
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
// ends. Each connection is bounded by its server's startupTimeout, so the
// wait is too.
func (m *Manager) WaitStarted(ctx context.Context) {
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close disconnects every server and stops their processes, those still
// starting included.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	close(m.closed)
	m.stop()
	m.attemptWG.Wait() // a cancelled attempt ends its process
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
			ct := catalog.Tool{Server: s.cfg.Name, Name: t.Name, Title: t.Title, Description: t.Description, Destructive: destructive(t)}
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

// Wait returns once the named server is connected, connecting it first if it
// is not and backoff allows, as a call would, and only after OnChange has
// published the tools it connected with. Otherwise it says why not: the server
// is unknown, disabled, or failed (with the server's error), or ctx ended
// while it was still starting (an error wrapping ErrStarting and ctx's
// error). The connection is bounded by the server's startupTimeout whatever
// ctx allows; ending ctx ends the wait, not the connection.
func (m *Manager) Wait(ctx context.Context, serverName string) error {
	s, ok := m.servers[serverName]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownServer, serverName)
	}
	_, err := s.ensure(ctx)
	return err
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
	failures     int       // consecutive failed connections
	retryAt      time.Time // no reconnection before this
	connecting   *attempt  // the connection in flight, if any
	stderr       *stderrLog
}

// attempt is one connection in flight. Whoever needs the server waits for
// it; nobody's context ends it but the Manager's (Close) and the server's
// startupTimeout, so a caller that gives up does not kill a server that is
// installing itself for the next one.
type attempt struct {
	start time.Time
	done  chan struct{} // closed when it has ended
	err   error         // why it failed; set before done is closed
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.cfg.Name, State: s.state, Tools: len(s.tools), Instructions: firstLine(s.instructions), Transport: s.transport()}
	if s.err != nil && s.state == Failed {
		st.Error = s.err.Error()
		if r := s.m.opts.Redact; r != nil {
			st.Error = r(st.Error)
		}
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
		a := s.connecting
		if a == nil {
			if s.state == Failed && time.Now().Before(s.retryAt) {
				err := s.err
				retry := time.Until(s.retryAt).Round(time.Second)
				s.mu.Unlock()
				return nil, fmt.Errorf("%w: %s failed (%v); next try in %s", ErrUnavailable, s.cfg.Name, err, retry)
			}
			if !s.m.beginAttempt() {
				s.mu.Unlock()
				return nil, fmt.Errorf("%w: %s: codecell is shutting down", ErrUnavailable, s.cfg.Name)
			}
			a = &attempt{start: time.Now(), done: make(chan struct{})}
			s.connecting = a
			go s.connectAttempt(a)
		}
		s.mu.Unlock()
		select {
		case <-a.done:
			if a.err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, s.cfg.Name, a.err)
			}
			// Connected; loop to take the session (or to find it already
			// lost, and try again).
		case <-ctx.Done():
			return nil, &startingError{server: s.cfg.Name, since: time.Since(a.start), timeout: s.cfg.StartupTimeout, cause: ctx.Err()}
		}
	}
}

// beginAttempt counts a connection attempt about to start, unless the Manager
// is closing.
func (m *Manager) beginAttempt() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return false
	}
	m.attemptWG.Add(1)
	return true
}

// startingError is ErrStarting with what the caller should know: how long the
// server has been starting, and its bound.
type startingError struct {
	server  string
	since   time.Duration
	timeout time.Duration
	cause   error // the waiter's context's error
}

func (e *startingError) Error() string {
	return fmt.Sprintf("%s is still starting (for %s so far; its startupTimeout is %s)", e.server, e.since.Round(time.Second), e.timeout)
}

func (e *startingError) Unwrap() []error { return []error{ErrStarting, e.cause} }

// connectAttempt makes attempt a, records how it went and ends it.
func (s *server) connectAttempt(a *attempt) {
	defer s.m.attemptWG.Done()
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
	closing := s.m.attempts.Err() != nil // Close cut the attempt short: no failure of the server's
	// The tools are published (OnChange) before the server counts as
	// connected, so code that sees it connected can import them.
	if !closing {
		s.changed()
	}
	s.mu.Lock()
	s.connecting = nil
	if err == nil {
		s.state, s.session = Connected, cs
	}
	a.err = err
	s.mu.Unlock()
	close(a.done)
	if err != nil {
		if !closing {
			s.m.log.Warn("upstream server failed", "server", s.cfg.Name, "error", err)
		}
		return
	}
	s.m.log.Info("upstream server connected", "server", s.cfg.Name, "tools", len(tools))
	go s.watch(cs)
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
	// The startup timeout cancels it only while connecting; Close, always.
	ctx, cancel := context.WithCancel(s.m.attempts)
	timer := time.AfterFunc(s.cfg.StartupTimeout, cancel)
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
		return nil, nil, "", s.explain(s.startFailed(ctx, "connect", err))
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		cs.Close()
		return nil, nil, "", s.explain(s.startFailed(ctx, "list tools", err))
	}
	instr := ""
	if r := cs.InitializeResult(); r != nil {
		instr = r.Instructions
	}
	if !timer.Stop() {
		cs.Close()
		return nil, nil, "", s.explain(s.startFailed(ctx, "connect", errStartupTimeout))
	}
	ok = true
	go func() { cs.Wait(); cancel() }()
	return cs, tools, instr, nil
}

// errStartupTimeout is the startup timeout firing just as the start
// succeeded, before it cancelled the context.
var errStartupTimeout = errors.New("startup timeout")

// startFailed says why a step of starting the server failed, naming the
// startup timeout when that is what ended it.
func (s *server) startFailed(ctx context.Context, step string, err error) error {
	switch {
	case s.m.attempts.Err() != nil:
		return fmt.Errorf("%s: codecell is shutting down", step)
	case ctx.Err() != nil || errors.Is(err, errStartupTimeout):
		return fmt.Errorf("%s: no answer within its startupTimeout of %s", step, s.cfg.StartupTimeout)
	}
	return fmt.Errorf("%s: %w", step, err)
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
	ctx, cancel := context.WithTimeout(s.m.attempts, s.cfg.StartupTimeout)
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
		serverSide, clientSide := inProcessTransports()
		if _, err := srv.Connect(context.Background(), serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}
	if c.Command != "" {
		// Background: the server lives as long as its session, which the
		// transport's Close ends (stdin, SIGTERM, SIGKILL); it dies with
		// codecell by Pdeathsig.
		cmd := proc.Command(context.Background(), c.Command, c.Args...)
		cmd.Env = append(append([]string{}, s.m.opts.BaseEnv...), envList(c.Env)...)
		cmd.Dir = c.Cwd
		t := &stderrLog{redact: s.m.opts.Redact}
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

// stderrLog keeps the beginning and the end of what a stdio server wrote on
// stderr, for errors: the cause of a failed start is often in the first
// lines ("Cannot find package 'zod'") and the last words in the last ones,
// while an install in between can write megabytes. Its memory is bounded.
type stderrLog struct {
	redact func(string) string // nil: none

	mu      sync.Mutex
	pending []byte // the line being written, redacted once it ends
	head    []byte // the first stderrHead bytes
	tail    []byte // the last bytes after head: up to 2*stderrTail, trimmed to stderrTail when read
	total   int64  // bytes kept (after redaction)
}

// maxPending bounds a line waiting for its end: a longer one is redacted
// as it stands (a value it splits may then show in part).
const maxPending = 64 << 10

// stderrHead and stderrTail bound how much of stderr an error quotes from the
// start and from the end.
const (
	stderrHead = 600
	stderrTail = 600
)

func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.redact == nil {
		l.keep(p)
		return len(p), nil
	}
	// Whole lines only are redacted, so that no value is split in two
	// before the detectors see it.
	l.pending = append(l.pending, p...)
	if i := bytes.LastIndexByte(l.pending, '\n'); i >= 0 {
		l.keep([]byte(l.redact(string(l.pending[:i+1]))))
		l.pending = append(l.pending[:0], l.pending[i+1:]...)
	}
	if len(l.pending) > maxPending {
		l.keep([]byte(l.redact(string(l.pending))))
		l.pending = l.pending[:0]
	}
	return len(p), nil
}

// keep adds p to the head, then the tail.
func (l *stderrLog) keep(p []byte) {
	l.total += int64(len(p))
	rest := p
	if l.head == nil {
		l.head = make([]byte, 0, stderrHead)
	}
	if n := min(stderrHead-len(l.head), len(rest)); n > 0 {
		l.head = append(l.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) >= stderrTail {
		l.tail = append(l.tail[:0], rest[len(rest)-stderrTail:]...)
	} else if l.tail = append(l.tail, rest...); len(l.tail) > 2*stderrTail {
		l.tail = append(l.tail[:0], l.tail[len(l.tail)-stderrTail:]...)
	}
}

// String is the text on one line (lines joined by " | "), with the part cut
// out of the middle marked and counted.
func (l *stderrLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) > 0 {
		// What the server is still writing is read as it stands.
		l.keep([]byte(l.redact(string(l.pending))))
		l.pending = l.pending[:0]
	}
	tail := l.tail
	if len(tail) > stderrTail {
		tail = tail[len(tail)-stderrTail:]
	}
	cut := l.total - int64(len(l.head)) - int64(len(tail))
	s := string(l.head) + string(tail)
	if cut > 0 {
		// Cut at line ends where there are some, so that neither part
		// starts or ends in the middle of a line.
		head, tail := string(l.head), string(tail)
		if i := strings.LastIndexByte(head, '\n'); i >= 0 {
			cut += int64(len(head) - i - 1)
			head = head[:i+1]
		}
		if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			cut += int64(i + 1)
			tail = tail[i+1:]
		}
		if !strings.HasSuffix(head, "\n") {
			head += "\n"
		}
		s = head + fmt.Sprintf("[... %d bytes cut ...]\n", cut) + tail
	}
	s = strings.TrimSpace(strings.ToValidUTF8(s, ""))
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", " | ")
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

// destructive reports whether the server says t may destroy: destructiveHint
// true and readOnlyHint false. A tool with no annotations is taken at no
// word: the spec's default (destructive) would put every unannotated tool
// after the annotated ones in a search.
func destructive(t *mcp.Tool) bool {
	a := t.Annotations
	return a != nil && !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint
}
