package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/cgroup"
	"github.com/codecell/codecell/internal/server"
)

// Red-team attacks through the whole server (issue #14); the sandbox's own
// are in internal/sandbox/redteam_test.go.

// TestRedTeamWorkspaceRaces: while the code swaps a directory of its
// workspace with a link to a host directory, and a file with a link to a
// host file, as fast as it can, the host's tools write, read, list and
// delete through those names. None of them ever reaches the host's files,
// and the execution and the tools run at the same time (the code stops when
// the host says so).
func TestRedTeamWorkspaceRaces(t *testing.T) {
	requireProduction(t)
	cs := connectStdio(t, testConfig)
	ctx := context.Background()
	mk := fmt.Sprintf("OUTSIDE-%d", rand.Int64())
	outside := t.TempDir()
	hostFiles := map[string]string{"secret": mk, "victim": mk, "data.csv": "name\n" + mk + "\n", "outside-only-" + mk: mk}
	for name, content := range hostFiles {
		if err := os.WriteFile(filepath.Join(outside, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	done := make(chan server.ExecuteCodeOutput, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
			"timeout_seconds": 60, "context": map[string]any{"OUTSIDE": outside},
			"code": `import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs('d', exist_ok=True)
for n in ('secret', 'victim'):
    open('d/' + n, 'w').write('inside')
open('d/data.csv', 'w').write('name\ninside\n')
for n in ('other', 'f.new', 'stop'):
    if os.path.lexists(n):
        os.remove(n)
os.symlink(OUTSIDE, 'other')
open('f', 'w').write('inside')
open('ready', 'w').write('1')
swaps, deadline = 0, time.time() + 40
while not os.path.exists('stop') and time.time() < deadline:
    libc.renameat2(-100, b'd', -100, b'other', 2)  # RENAME_EXCHANGE: the directory and the link trade places
    os.symlink(OUTSIDE + '/secret', 'f.new')
    os.rename('f.new', 'f')
    open('f.new', 'w').write('inside')
    os.rename('f.new', 'f')
    swaps += 1
print('swaps', swaps, 'stopped' if os.path.exists('stop') else 'ran out of time')
`}})
		var out server.ExecuteCodeOutput
		if err == nil && res.StructuredContent != nil {
			json.Unmarshal([]byte(toJSON(res.StructuredContent)), &out)
		} else if err != nil {
			out.Stderr = err.Error()
		}
		done <- out
	}()

	// Wait for the code to set up.
	for deadline := time.Now().Add(30 * time.Second); ; {
		res, _ := callTool(t, cs, "read_workspace_file", map[string]any{"path": "ready"})
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the code never set up its links")
		}
		time.Sleep(20 * time.Millisecond)
	}

	tries := 0
	check := func(what string, text string) {
		t.Helper()
		tries++
		if strings.Contains(text, mk) {
			t.Errorf("%s reached the host's files: %.300s", what, text)
		}
	}
	tool := func(tool string, args map[string]any) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return err.Error()
		}
		return textOf(res) + toJSON(res.StructuredContent)
	}
	for i := range 25 {
		check("write d/x", tool("write_workspace_file", map[string]any{"path": fmt.Sprintf("d/x-%d.txt", i), "content": "W"}))
		check("write f", tool("write_workspace_file", map[string]any{"path": "f", "content": "W"}))
		check("read d/secret", tool("read_workspace_file", map[string]any{"path": "d/secret"}))
		check("read f", tool("read_workspace_file", map[string]any{"path": "f"}))
		check("read_code_file d/secret", tool("read_code_file", map[string]any{"path": "d/secret"}))
		check("append d/secret", tool("append_to_code_file", map[string]any{"path": "d/secret", "content": "W"}))
		check("list d", tool("list_workspace_files", map[string]any{"path": "d"}))
		check("list *", tool("list_workspace_files", map[string]any{"pattern": "outside-only*"}))
		check("delete d/victim", tool("delete_workspace_file", map[string]any{"path": "d/victim"}))
		check("analysis d/data.csv", tool("execute_analysis", map[string]any{"analysis_type": "filter", "source": "d/data.csv",
			"parameters": map[string]any{"conditions": []any{}}}))
		for _, uri := range []string{"file:///workspace/d/secret", "file:///workspace/f"} {
			r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			check("resources/read "+uri, toJSON(r)+fmt.Sprint(err))
		}
	}
	tool("write_workspace_file", map[string]any{"path": "stop", "content": "1"})
	var out server.ExecuteCodeOutput
	select {
	case out = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("the execution did not end")
	}
	if !out.OK || !strings.Contains(out.Stdout, "stopped") || strings.Contains(out.Stdout, "swaps 0 ") {
		t.Fatalf("the code's swaps did not run alongside the tools: ok=%v stdout %q error %+v", out.OK, out.Stdout, out.Error)
	}
	t.Logf("%d tool calls during %s", tries, strings.TrimSpace(out.Stdout))

	// The host's files are as they were.
	entries, _ := os.ReadDir(outside)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"data.csv", "outside-only-" + mk, "secret", "victim"}
	if !slices.Equal(names, want) {
		t.Errorf("the host directory holds %v, want %v", names, want)
	}
	for name, content := range hostFiles {
		if b, err := os.ReadFile(filepath.Join(outside, name)); err != nil || string(b) != content {
			t.Errorf("host file %s: %q %v", name, b, err)
		}
	}
}

