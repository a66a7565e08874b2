package server

// The test kit: a fake sandbox made of a function, a recording one, and
// one way to build a server with an in-memory client on it. A test that
// needs more (a store, upstreams, a real sandbox manager) sets it in
// newTestServer's mod.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
)

// execFunc is an Executor made of a function: it plays the sandbox, and
// runs "code" as Go. Its level is Production, and so is the Isolation of a
// result that names none. A nil execFunc succeeds and prints nothing.
type execFunc func(ctx context.Context, req sandbox.Request) *sandbox.Result

func (f execFunc) Exec(ctx context.Context, req sandbox.Request) *sandbox.Result {
	if f == nil {
		return &sandbox.Result{OK: true, Duration: time.Millisecond, Isolation: sandbox.Production}
	}
	res := f(ctx, req)
	if res.Isolation == "" {
		res.Isolation = sandbox.Production
	}
	return res
}

func (execFunc) Level() sandbox.Level { return sandbox.Production }

// does is an execFunc whose code is run, for its effects (on the
// workspace, through req.Calls): it then succeeds and prints nothing.
func does(run func(req sandbox.Request)) execFunc {
	return func(ctx context.Context, req sandbox.Request) *sandbox.Result {
		run(req)
		return execFunc(nil).Exec(ctx, req)
	}
}

// recordingExec is an execFunc that records each request, for tests that
// look at what reached the sandbox. A test may swap execFunc between
// calls, not during one.
type recordingExec struct {
	execFunc // what each execution does; nil succeeds

	mu   sync.Mutex // guards reqs
	reqs []sandbox.Request
}

func (e *recordingExec) Exec(ctx context.Context, req sandbox.Request) *sandbox.Result {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	e.mu.Unlock()
	return e.execFunc.Exec(ctx, req)
}

// last is the last request recorded.
func (e *recordingExec) last() sandbox.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reqs[len(e.reqs)-1]
}

// newTestServer builds a server and connects an in-memory client to it;
// both are closed when the test ends. By default the server has every
// toolset (allTools), a temporary DataDir and an execFunc that succeeds;
// mod, if not nil, changes those Options (Config is the test's own to
// change) before New.
func newTestServer(t testing.TB, mod func(*Options)) (*Server, *mcp.ClientSession) {
	t.Helper()
	opts := Options{Config: allTools(config.Default()), Executor: execFunc(nil), DataDir: t.TempDir()}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, connectClient(t, s, nil)
}

// connectClient connects an in-memory MCP client with opts (nil means
// defaults) to s. Both ends close when the test ends.
func connectClient(t testing.TB, s *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// allTools lists every toolset in cfg, as `"toolsets": ["all"]` does: most
// tests call tools the lean default does not list.
func allTools(cfg *config.Config) *config.Config {
	cfg.Toolsets = append([]string(nil), config.AllToolsets...)
	return cfg
}

// waitFor polls ok until it holds, and fails the test with failure if it
// does not within the time given.
func waitFor(t testing.TB, within time.Duration, failure string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(failure)
		}
	}
}
