package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
)

var fake string // the fakeupstream binary

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeupstream-")
	if err != nil {
		panic(err)
	}
	fake = filepath.Join(dir, "fakeupstream")
	if out, err := exec.Command("go", "build", "-o", fake, "./fakeupstream").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build fakeupstream: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newManager(t *testing.T, servers map[string]config.Server, onChange func()) *Manager {
	t.Helper()
	for name, s := range servers {
		if s.Timeout == 0 {
			s.Timeout = 10 * time.Second
			servers[name] = s
		}
	}
	m := New(Options{Servers: servers, BaseEnv: []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, OnChange: onChange})
	m.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m.WaitStarted(ctx)
	t.Cleanup(m.Close)
	return m
}

func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, m *Manager, server, tool, args string) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return m.Call(ctx, server, tool, json.RawMessage(args))
}

func TestStdioServer(t *testing.T) {
	t.Setenv("CODECELL_SECRET_FOR_TEST", "do-not-leak")
	var changes atomic.Int32
	m := newManager(t, map[string]config.Server{
		"fake":   {Command: fake, Env: map[string]string{"GREETING": "hi"}},
		"broken": {Command: "/nonexistent/server"},
		"off":    {Command: fake, Disabled: true},
	}, func() { changes.Add(1) })

	st := map[string]Status{}
	for _, s := range m.Statuses() {
		st[s.Name] = s
	}
	if st["fake"].State != Connected || st["fake"].Tools != 9 || st["fake"].Instructions != "A fake server for tests." {
		t.Fatalf("fake: %+v (pagination at 3 a page must give all 9 tools)", st["fake"])
	}
	if st["broken"].State != Failed || !strings.Contains(st["broken"].Error, "/nonexistent/server") {
		t.Fatalf("broken: %+v", st["broken"])
	}
	if st["off"].State != Disabled {
		t.Fatalf("off: %+v", st["off"])
	}

	t.Run("text", func(t *testing.T) {
		r, err := call(t, m, "fake", "echo", `{"text":"hello"}`)
		if err != nil || r.IsError || textOf(r) != "hello" {
			t.Fatalf("%v %+v", err, r)
		}
	})
	t.Run("structured", func(t *testing.T) {
		r, err := call(t, m, "fake", "add-numbers", `{"a":2,"b":3}`)
		if err != nil || r.IsError {
			t.Fatalf("%v %+v", err, r)
		}
		b, _ := json.Marshal(r.StructuredContent)
		if string(b) != `{"sum":5}` {
			t.Fatalf("structured %s", b)
		}
	})
	t.Run("tool error", func(t *testing.T) {
		r, err := call(t, m, "fake", "fail", `{"text":"boom"}`)
		if err != nil || !r.IsError || !strings.Contains(textOf(r), "boom") {
			t.Fatalf("%v %+v", err, r)
		}
	})
	t.Run("environment", func(t *testing.T) {
		for name, want := range map[string]string{"GREETING": "hi", "CODECELL_SECRET_FOR_TEST": "", "PATH": "/usr/bin:/bin"} {
			r, err := call(t, m, "fake", "getenv", `{"name":"`+name+`"}`)
			if err != nil || textOf(r) != want {
				t.Errorf("%s = %q (%v), want %q", name, textOf(r), err, want)
			}
		}
	})
	t.Run("per-call timeout", func(t *testing.T) {
		// A manager of its own: a server's config is fixed once it starts
		// (changing it under a running manager raced its goroutines).
		short := newManager(t, map[string]config.Server{"fake": {Command: fake, Timeout: 300 * time.Millisecond}}, nil)
		_, err := call(t, short, "fake", "sleep", `{"seconds":5}`)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a deadline", err)
		}
	})
	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(200 * time.Millisecond); cancel() }()
		_, err := m.Call(ctx, "fake", "sleep", json.RawMessage(`{"seconds":5}`))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled", err)
		}
	})
	t.Run("crash mid-call, then restart", func(t *testing.T) {
		_, err := call(t, m, "fake", "crash", `{}`)
		if err == nil || !strings.Contains(err.Error(), "went away") {
			t.Fatalf("crash: err = %v", err)
		}
		r, err := call(t, m, "fake", "echo", `{"text":"back"}`)
		if err != nil || textOf(r) != "back" {
			t.Fatalf("after the crash: %v %+v", err, r)
		}
	})
	t.Run("unavailable servers", func(t *testing.T) {
		for _, name := range []string{"broken", "off", "nope"} {
			if _, err := call(t, m, name, "echo", `{}`); err == nil {
				t.Errorf("%s: want an error", name)
			}
		}
	})
	t.Run("list_changed", func(t *testing.T) {
		before := changes.Load()
		if _, err := call(t, m, "fake", "add_tool", `{"name":"brand_new"}`); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for _, tool := range m.Tools() {
				if tool.Name == "brand_new" && changes.Load() > before {
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the new tool never appeared")
	})
}

func TestHTTPServer(t *testing.T) {
	cmd := exec.Command(fake, "-http", "127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, map[string]config.Server{
		"remote": {URL: "http://" + strings.TrimSpace(addr) + "/mcp", Transport: "streamable-http", Headers: map[string]string{"X-Test": "1"}},
	}, nil)
	r, err := call(t, m, "remote", "add-numbers", `{"a":1,"b":1}`)
	if err != nil || r.IsError {
		t.Fatalf("%v %+v", err, r)
	}
	if s := m.Statuses()[0]; s.State != Connected || s.Transport != "streamable-http" {
		t.Fatalf("%+v", s)
	}
}