// TestRedTeamSpecialFiles: a FIFO and a Unix socket the code makes in its
// workspace block no tool and are never written or read through; device
// nodes cannot be made there.
func TestRedTeamSpecialFiles(t *testing.T) {
	requireProduction(t)
	cs := connectStdio(t, testConfig)
	_, out := call(t, cs, map[string]any{"code": `import os, socket
os.mkfifo('fifo')
os.mkfifo('code_fifo.py')
socket.socket(socket.AF_UNIX).bind('sock')
try:
    os.mknod('dev', 0o20666, os.makedev(1, 1))
    made = 'made'
except OSError as e:
    made = e.strerror
made`})
	if !out.OK || out.Result == "made" {
		t.Fatalf("setup: %+v %v", out.Error, out.Result)
	}
	ctx := context.Background()
	tries := []struct {
		tool string
		args map[string]any
		ok   bool // the call succeeds; otherwise it fails, without blocking
	}{
		{"write_workspace_file", map[string]any{"path": "fifo", "content": "x"}, false},
		{"write_workspace_file", map[string]any{"path": "sock", "content": "x"}, false},
		{"read_workspace_file", map[string]any{"path": "sock"}, false},
		{"read_code_file", map[string]any{"path": "code_fifo.py"}, false},
		{"execute_code_file", map[string]any{"path": "code_fifo.py"}, false},
		{"append_to_code_file", map[string]any{"path": "code_fifo.py", "content": "x"}, false},
		{"execute_analysis", map[string]any{"analysis_type": "filter", "source": "fifo", "parameters": map[string]any{"conditions": []any{}}}, false},
		{"list_workspace_files", map[string]any{}, true},
		{"execute_code", map[string]any{"code": "print(1)"}, true}, // the file snapshot before and after
	}
	for _, try := range tries {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: try.tool, Arguments: try.args})
		cancel()
		switch {
		case err != nil:
			t.Errorf("%s %v: %v", try.tool, try.args, err)
		case res.IsError == try.ok:
			t.Errorf("%s %v: isError=%v: %s", try.tool, try.args, res.IsError, textOf(res))
		}
	}
	for _, uri := range []string{"file:///workspace/fifo", "file:///workspace/sock"} {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		if r, err := cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: uri}); err == nil || cctx.Err() != nil {
			t.Errorf("resources/read %s: %s %v", uri, toJSON(r), err)
		}
		cancel()
	}
	for _, p := range []string{"fifo", "code_fifo.py", "sock"} {
		if res, _ := callTool(t, cs, "delete_workspace_file", map[string]any{"path": p}); res.IsError {
			t.Errorf("delete %s: %s", p, textOf(res))
		}
	}
}

