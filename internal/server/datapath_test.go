package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/gate/gatetest"
	"github.com/codecell/codecell/internal/httpapi"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/store"
	"github.com/codecell/codecell/internal/upstream"
)

// The data-path tests of issue 13: each follows one way personal data
// could leave codecell raw, and checks that it leaves only as tokens. Each
// failed on the code before the one gate (gate.go).

// anyToken matches a token.
var anyToken = regexp.MustCompile(`\[[A-Z][A-Z0-9_]*_[0-9a-f]{6,32}\]`)

// leakUpstreams is an upstream "crm" whose tool echoes its arguments, and
// a failed server "broken" whose stderr printed what it was called with.
type leakUpstreams struct {
	mu   sync.Mutex
	args []string // the arguments each call received
}

func (u *leakUpstreams) Call(_ context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	u.mu.Lock()
	u.args = append(u.args, string(args))
	u.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "got " + string(args)}}}, nil
}
func (*leakUpstreams) Tools() []catalog.Tool { return []catalog.Tool{{Server: "crm", Name: "echo"}} }
func (*leakUpstreams) Statuses() []upstream.Status {
	return []upstream.Status{{Name: "crm", State: upstream.Connected, Tools: 1},
		{Name: "broken", State: upstream.Failed, Error: "exit status 1 (stderr: lookup failed for ada@example.org, card 4111 1111 1111 1111)"}}
}
func (*leakUpstreams) Wait(context.Context, string) error { return nil }

