package upstream

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
)

// memServer is an in-process upstream: echo answers its text, fail reports
// a tool error, and sum answers structured content.
func memServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("it failed: " + a.Text)
	})
	type sum struct {
		Sum int `json:"sum"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "sum"}, func(ctx context.Context, _ *mcp.CallToolRequest, a struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (*mcp.CallToolResult, sum, error) {
		return nil, sum{a.A + a.B}, nil
	})
	return s
}

// startMem starts a Manager whose one upstream, "mem", is memServer in
// this process.
func startMem(tb testing.TB) *Manager {
	m := New(Options{
		Servers:   map[string]config.Server{"mem": {Name: "mem", Command: "in-process", Timeout: 10 * time.Second}},
		InProcess: map[string]*mcp.Server{"mem": memServer()},
	})
	m.Start()
	tb.Cleanup(m.Close)
	return m
}

func TestInProcessServer(t *testing.T) {
	m := startMem(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Wait(ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, args string
		text       string
		structured string // the structured content as JSON, if any
		isError    bool
		err        bool // the call itself fails (a JSON-RPC error)
	}{
		{tool: "echo", args: `{"text":"héllo \"x\""}`, text: `héllo "x"`},
		{tool: "echo", args: ``, isError: true}, // no arguments are {}, without the required text
		{tool: "sum", args: `{"a":2,"b":3}`, text: `{"sum":5}`, structured: `{"sum":5}`},
		{tool: "fail", args: `{"text":"x"}`, text: "it failed: x", isError: true},
		{tool: "echo", args: `{"text":1}`, isError: true}, // fails the input schema
		{tool: "nosuch", args: `{}`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.tool+tt.args, func(t *testing.T) {
			res, err := call(t, m, "mem", tt.tool, tt.args)
			if tt.err {
				if err == nil {
					t.Fatalf("got %+v, want an error", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError {
				t.Fatalf("IsError = %v, want %v (%s)", res.IsError, tt.isError, textOf(res))
			}
			if tt.isError && tt.text == "" {
				return
			}
			if got := textOf(res); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if tt.structured != "" {
				got := fmt.Sprint(res.StructuredContent)
				if got != "map[sum:5]" {
					t.Errorf("structured = %s, want %s", got, tt.structured)
				}
			}
		})
	}
	// Calls at once, each answered with its own text.
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprint("call ", i)
			res, err := call(t, m, "mem", "echo", fmt.Sprintf(`{"text":%q}`, want))
			if err != nil {
				t.Error(err)
				return
			}
			if got := textOf(res); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		}()
	}
	wg.Wait()
}

// TestInProcessClose: closing the client's end ends the server's session,
// and a Read waiting on either end returns.
func TestInProcessClose(t *testing.T) {
	st, ct := inProcessTransports()
	ctx := context.Background()
	ss, err := memServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's session outlived the client's end")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"}); err == nil {
		t.Error("a call on a closed connection succeeded")
	}
}

// TestWireCopy: what crosses is what the wire would carry.
func TestWireCopy(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	req := &jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"echo"}`), Extra: "transport-private"}
	got, err := wireCopy(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Params[2] = 'X' // the sender's bytes are its own
	if want := (&jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"echo"}`)}); !reflect.DeepEqual(got, want) {
		t.Errorf("request: got %+v, want %+v", got, want)
	}

	resp := &jsonrpc.Response{ID: id, Result: []byte(`{"ok":true}`), Extra: 1}
	got, err = wireCopy(resp)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&jsonrpc.Response{ID: id, Result: []byte(`{"ok":true}`)}); !reflect.DeepEqual(got, want) {
		t.Errorf("response: got %+v, want %+v", got, want)
	}

	// An error crosses as the wire's error, whatever Go error was sent.
	got, err = wireCopy(&jsonrpc.Response{ID: id, Error: fmt.Errorf("wrapped: %w", context.Canceled)})
	if err != nil {
		t.Fatal(err)
	}
	var werr *jsonrpc.Error
	if r, ok := got.(*jsonrpc.Response); !ok || !errors.As(r.Error, &werr) || errors.Is(r.Error, context.Canceled) {
		t.Errorf("got %#v, want a response with a *jsonrpc.Error", got)
	}
}
