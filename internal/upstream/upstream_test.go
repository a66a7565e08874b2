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
	m := New(Options{Servers: servers, BaseEnv: []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, OnChange: onChange, ConnectTimeout: 20 * time.Second})
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
		short := m.servers["fake"].cfg
		short.Timeout = 300 * time.Millisecond
		m.servers["fake"].cfg = short
		defer func() { short.Timeout = 10 * time.Second; m.servers["fake"].cfg = short }()
		_, err := call(t, m, "fake", "sleep", `{"seconds":5}`)
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