type leakServer struct {
	s    *Server
	st   *store.Store
	cs   *mcp.ClientSession
	logs *syncBuffer
	up   *leakUpstreams
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// newLeakServer is a server with every toolset, a store, the leaking
// upstreams and run as its sandbox (nil succeeds), logging JSON lines to a
// buffer.
func newLeakServer(t *testing.T, mutate func(*config.Config), run execFunc) *leakServer {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &syncBuffer{}
	up := &leakUpstreams{}
	s, cs := newTestServer(t, func(o *Options) {
		o.Config = config.Default()
		o.Config.Toolsets = []string{"exec", "discovery", "workspace", "privacy", "stats", "analysis"}
		if mutate != nil {
			mutate(o.Config)
		}
		o.Executor, o.Upstreams, o.Store = run, up, st
		o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	return &leakServer{s: s, st: st, cs: cs, logs: logs, up: up}
}

// seen is everything a client got from a call: its text and structured
// content, as JSON.
func seen(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (l *leakServer) call(t *testing.T, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := l.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res, seen(t, res)
}

// noneOf fails if text holds any of raw.
func noneOf(t *testing.T, where, text string, raw ...string) {
	t.Helper()
	gatetest.NoneOf(t, where, text, raw...)
}

// Numbers: a result that is a number (result = 4111111111111111) is
// tokenized like a string, in the structured content and in the text.
func TestDataPathResultNumber(t *testing.T) {
	l := newLeakServer(t, nil, func(_ context.Context, req sandbox.Request) *sandbox.Result {
		return &sandbox.Result{OK: true, Result: float64(4111111111111111)}
	})
	res, all := l.call(t, "execute_code", map[string]any{"code": "result = 4111111111111111"})
	noneOf(t, "execute_code's answer", all, "4111111111111111")
	if !anyToken.MatchString(textOf(res)) {
		t.Errorf("no token in %q", textOf(res))
	}
}

// error.type: an exception class can be named anything; named after an
// address, it must not land raw in the result, the execution log,
// get_execution_stats, the REST API, a /metrics label or the log line.
func TestDataPathErrorType(t *testing.T) {
	const addr = "ada@example.org"
	l := newLeakServer(t, nil, func(_ context.Context, req sandbox.Request) *sandbox.Result {
		return &sandbox.Result{Error: &sandbox.ExecError{Type: addr, Message: "raised",
			Traceback: "Traceback (most recent call last):\n  File \"<cell>\", line 1\n" + addr + ": raised\n"}}
	})
	_, all := l.call(t, "execute_code", map[string]any{"code": `raise type("ada@example.org", (Exception,), {})("raised")`})
	noneOf(t, "execute_code's answer", all, addr)

	list, err := l.st.ListExecutions(context.Background(), DefaultNamespace, 0, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("log: %v %v", list, err)
	}
	b, _ := json.Marshal(list[0])
	noneOf(t, "the execution log", string(b), addr)

	_, stats := l.call(t, "get_execution_stats", nil)
	noneOf(t, "get_execution_stats", stats, addr)

	rest := restGet(t, l.s, "/api/v1/stats", "") + restGet(t, l.s, "/api/v1/executions", "")
	noneOf(t, "the REST API", rest, addr)

	metrics := restGet(t, l.s, "/metrics", "")
	noneOf(t, "/metrics", metrics, addr, "example.org")
	if !strings.Contains(metrics, `codecell_executions_total{outcome="other"} 1`) {
		t.Errorf("the outcome of an exception class not built in is not other:\n%s", grepLines(metrics, "executions_total"))
	}
	noneOf(t, "the log", l.logs.String(), addr)
}

// restGet answers a GET from the HTTP routes over s, with a bearer token
// for namespace team-b when token is set (and one for the default
// namespace).
func restGet(t *testing.T, s *Server, path, token string) string {
	t.Helper()
	h, err := httpapi.Handler(httpapi.Options{Server: s.MCP(), API: s.API(), Metrics: s.MetricsHandler(), Gate: s.Gate(),
		Tokens: map[string]string{"token-for-default-0123": DefaultNamespace, "token-for-team-b-01234": "team-b"}})
	if err != nil {
		t.Fatal(err)
	}
	if token == "" {
		token = "token-for-default-0123"
	}
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func grepLines(text, part string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, part) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Output cut: output over the limit is cut where no value is cut in two,
// before the gate tokenizes it; the sandbox keeps a margin past the limit
// and asks Request.Cut where to cut.
func TestDataPathOutputCut(t *testing.T) {
	const limit = 100
	out := strings.Repeat("x", limit-14) + " dave.trunc@example.org and more text after it"
	l := newLeakServer(t, nil, func(_ context.Context, req sandbox.Request) *sandbox.Result {
		if req.Cut == nil {
			return &sandbox.Result{OK: true, Stdout: out[:limit], Truncated: sandbox.Truncated{Stdout: true}}
		}
		k := req.Cut(out, limit)
		return &sandbox.Result{OK: true, Stdout: out[:k], Truncated: sandbox.Truncated{Stdout: true}}
	})
	_, all := l.call(t, "execute_code", map[string]any{"code": "print(...)"})
	noneOf(t, "execute_code's answer", all, "dave.trunc@example.o", "dave.trunc", "example.o")
}

// Progress: a value written in two parts is not shown half by half, and a
// long line is cut where no value is cut.
func TestDataPathProgress(t *testing.T) {
	var mu sync.Mutex
	var notes []string
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		notes = append(notes, req.Params.Message)
		mu.Unlock()
	}}
	long := strings.Repeat("y", 190) + " 4111 1111 1111 1111 end\n"
	l := newLeakServer(t, nil, func(ctx context.Context, req sandbox.Request) *sandbox.Result {
		tick := func() { time.Sleep(3 * progressEvery) }
		req.OnOutput("stdout", []byte("card 4111 1111"))
		tick()
		req.OnOutput("stdout", []byte(" 1111 1111\n"))
		tick()
		req.OnOutput("stdout", []byte(long))
		tick()
		return &sandbox.Result{OK: true, Stdout: "card 4111 1111 1111 1111\n" + long}
	})
	cs := connectClient(t, l.s, opts) // the client that hears progress
	params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print(...)"}}
	params.SetProgressToken("p")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) == 0 {
		t.Fatal("no progress notifications")
	}
	all := strings.Join(notes, "\n---\n")
	noneOf(t, "the progress notifications", all, "4111", "1111 1111")
}

// Paging: reading a file in small pages does not give a value back in
// pieces that can be put together again.
func TestDataPathReadPages(t *testing.T) {
	l := newLeakServer(t, nil, nil)
	content := "id,card\n1,4111 1111 1111 1111\n2,5555 5555 5555 4444\n"
	l.call(t, "write_workspace_file", map[string]any{"path": "cards.csv", "content": content})
	var got strings.Builder
	for off, n := 0, 0; n < 50; n++ {
		res, all := l.call(t, "read_workspace_file", map[string]any{"path": "cards.csv", "offset": off, "limit": 7})
		if res.IsError {
			t.Fatalf("read at %d: %s", off, textOf(res))
		}
		var r ReadWorkspaceFileOutput
		structured(t, res, &r)
		got.WriteString(r.Content)
		_ = all
		if !r.More {
			break
		}
		off = int(r.NextOffset)
	}
	joined := strings.NewReplacer(" ", "", "\n", "").Replace(got.String())
	noneOf(t, "the pages put together", joined, "4111111111111111", "5555555555554444")
	noneOf(t, "the pages", got.String(), "1111", "5555")
}

// Non-UTF-8: a file that is not UTF-8 comes back as base64 of its bytes,
// with its values tokenized first.
func TestDataPathNonUTF8(t *testing.T) {
	l := newLeakServer(t, nil, nil)
	latin1 := []byte("Name;E-Mail\nJos\xe9;ada@example.org\n")
	l.call(t, "write_workspace_file", map[string]any{"path": "people.csv", "content": base64.StdEncoding.EncodeToString(latin1), "encoding": "base64"})
	res, _ := l.call(t, "read_workspace_file", map[string]any{"path": "people.csv"})
	var r ReadWorkspaceFileOutput
	structured(t, res, &r)
	data, err := base64.StdEncoding.DecodeString(r.Content)
	if err != nil || r.Encoding != "base64" {
		t.Fatalf("encoding %q, %v", r.Encoding, err)
	}
	noneOf(t, "the file as read", string(data), "ada@example.org")
}

// Upstream stderr (and errors): shown to every namespace, in
// list_tool_categories, get_execution_stats and /api/v1/upstreams.
func TestDataPathUpstreamErrors(t *testing.T) {
	l := newLeakServer(t, nil, nil)
	_, cats := l.call(t, "list_tool_categories", nil)
	_, stats := l.call(t, "get_execution_stats", nil)
	rest := restGet(t, l.s, "/api/v1/upstreams", "token-for-team-b-01234")
	for where, text := range map[string]string{"list_tool_categories": cats, "get_execution_stats": stats, "/api/v1/upstreams": rest} {
		noneOf(t, where, text, "ada@example.org", "4111 1111 1111 1111")
	}
}

// The execution log: the code the model wrote is kept tokenized.
func TestDataPathLogCode(t *testing.T) {
	l := newLeakServer(t, nil, nil)
	l.call(t, "execute_code", map[string]any{"code": "send('ada@example.org', card='4111 1111 1111 1111')"})
	list, err := l.st.ListExecutions(context.Background(), DefaultNamespace, 0, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("log: %v %v", list, err)
	}
	noneOf(t, "the logged code", list[0].Code, "ada@example.org", "4111")
	noneOf(t, "the REST API", restGet(t, l.s, "/api/v1/executions", ""), "ada@example.org", "4111")
}

// Echo: a value restored into a host tool's arguments does not come back
// raw in its answer, even where no detector would find it.
func TestDataPathRestoredEcho(t *testing.T) {
	l := newLeakServer(t, nil, nil)
	res, _ := l.call(t, "sanitize_pii", map[string]any{"text": "4111 1111 1111 1111"})
	var san SanitizeOutput
	structured(t, res, &san)
	tok := strings.TrimSpace(san.Text)
	if !anyToken.MatchString(tok) {
		t.Fatalf("sanitize_pii: %q", san.Text)
	}
	_, all := l.call(t, "write_workspace_file", map[string]any{"path": "x" + tok + ".txt", "content": "x"})
	noneOf(t, "write_workspace_file's answer", all, "4111")
	_, all = l.call(t, "list_workspace_files", nil)
	noneOf(t, "list_workspace_files' answer", all, "4111")
	// And a tool call's answer, echoed by the code's output.
	l2 := newLeakServer(t, nil, func(ctx context.Context, req sandbox.Request) *sandbox.Result {
		params, _ := json.Marshal(map[string]any{"server": "crm", "tool": "echo", "arguments": map[string]any{"ssn": "[SSN_abcdef]"}})
		reply, err := req.Calls.HandleCall(ctx, "tool", params)
		b, _ := json.Marshal(reply)
		return &sandbox.Result{OK: true, Stdout: fmt.Sprintf("%s %v\n", b, err)}
	})
	// The token must be the vault's: make it by sanitizing a labelled SSN.
	res, _ = l2.call(t, "sanitize_pii", map[string]any{"text": "ssn: 123456789"})
	structured(t, res, &san)
	ssnTok := strings.TrimSpace(strings.TrimPrefix(san.Text, "ssn: "))
	l2.s.exec = execFunc(func(ctx context.Context, req sandbox.Request) *sandbox.Result {
		params, _ := json.Marshal(map[string]any{"server": "crm", "tool": "echo", "arguments": map[string]any{"id": ssnTok}})
		reply, err := req.Calls.HandleCall(ctx, "tool", params)
		b, _ := json.Marshal(reply)
		return &sandbox.Result{OK: true, Stdout: fmt.Sprintf("%s %v\n", b, err)}
	})
	_, all = l2.call(t, "execute_code", map[string]any{"code": "print(servers.crm.echo(id=tok))"})
	if len(l2.up.args) == 0 || !strings.Contains(l2.up.args[len(l2.up.args)-1], "123456789") {
		t.Fatalf("the upstream did not get the value: %v", l2.up.args)
	}
	noneOf(t, "execute_code's answer", all, "123456789")
}

// restore_pii hands the model any original: it is not listed unless the
// config allows it.
func TestDataPathRestoreListed(t *testing.T) {
	names := func(l *leakServer) string {
		tools, err := l.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, tl := range tools.Tools {
			n = append(n, tl.Name)
		}
		return strings.Join(n, " ")
	}
	if got := names(newLeakServer(t, nil, nil)); strings.Contains(got, "restore_pii") {
		t.Errorf("restore_pii listed by default: %s", got)
	}
	l := newLeakServer(t, func(c *config.Config) { c.PII.AllowRestore = true }, nil)
	if got := names(l); !strings.Contains(got, "restore_pii") {
		t.Errorf("restore_pii not listed with allowRestore: %s", got)
	}
	res, _ := l.call(t, "sanitize_pii", map[string]any{"text": "ada@example.org"})
	var san SanitizeOutput
	structured(t, res, &san)
	res, _ = l.call(t, "restore_pii", map[string]any{"text": san.Text})
	if textOf(res) != "ada@example.org" {
		t.Errorf("restore_pii with allowRestore: %q", textOf(res))
	}
}

// Token ids: stable per value, but neither sequential nor guessable: the
// model cannot walk the vault with [EMAIL_1], [EMAIL_2], ...
func TestDataPathTokenIDs(t *testing.T) {
	l := newLeakServer(t, func(c *config.Config) { c.PII.AllowRestore = true }, nil)
	var toks []string
	for _, v := range []string{"a@example.org", "b@example.org", "a@example.org"} {
		res, _ := l.call(t, "sanitize_pii", map[string]any{"text": v})
		var san SanitizeOutput
		structured(t, res, &san)
		toks = append(toks, san.Text)
	}
	if toks[0] != toks[2] || toks[0] == toks[1] {
		t.Fatalf("tokens %v: want stable per value", toks)
	}
	for _, tk := range toks {
		if !regexp.MustCompile(`^\[EMAIL_[0-9a-f]{6,}\]$`).MatchString(tk) {
			t.Errorf("token %q is not a keyed hash id", tk)
		}
	}
	res, _ := l.call(t, "restore_pii", map[string]any{"text": "[EMAIL_1] [EMAIL_2] [EMAIL_000001]"})
	noneOf(t, "restore_pii of guessed tokens", textOf(res), "@example.org")
}

// A line that has the shape of a token inside a private key does not stop
// the key from being tokenized.
func TestDataPathPEMWithTokenLine(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi5tBqz\n[SECRET_1]\nq8w0t9Vd5b3mQJ7x2Lk9pQ4sRtUvWxYz0aBcDeFgHiJk\n-----END RSA PRIVATE KEY-----"
	l := newLeakServer(t, nil, func(context.Context, sandbox.Request) *sandbox.Result {
		return &sandbox.Result{OK: true, Stdout: pem + "\n"}
	})
	_, all := l.call(t, "execute_code", map[string]any{"code": "print(open('key.pem').read())"})
	noneOf(t, "execute_code's answer", all, "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi5tBqz", "q8w0t9Vd5b3mQJ7x2Lk9pQ4sRtUvWxYz0aBcDeFgHiJk")
}

// Resources: a workspace file read as a resource is tokenized, text or
// binary.
func TestDataPathResourceRead(t *testing.T) {
	l := newLeakServer(t, nil, nil)
	l.call(t, "write_workspace_file", map[string]any{"path": "p.bin", "content": base64.StdEncoding.EncodeToString([]byte("\x00\x01ada@example.org\x00")), "encoding": "base64"})
	l.call(t, "write_workspace_file", map[string]any{"path": "p.txt", "content": "ada@example.org"})
	for _, p := range []string{"p.bin", "p.txt"} {
		r, err := l.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///workspace/" + p})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		blob := ""
		if len(r.Contents) > 0 {
			blob = string(r.Contents[0].Blob)
		}
		noneOf(t, "resources/read "+p, string(b)+blob, "ada@example.org")
	}
}
