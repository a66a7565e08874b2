package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowPost opens a connection to addr and sends a POST /mcp whose body
// never ends: its headers and the first byte of a 100,000-byte body.
func slowPost(t *testing.T, addr string, header string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 100000\r\n\r\n{", header)
	return c
}

// closed reports whether the server closed c (a read ends otherwise than
// by c's read deadline).
func closed(c net.Conn) bool {
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// TestRefusalDoesNotWaitForTheBody: 20 clients without a token that
// trickle their bodies get their 401 at once, and their connections are
// closed, however long the body would take (the body bound here is longer
// than the test).
func TestRefusalDoesNotWaitForTheBody(t *testing.T) {
	h, err := Handler(Options{Server: mcp.NewServer(&mcp.Implementation{Name: "t"}, nil),
		Tokens: map[string]string{"a-token-0123456789abcdef": "a"}, BodyTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Config = NewServer(h)
	ts.Start()
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")

	var wg sync.WaitGroup
	for i := range 20 {
		c := slowPost(t, addr, "")
		wg.Go(func() {
			// Keep trickling while waiting: a client that sends.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						if _, err := c.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			// Only a hang fails this: the bound is the test's, not a claim
			// about speed.
			c.SetReadDeadline(time.Now().Add(time.Minute))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Errorf("client %d: no answer: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
				t.Errorf("client %d: %s, close %v; want 401 and the connection closed", i, resp.Status, resp.Close)
			}
			if !closed(c) {
				t.Errorf("client %d: the connection stayed open after the refusal", i)
			}
		})
	}
	wg.Wait()
}

// TestBodyBound: a body that stops arriving is cut at the bound, and the
// connection closed; a body that arrives whole lifts the bound, so the
// answer may take longer than it.
func TestBodyBound(t *testing.T) {
	const bound = 500 * time.Millisecond
	handler := boundBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		time.Sleep(3 * bound) // an answer that takes longer than the bound
		fmt.Fprint(w, "done")
	}), bound)
	ts := httptest.NewUnstartedServer(handler)
	ts.Config = NewServer(handler)
	ts.Start()
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")

	t.Run("a stalled body is cut", func(t *testing.T) {
		c := slowPost(t, addr, "")
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if !closed(c) {
			t.Errorf("the connection of a stalled body is still open")
		}
	})
	t.Run("a whole body lifts the bound", func(t *testing.T) {
		resp, err := http.Post(ts.URL+"/mcp", "application/json", strings.NewReader(`{"x": 1}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || string(b) != "done" {
			t.Errorf("%d %q %v", resp.StatusCode, b, err)
		}
	})
}
