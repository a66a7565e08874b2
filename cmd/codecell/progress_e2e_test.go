package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// processesWith lists host processes whose command line contains s.
func processesWith(s string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cmdline")
		if err == nil && bytes.Contains(bytes.ReplaceAll(b, []byte{0}, []byte(" ")), []byte(s)) && filepath.Base(d) != fmt.Sprint(os.Getpid()) {
			found = append(found, filepath.Base(d)+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// waitProcesses waits up to d for the processes matching s to be n or more
// (n > 0) or none (n == 0), and reports whether they were.
func waitProcesses(s string, n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		got := len(processesWith(s))
		if (n == 0 && got == 0) || (n > 0 && got >= n) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProgressAndCancellation: a long execution with a progress token gets
// progress notifications carrying its latest output lines (with personal
// data as tokens); a cancelled execution's processes, and those of one
// whose client went away, are gone within a second.
func TestProgressAndCancellation(t *testing.T) {
	requireProduction(t)
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "60s"}}`)
	// cancelGrace is how long a cancelled execution's processes may take to
	// go: a third of its 60 s timeout, so that only the cancellation ends them.
	const cancelGrace = 20 * time.Second
	var mu sync.Mutex
	var notes []*mcp.ProgressNotificationParams
	connect := func() *mcp.ClientSession {
		return serveStdio(t, cfgPath, dataDir, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				notes = append(notes, req.Params)
				mu.Unlock()
			},
		})
	}
	cs := connect()
	defer func() { cs.Close() }()

	t.Run("progress", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
			"code": "import time\nfor i in range(6):\n    print('step', i, 'mail ann@example.com', flush=True)\n    time.sleep(0.4)\n'done'"}}
		params.SetProgressToken("tok-1")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			t.Fatalf("%v %v", err, res)
		}
		mu.Lock()
		got := append([]*mcp.ProgressNotificationParams{}, notes...)
		mu.Unlock()
		if len(got) < 2 {
			t.Fatalf("%d progress notifications for a 2.4 s execution", len(got))
		}
		last := -1.0
		sawOutput := false
		for _, n := range got {
			if n.ProgressToken != "tok-1" || n.Progress <= last {
				t.Errorf("notification %+v: token or progress not increasing", n)
			}
			last = n.Progress
			if strings.Contains(n.Message, "step ") {
				sawOutput = true
			}
			if strings.Contains(n.Message, "ann@example.com") || (strings.Contains(n.Message, "mail") && !strings.Contains(n.Message, "[EMAIL_")) {
				t.Errorf("personal data in a progress message: %q", n.Message)
			}
		}
		if !sawOutput {
			t.Errorf("no output lines in the progress messages: %+v", got[len(got)-1])
		}
	})

	t.Run("no token, no notifications", func(t *testing.T) {
		mu.Lock()
		before := len(notes)
		mu.Unlock()
		call(t, cs, map[string]any{"code": "import time\ntime.sleep(1.2)"})
		mu.Lock()
		after := len(notes)
		mu.Unlock()
		if after != before {
			t.Errorf("%d notifications without a progress token", after-before)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		marker := fmt.Sprintf("sleep %d", 4000+time.Now().UnixNano()%1000)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
				"code": fmt.Sprintf("import subprocess\nsubprocess.run(%q.split())", marker)}})
			errc <- err
		}()
		if !waitProcesses(marker, 1, 10*time.Second) {
			t.Fatal("the execution's process never started")
		}
		cancelled := time.Now()
		cancel() // the client sends notifications/cancelled
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v", err)
		}
		// Well within the execution's own timeout (60 s), so that only the
		// cancellation can have ended them; no tighter bound, which a
		// loaded machine would break.
		if !waitProcesses(marker, 0, cancelGrace) {
			t.Fatalf("processes left %s after cancellation: %v", cancelGrace, processesWith(marker))
		}
		t.Logf("the execution's processes were gone %s after the cancellation", time.Since(cancelled).Round(time.Millisecond))
		// The server goes on.
		if _, out := call(t, cs, map[string]any{"code": "1+1"}); !out.OK {
			t.Fatalf("after cancellation: %+v", out.Error)
		}
	})

	t.Run("client gone", func(t *testing.T) {
		// A host that dies without a word: codecell's stdin just closes.
		// (The SDK client's Close would first wait for its pending call.)
		marker := fmt.Sprintf("sleep %d", 5000+time.Now().UnixNano()%1000)
		cmd := exec.Command(binary, "serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "warn")
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		callReq, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
			"name": "execute_code", "arguments": map[string]any{"code": fmt.Sprintf("import subprocess\nsubprocess.run(%q.split())", marker)}}})
		fmt.Fprintf(stdin, "%s\n%s\n%s\n",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`, callReq)
		if !waitProcesses(marker, 1, 10*time.Second) {
			t.Fatal("the execution's process never started")
		}
		gone := time.Now()
		stdin.Close()
		if !waitProcesses(marker, 0, cancelGrace) {
			t.Fatalf("processes left %s after the client went away: %v", cancelGrace, processesWith(marker))
		}
		t.Logf("the execution's processes were gone %s after the client went away", time.Since(gone).Round(time.Millisecond))
	})
}