func TestBackoff(t *testing.T) {
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{{0, 0}, {1, 0}, {2, time.Second}, {3, 2 * time.Second}, {8, time.Minute}, {50, time.Minute}} {
		if got := backoff(tt.failures); got != tt.want {
			t.Errorf("backoff(%d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}

// TestHTTPHeaders: the configured headers reach a remote server on every
// request.
func TestHTTPHeaders(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "h", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "noop", Description: "Nothing."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	var seen atomic.Int32
	var missing atomic.Int32
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer s3cret" {
			seen.Add(1)
		} else {
			missing.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	// Closed after the manager (clean-ups run last first): Close waits for
	// the client's open stream.
	t.Cleanup(ts.Close)
	m := newManager(t, map[string]config.Server{"h": {URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}}}, nil)
	if _, err := call(t, m, "h", "noop", `{}`); err != nil {
		t.Fatal(err)
	}
	if seen.Load() < 2 || missing.Load() != 0 {
		t.Fatalf("%d requests with the header, %d without", seen.Load(), missing.Load())
	}
}

// TestWaitForStartingServer: Wait on a server still starting says so when
// its context ends, without stopping the start; once the server answers,
// Wait returns after OnChange has seen its tools.
func TestWaitForStartingServer(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	var published atomic.Int32 // tools OnChange saw, from the fake server
	var m *Manager
	m = New(Options{
		Servers: map[string]config.Server{"slow": {Command: fake, Args: []string{"-wait-for", gate}, Timeout: 10 * time.Second}},
		BaseEnv: []string{"PATH=/usr/bin:/bin"},
		OnChange: func() {
			published.Store(int32(len(m.Tools())))
		},
	})
	m.Start()
	t.Cleanup(m.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := m.Wait(ctx, "slow")
	cancel()
	if !errors.Is(err, ErrStarting) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a server that cannot answer yet = %v, want ErrStarting and the deadline", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "slow is still starting") || !strings.Contains(msg, "startupTimeout is 1m0s") {
		t.Errorf("the error does not say the server is starting and its bound: %q", msg)
	}
	if st := m.Statuses()[0]; st.State != Starting {
		t.Fatalf("after a waiter gave up the server is %+v, want still starting", st)
	}

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Wait(ctx, "slow"); err != nil {
		t.Fatalf("Wait once the server can answer: %v", err)
	}
	if n := published.Load(); n != 9 {
		t.Errorf("OnChange saw %d tools before Wait returned, want the server's 9", n)
	}
	if st := m.Statuses()[0]; st.State != Connected {
		t.Fatalf("server %+v, want connected", st)
	}
	for _, name := range []string{"nope"} {
		if err := m.Wait(ctx, name); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("Wait(%q) = %v, want ErrUnknownServer", name, err)
		}
	}
}

// TestWaitForFailedServers: Wait on a server that cannot start says why, with
// what the server printed; a disabled one says it is disabled.
func TestWaitForFailedServers(t *testing.T) {
	m := newManager(t, map[string]config.Server{
		"broken":  {Command: "/nonexistent/server"},
		"crashes": {Command: "/bin/sh", Args: []string{"-c", "echo \"Error: Cannot find package 'zod'\" >&2; exit 1"}},
		"off":     {Command: fake, Disabled: true},
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, want := range map[string]string{
		"broken":  "/nonexistent/server",
		"crashes": "Cannot find package 'zod'",
		"off":     "off is disabled in the config",
	} {
		err := m.Wait(ctx, name)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Errorf("Wait(%q) = %v, want ErrUnavailable saying %q", name, err, want)
		}
	}
}

// TestStartupTimeout: a server that does not answer within its startupTimeout
// fails with an error that names the bound.
func TestStartupTimeout(t *testing.T) {
	m := newManager(t, map[string]config.Server{
		"mute": {Command: fake, Args: []string{"-wait-for", "/nonexistent/never"}, StartupTimeout: 300 * time.Millisecond},
	}, nil)
	st := m.Statuses()[0]
	if st.State != Failed || !strings.Contains(st.Error, "no answer within its startupTimeout of 300ms") {
		t.Fatalf("mute: %+v, want failed naming the startup timeout", st)
	}
	if !strings.Contains(st.Error, "fakeupstream: waiting for /nonexistent/never") {
		t.Errorf("the error leaves out what the server printed: %q", st.Error)
	}
}

// TestCloseWhileStarting: Close ends a server still starting and returns;
// nothing connects after it.
func TestCloseWhileStarting(t *testing.T) {
	m := New(Options{Servers: map[string]config.Server{
		"slow": {Command: fake, Args: []string{"-wait-for", "/nonexistent/never"}, Timeout: time.Second},
	}})
	m.Start()
	m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Wait(ctx, "slow"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("Wait after Close = %v, want unavailable: shutting down", err)
	}
}

// TestStderrLogRedacts: what a server writes on stderr is redacted a whole
// line at a time, so a value written in two pieces is redacted whole, and
// nothing is kept before it is redacted (issue 13: a server's stderr, shown
// to every namespace, printed values restored into its arguments).
func TestStderrLogRedacts(t *testing.T) {
	redact := func(s string) string { return strings.ReplaceAll(s, "ada@example.org", "[EMAIL_3f9a2c]") }
	for _, chunk := range []int{1, 3, 7, 1 << 10} {
		l := stderrLog{redact: redact}
		data := []byte("starting\ncalled with to=ada@example.org\n")
		for i := 0; i < len(data); i += chunk {
			l.Write(data[i:min(i+chunk, len(data))])
		}
		// A line without its end yet is redacted as it stands when read.
		l.Write([]byte("last words: ada@example.org"))
		got := l.String()
		if strings.Contains(got, "ada@") || strings.Count(got, "[EMAIL_3f9a2c]") != 2 {
			t.Errorf("written %d bytes at a time: %q", chunk, got)
		}
	}
}

// TestStderrLog: a failed server's error quotes the first lines of its
// stderr (where the cause usually is) and the last, with the cut between
// them marked and counted, in bounded space.
func TestStderrLog(t *testing.T) {
	t.Run("short", func(t *testing.T) {
		var l stderrLog
		fmt.Fprint(&l, "line one\nline two\n")
		if got := l.String(); got != "line one | line two" {
			t.Fatalf("String() = %q", got)
		}
	})
	for _, chunk := range []int{1, 7, 4096, 1 << 20} {
		t.Run(fmt.Sprintf("long, written %d bytes at a time", chunk), func(t *testing.T) {
			var all strings.Builder
			all.WriteString("node:internal/modules/esm/resolve:873\nError [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod'\n")
			for i := range 20000 {
				fmt.Fprintf(&all, "npm noise %d\n", i)
			}
			all.WriteString("Node.js v20.19.0\n")
			var l stderrLog
			data := []byte(all.String())
			for len(data) > 0 {
				n := min(chunk, len(data))
				l.Write(data[:n])
				data = data[n:]
			}
			got := l.String()
			for _, want := range []string{"Cannot find package 'zod'", "bytes cut ...]", "Node.js v20.19.0"} {
				if !strings.Contains(got, want) {
					t.Errorf("String() lacks %q: %q", want, got)
				}
			}
			// Each line break becomes " | ", two bytes more.
			if len(got) > 2*(stderrHead+stderrTail) {
				t.Errorf("String() is %d bytes, more than the bound", len(got))
			}
			if cap(l.head) > stderrHead || cap(l.tail) > 3*stderrTail {
				t.Errorf("it keeps %d and %d bytes", cap(l.head), cap(l.tail))
			}
			// The cut is counted exactly: what is shown plus what was cut is
			// everything.
			var cut int
			if _, err := fmt.Sscanf(got[strings.Index(got, "[... ")+5:], "%d bytes cut", &cut); err != nil {
				t.Fatal(err)
			}
			shown := strings.ReplaceAll(got, " | ", "\n")
			shown = shown[:strings.Index(shown, "[... ")] + shown[strings.Index(shown, "...]\n")+5:]
			if want := len(strings.TrimSpace(all.String())); len(shown)+cut != want {
				t.Errorf("%d bytes shown and %d cut, of %d", len(shown), cut, want)
			}
		})
	}
}

func TestFirstLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"A fake server for tests.\nMore.", "A fake server for tests."},
		{"\n\n  Leading blank lines.  \r\nMore.", "Leading blank lines."},
		{"# Everything Server – Server Instructions\n\nAudience: agents.\nMore.", "Audience: agents."},
		{"## Title\n### Subtitle\n---\nText after a rule.", "Text after a rule."},
		{"Title\n=====\nText under a setext title.", "Text under a setext title."},
		{"Title\n-----\n\nText.", "Text."},
		{"# Only a title", "Only a title"},
		{"#hashtag is not a heading", "#hashtag is not a heading"},
		{"Text\n\n---\nMore.", "Text"},
	} {
		if got := firstLine(tc.in); got != tc.want {
			t.Errorf("firstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