// TestRedTeamForgedResultOverMCP: the code writes its own result frame,
// nested as deep as the host's frame decoder takes. The SDK's check of the
// tool's output stops at 1000 levels, so the call failed with a protocol
// error; the host now turns so deep a result into its JSON text.
func TestRedTeamForgedResultOverMCP(t *testing.T) {
	requireProduction(t)
	cs := connectStdio(t, testConfig)
	cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": `import os, struct
from codecell import _rpc
d = b'{"type": "result", "ok": true, "error": null, "result": {"kind": "json", "value": ' + b'[' * 9990 + b']' * 9990 + b'}}'
os.write(_rpc._chan.wfd, struct.pack('>I', len(d)) + d)
os._exit(0)
`}})
	if err != nil {
		t.Fatalf("the deep result broke the call: %v", err)
	}
	if res.IsError || !strings.Contains(textOf(res)+toJSON(res.StructuredContent), "nests more than") {
		t.Errorf("isError=%v text %.300q", res.IsError, textOf(res))
	}
	if _, out := call(t, cs, map[string]any{"code": "print(1)"}); !out.OK || out.Stdout != "1\n" {
		t.Fatalf("the next execution: %+v", out)
	}
}

// TestRedTeamTokensOutOfReach: nothing the code can read inside the
// sandbox holds an HTTP bearer token of the server.
func TestRedTeamTokensOutOfReach(t *testing.T) {
	requireProduction(t)
	token := fmt.Sprintf("tok-%016x-%016x", rand.Uint64(), rand.Uint64())
	base := startHTTP(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "30s"},
		"http": {"tokens": {"`+token+`": "team-t"}}}`, nil)
	cs := connectWithToken(t, base, token)
	// The needle is half the token: the code's own memory (its context)
	// holds it, so /proc/*/mem is left out.
	_, out := call(t, cs, map[string]any{"timeout_seconds": 60, "context": map[string]any{"NEEDLE": token[:20]}, "code": `import os
found, read = [], 0
def scan(p):
    global read
    try:
        with open(p, 'rb') as f:
            data = f.read(1 << 18)
    except OSError:
        return
    read += 1
    if NEEDLE.encode() in data:
        found.append(p)
for root in ('/proc/1', '/proc/self', '/codecell', '/etc', '/tmp', '/dev/shm', '/workspace', '/run', '/var', '/home', '/root'):
    for dirpath, dirs, files in os.walk(root):
        if dirpath.startswith('/proc'):
            dirs[:] = [d for d in dirs if d not in ('task', 'map_files', 'fd', 'fdinfo', 'net', 'root', 'cwd')]
            files = [f for f in files if f not in ('mem', 'pagemap', 'kpagecount', 'kpageflags', 'clear_refs')]
        for f in files:
            scan(os.path.join(dirpath, f))
        if read > 5000:
            break
for f in ('/proc/1/cmdline', '/proc/1/environ', '/proc/self/environ', '/proc/self/cmdline'):
    scan(f)
{'found': found, 'read': read}`})
	if !out.OK {
		t.Fatalf("scan: %+v", out.Error)
	}
	v, _ := out.Result.(map[string]any)
	if n, _ := v["read"].(float64); n < 50 {
		t.Fatalf("the code read only %v files: the test proves nothing (%v)", v["read"], v)
	}
	if found, _ := v["found"].([]any); len(found) > 0 {
		t.Errorf("the token is readable in the sandbox at %v", found)
	}
}

// TestRedTeamMemoryAcrossProcesses: through the whole server, with
// sandbox.memory at 128 MiB, five processes of 64 MiB each cannot hold their
// memory at once where the host gives codecell cgroups: the execution fails
// with MemoryLimit, and the next one runs. It also reads another boot_id
// than the host's.
func TestRedTeamMemoryAcrossProcesses(t *testing.T) {
	requireProduction(t)
	cs := connectStdio(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "60s", "memory": "128MiB"}}`)
	t.Run("boot_id", func(t *testing.T) {
		host, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			t.Skipf("no boot_id on the host: %v", err)
		}
		_, out := call(t, cs, map[string]any{"code": "open('/proc/sys/kernel/random/boot_id').read()"})
		if !out.OK || out.Result == string(host) || out.Result == "" {
			t.Errorf("the sandbox's boot_id: %+v (the host's is %q)", out, host)
		}
	})
	t.Run("memory", func(t *testing.T) {
		if _, err := cgroup.Host(); err != nil {
			t.Skipf("memory is limited per process here: %v", err)
		}
		_, out := call(t, cs, map[string]any{"code": `import os
kids = []
for i in range(5):
    ping_r, ping_w = os.pipe()
    pong_r, pong_w = os.pipe()
    if os.fork() == 0:
        os.close(ping_w); os.close(pong_r)
        block = b"x" * (64 << 20)
        while os.read(ping_r, 1):
            os.write(pong_w, b"1")
        os._exit(0)
    os.close(ping_r); os.close(pong_w)
    kids.append((ping_w, pong_r))
held = 0
for ping_w, pong_r in kids:
    try:
        os.write(ping_w, b"?")
        held += os.read(pong_r, 1) == b"1"
    except OSError:
        pass
print("held", held, "of", len(kids))
`})
		if out.OK || out.Error == nil || out.Error.Type != "MemoryLimit" || !strings.Contains(out.Error.Message, "128 MiB") {
			t.Fatalf("five processes of 64 MiB under a 128 MiB limit: %+v", out)
		}
		if _, out := call(t, cs, map[string]any{"code": "print(1)"}); !out.OK || out.Stdout != "1\n" {
			t.Fatalf("the next execution: %+v", out)
		}
	})
}
