package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/server"
)

// npmServer returns the entry point of an npm MCP server installed by
// `make npm-deps` into testdata/npm, or skips.
func npmServer(t testing.TB, pkg string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "npm", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed (make npm-deps installs it): %v", pkg, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return p
}

// fakeUpstream builds the in-repo fake upstream server once.
func fakeUpstream(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(binary), "fakeupstream")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if out, err := exec.Command("go", "build", "-o", bin, "../../internal/upstream/fakeupstream").CombinedOutput(); err != nil {
		t.Fatalf("build fakeupstream: %v\n%s", err, out)
	}
	return bin
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEverything runs server-everything in its streamableHttp or sse mode
// and returns its URL.
func startEverything(t testing.TB, entry, mode string) string {
	port := freePort(t)
	cmd := exec.Command("node", entry, mode)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	// Gone with the test even when it dies without its clean-ups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening") || strings.Contains(sc.Text(), "running on port") {
				close(ready)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("server-everything %s did not start", mode)
	}
	if mode == "sse" {
		return fmt.Sprintf("http://127.0.0.1:%d/sse", port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

type upstreamSetup struct {
	cs      *mcp.ClientSession
	files   string // the filesystem server's allowed directory
	memFile string // the memory server's store
}

func setupUpstreams(t *testing.T, maxToolCalls int) upstreamSetup {
	t.Helper()
	requireProduction(t)
	everything := npmServer(t, "server-everything")
	fsEntry := npmServer(t, "server-filesystem")
	memEntry := npmServer(t, "server-memory")
	files := t.TempDir()
	memFile := filepath.Join(t.TempDir(), "memory.jsonl")
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"everything":     map[string]any{"command": "node", "args": []string{everything, "stdio"}},
			"everythinghttp": map[string]any{"url": startEverything(t, everything, "streamableHttp"), "transport": "streamable-http"},
			"everythingsse":  map[string]any{"url": startEverything(t, everything, "sse"), "transport": "sse"},
			"filesystem":     map[string]any{"command": "node", "args": []string{fsEntry, files}},
			"memory":         map[string]any{"command": "node", "args": []string{memEntry}, "env": map[string]string{"MEMORY_FILE_PATH": memFile}},
			"fake":           map[string]any{"command": fakeUpstream(t)},
			"fake-2":         map[string]any{"command": fakeUpstream(t)},
			"broken":         map[string]any{"command": "/nonexistent/mcp-server"},
		},
		"sandbox": map[string]any{"isolation": "production", "python": "/usr/bin/python3", "pool": 2, "timeout": "30s", "maxToolCalls": maxToolCalls},
		"policy":  map[string]any{"allow": []string{"*"}, "deny": []string{"everything.get-env"}},
	}
	raw, _ := json.Marshal(cfg)
	cs := connectStdio(t, string(raw))
	// Wait until every server that can connect has.
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_tool_categories", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		text := textOf(res)
		if !strings.Contains(text, "starting") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstreams still starting after a minute:\n%s", text)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return upstreamSetup{cs: cs, files: files, memFile: memFile}
}

func TestUpstreamToolsFromCode(t *testing.T) {
	u := setupUpstreams(t, 1000)
	cs := u.cs

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_tool_categories", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var cats struct {
		Servers []struct {
			Name         string `json:"name"`
			State        string `json:"state"`
			Error        string `json:"error"`
			Tools        int    `json:"tool_count"`
			Instructions string `json:"instructions"`
		} `json:"servers"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &cats)
	states := map[string]string{}
	for _, s := range cats.Servers {
		states[s.Name] = s.State
		if s.Name == "broken" && !strings.Contains(s.Error, "/nonexistent/mcp-server") {
			t.Errorf("broken server's error does not say what failed: %q", s.Error)
		}
		// The everything server's instructions start with a Markdown title;
		// the line shown is the first line of text.
		if s.Name == "everything" && (s.Instructions == "" || strings.HasPrefix(s.Instructions, "#")) {
			t.Errorf("everything's instructions line is %q", s.Instructions)
		}
	}
	for name, want := range map[string]string{"everything": "connected", "everythinghttp": "connected", "everythingsse": "connected", "filesystem": "connected", "memory": "connected", "fake": "connected", "broken": "failed"} {
		if states[name] != want {
			t.Errorf("server %s is %q, want %q (%s)", name, states[name], want, raw)
		}
	}

	tests := []struct {
		name   string
		code   string
		result string // JSON of the expected result
		ok     bool
	}{
		{"hyphenated name, text result", "from servers.everything import get_sum\nget_sum(a=2, b=3)", "", true},
		{"structured result", "from servers.everything import get_structured_content\nr = get_structured_content(location='New York')\nresult = sorted(r)", "", true},
		{"JSON text parsed", "from servers.fake import json_text\njson_text()", `{"items":[1,2,3]}`, true},
		{"structured from a Go server", "from servers.fake import add_numbers\nadd_numbers(a=1.5, b=2)", `{"sum":3.5}`, true},
		{"image", "import servers\nfrom servers.everything import get_tiny_image\nr = get_tiny_image()\nitems = r if isinstance(r, list) else [r]\nimgs = [i for i in items if isinstance(i, servers.Image)]\nresult = [imgs[0].mime_type, imgs[0].data[:4] == b'\\x89PNG']", `["image/png",true]`, true},
		{"tool error", "import servers\nfrom servers.fake import fail\ntry:\n    fail(text='boom')\nexcept servers.ToolError as e:\n    result = [e.server, e.tool, 'boom' in e.message]", `["fake","fail",true]`, true},
		{"over streamable HTTP", "from servers.everythinghttp import echo\necho(message='over http')", `"Echo: over http"`, true},
		{"hyphenated server name", "from servers.fake_2 import echo\necho(text='two')", `"two"`, true},
		{"over legacy SSE", "from servers.everythingsse import echo\necho(message='over sse')", `"Echo: over sse"`, true},
		{"filesystem write and read", fmt.Sprintf("from servers.filesystem import write_file, read_text_file\nwrite_file(path=%q, content='hello fs')\nread_text_file(path=%q)", filepath.Join(u.files, "a.txt"), filepath.Join(u.files, "a.txt")), "", true},
		{"memory graph", "from servers.memory import create_entities, read_graph\ncreate_entities(entities=[{'name': 'Ada', 'entityType': 'person', 'observations': ['wrote code']}])\n[e['name'] for e in read_graph()['entities']]", `["Ada"]`, true},
		{"readable API tree", "import os\nfrom servers.fake import echo\nresult = ['echo.py' in os.listdir('/codecell/gen/servers/fake'), 'fake.add_numbers' in open('/codecell/gen/servers/INDEX.md').read(), echo(text='x')]", `[true,true,"x"]`, true},
		{"search from code", "from codecell import search_tools\n[t['name'] for t in search_tools('add two numbers', limit=3)]", "", true},
		{"codecell's own tools from code", "from codecell import write_workspace_file, read_workspace_file, workspace\nwrite_workspace_file(path='own/a.txt', content='hi')\n[read_workspace_file(path='own/a.txt')['content'], workspace.list_workspace_files(path='own')['files'][0]['path']]", `["hi","own/a.txt"]`, true},
		{"analysis from code", "from codecell import analysis\nanalysis.execute_analysis(analysis_type='aggregate', data=[{'a': 1}, {'a': 2}], parameters={'metrics': [{'field': 'a', 'op': 'sum'}]})['result']", `[{"sum_a":3}]`, true},
		{"a bad argument from code", "from codecell import read_workspace_file\ntry:\n    read_workspace_file(path='/etc/passwd')\nexcept ValueError as e:\n    result = 'path' in str(e)", `true`, true},
		{"search from code finds codecell's own", "from codecell import search_tools\n[t['name'] for t in search_tools('save a reusable skill', limit=3)][:1]", `["codecell.save_skill"]`, true},
		{"search from code that finds nothing says so", "from codecell import search_tools\nr = search_tools('qqqq zzzzv')\n[len(r), 'list_tool_categories' in r.note]", `[0,true]`, true},
		{"denied tool", "from servers.everything import get_env\ntry:\n    get_env()\nexcept PermissionError as e:\n    result = 'denied: ' + str(e)", `"denied: policy denies calling everything.get_env"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out := call(t, cs, map[string]any{"code": tt.code})
			if out.OK != tt.ok {
				t.Fatalf("ok=%v: %+v", out.OK, out.Error)
			}
			got, _ := json.Marshal(out.Result)
			if tt.result != "" && string(got) != tt.result {
				t.Fatalf("result %s, want %s", got, tt.result)
			}
			if toolCalls(out) == 0 && !strings.Contains(tt.code, "from codecell import") {
				t.Errorf("no tool calls recorded")
			}
			if out.ContextSavings != nil {
				t.Logf("result %s; %d tool calls; %d result bytes", got, toolCalls(out), out.ContextSavings.ToolResultBytes)
			}
		})
	}
	t.Run("file written through the upstream is on disk", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(u.files, "a.txt"))
		if err != nil || string(b) != "hello fs" {
			t.Fatalf("%q %v", b, err)
		}
	})
	t.Run("memory stored by the upstream", func(t *testing.T) {
		b, err := os.ReadFile(u.memFile)
		if err != nil || !strings.Contains(string(b), "Ada") {
			t.Fatalf("%q %v", b, err)
		}
	})
	t.Run("concurrent calls", func(t *testing.T) {
		// Ten calls to a tool that sleeps half a second each, made together:
		// they must overlap. Sequential calls would take five seconds; the
		// bound leaves room for a slow machine and still fails on that.
		code := `
import asyncio, time
from concurrent.futures import ThreadPoolExecutor
from servers.fake import sleep, sleep_async
t0 = time.monotonic()
with ThreadPoolExecutor(10) as pool:
    list(pool.map(lambda _: sleep(seconds=0.5), range(10)))
threads = time.monotonic() - t0
async def main():
    await asyncio.gather(*[sleep_async(seconds=0.5) for _ in range(10)])
t0 = time.monotonic()
asyncio.run(main())
result = [threads, time.monotonic() - t0]
`
		_, out := call(t, cs, map[string]any{"code": code})
		if !out.OK {
			t.Fatalf("%+v", out.Error)
		}
		times, _ := out.Result.([]any)
		if len(times) != 2 || toolCalls(out) != 20 {
			t.Fatalf("result %v, %d calls", out.Result, toolCalls(out))
		}
		for i, how := range []string{"threads", "asyncio"} {
			took := times[i].(float64)
			t.Logf("10 concurrent 0.5 s calls from %s took %.2f s", how, took)
			if took > 2.5 {
				t.Errorf("%s: 10 concurrent 0.5 s calls took %.2f s: they did not overlap", how, took)
			}
		}
	})
	t.Run("upstream crash mid-call", func(t *testing.T) {
		code := "import servers\nfrom servers.fake import crash\ntry:\n    crash()\nexcept servers.ToolError as e:\n    result = str(e)"
		_, out := call(t, cs, map[string]any{"code": code})
		msg, _ := out.Result.(string)
		if !out.OK || !strings.Contains(msg, "went away") {
			t.Fatalf("crash: %+v %v", out.Error, out.Result)
		}
		_, out = call(t, cs, map[string]any{"code": "from servers.fake import echo\necho(text='again')"})
		if !out.OK || out.Result != "again" {
			t.Fatalf("after the crash: %+v %v", out.Error, out.Result)
		}
	})
	t.Run("definition text names nested fields", func(t *testing.T) {
		// memory.create_entities takes a list of objects; its text must say
		// which fields they have, not only list[dict[str, Any]].
		_, text := callToolInto(t, cs, "get_tool_definition", map[string]any{"name": "memory.create_entities"}, nil)
		for _, want := range []string{"entities: list[dict[str, Any]]", "Each item has the fields:", "name: str, required", "entityType: str, required", "observations: list[str], required"} {
			if !strings.Contains(text, want) {
				t.Errorf("get_tool_definition text lacks %q:\n%s", want, text)
			}
		}
	})
	t.Run("uncaught tool error", func(t *testing.T) {
		// The traceback shows the user's lines and servers.ToolError, not
		// codecell's runtime or the generated wrapper.
		res, out := call(t, cs, map[string]any{"code": "from servers.fake import fail\n\ndef step():\n    return fail(text='boom')\n\nstep()"})
		if out.OK || out.Error == nil || out.Error.Type != "ToolError" {
			t.Fatalf("%+v", out.Error)
		}
		tb := out.Error.Traceback
		for _, want := range []string{"line 6, in <module>\n    step()\n", "line 4, in step\n    return fail(text='boom')\n", "servers.ToolError: fake.fail: "} {
			if !strings.Contains(tb, want) {
				t.Errorf("traceback lacks %q:\n%s", want, tb)
			}
		}
		for _, bad := range []string{"_rpc", "/codecell/gen/", "codecell_runner"} {
			if strings.Contains(tb, bad) {
				t.Errorf("traceback shows %q:\n%s", bad, tb)
			}
		}
		if text := textOf(res); !strings.Contains(text, "servers.ToolError: fake.fail: ") {
			t.Errorf("text rendering:\n%s", text)
		}
	})
	t.Run("hostile channel", func(t *testing.T) {
		for name, code := range map[string]string{
			"huge frame":    "import os\nfrom codecell import _rpc\nos.write(_rpc._chan.wfd, b'\\x7f\\xff\\xff\\xff' + b'x' * 100)",
			"garbage frame": "import os\nfrom codecell import _rpc\nos.write(_rpc._chan.wfd, b'\\x00\\x00\\x00\\x05hello')",
			"unknown type":  "from codecell import _rpc\n_rpc._chan.send({'type': 'nonsense'})",
			"call flood":    "from codecell import _rpc\nfor i in range(200000):\n    _rpc._chan.send({'type': 'call', 'id': i, 'method': 'nope', 'params': {}})",
		} {
			t.Run(name, func(t *testing.T) {
				_, out := call(t, cs, map[string]any{"code": code, "timeout_seconds": 10})
				if out.OK || out.Error == nil {
					t.Fatalf("a broken channel did not fail the execution: %+v", out)
				}
				t.Logf("%s: %s", out.Error.Type, out.Error.Message)
				if _, next := call(t, cs, map[string]any{"code": "print(1)"}); !next.OK || next.Stdout != "1\n" {
					t.Fatalf("the next execution: %+v", next)
				}
			})
		}
	})
}

func TestToolCallLimit(t *testing.T) {
	u := setupUpstreams(t, 3)
	_, out := call(t, u.cs, map[string]any{"code": "from servers.fake import echo\nfor i in range(10):\n    echo(text=str(i))"})
	if out.OK || out.Error == nil || out.Error.Type != "ToolCallLimit" {
		t.Fatalf("want ToolCallLimit, got %+v", out.Error)
	}
	if toolCalls(out) != 3 {
		t.Errorf("%d calls recorded, want the 3 allowed", toolCalls(out))
	}
}

// TestToolsListWithoutUpstreams: an empty list says that none are
// configured, and which config file was read.
func TestToolsListWithoutUpstreams(t *testing.T) {
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "development", "python": "/usr/bin/python3"}}`)
	out, code := runCLI(t, "tools", "list", "--config", cfgPath, "--data-dir", dataDir)
	abs, _ := filepath.Abs(cfgPath)
	if code != 0 || !strings.Contains(out, "no upstream MCP servers are configured") || !strings.Contains(out, "config: "+abs+"\n") {
		t.Fatalf("tools list exit %d:\n%s", code, out)
	}
}

func TestToolsCommandAndDoctor(t *testing.T) {
	requireProduction(t)
	// "mute" never answers: tools and doctor give up on it after its own
	// startupTimeout, as serve does.
	cfg := fmt.Sprintf(`{"mcpServers": {"fake": {"command": %q}, "broken": {"command": "/nonexistent/mcp-server"},
		"mute": {"command": %q, "args": ["-wait-for", "/nonexistent/never"], "startupTimeout": "1s"}},
		"sandbox": {"isolation": "production", "python": "/usr/bin/python3"}}`, fakeUpstream(t), fakeUpstream(t))
	cfgPath, dataDir := testDirs(t, cfg)
	flags := []string{"--config", cfgPath, "--data-dir", dataDir}

	out, code := runCLI(t, append([]string{"tools", "list"}, flags...)...)
	if code != 0 || !strings.Contains(out, "fake.add_numbers") || !strings.Contains(out, "broken (failed") ||
		!strings.Contains(out, "mute (failed, 0 tools): connect: no answer within its startupTimeout of 1s") ||
		!strings.Contains(out, "config: ") || strings.Contains(out, "no upstream") {
		t.Fatalf("tools list exit %d:\n%s", code, out)
	}
	out, code = runCLI(t, append([]string{"tools", "search", "add two numbers"}, flags...)...)
	if code != 0 || !regexp.MustCompile(`(?m)\A(.*\n)*?fake\.`).MatchString(out) || !strings.Contains(out, "fake.add_numbers\n    add_numbers(*, a: float, b: float)") || strings.Index(out, "fake.add_numbers") > strings.Index(out, "fake.add_tool") {
		t.Fatalf("tools search exit %d:\n%s", code, out)
	}
	out, code = runCLI(t, append([]string{"tools", "show", "fake.add_numbers"}, flags...)...)
	if code != 0 || !strings.Contains(out, "def add_numbers(") || !strings.Contains(out, "add-numbers") {
		t.Fatalf("tools show exit %d:\n%s", code, out)
	}
	out, code = runCLI(t, append([]string{"tools", "show", "fake.nope"}, flags...)...)
	if code == 0 || !strings.Contains(out, "no tool is named") {
		t.Fatalf("tools show of an unknown tool exit %d:\n%s", code, out)
	}
	out, code = runCLI(t, append([]string{"doctor"}, flags...)...)
	if code != 0 || !regexp.MustCompile(`upstream fake\s+connected, stdio, 9 tools`).MatchString(out) ||
		!regexp.MustCompile(`upstream broken\s+failed, stdio, 0 tools: .*nonexistent`).MatchString(out) ||
		!regexp.MustCompile(`upstream mute\s+failed, stdio, 0 tools: connect: no answer within its startupTimeout of 1s`).MatchString(out) {
		t.Fatalf("doctor exit %d:\n%s", code, out)
	}
}

func TestDiscoveryTools(t *testing.T) {
	requireProduction(t)
	cfg := fmt.Sprintf(`{"mcpServers": {"fake": {"command": %q}}, "sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1}}`, fakeUpstream(t))
	cs := connectStdio(t, cfg)
	// The upstream connects in the background: wait for its tools.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"server": "fake", "limit": 1}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake upstream did not connect: %s", textOf(res))
		}
	}
	search := func(args map[string]any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		raw, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(raw, &out)
		return res, out
	}
	first := func(out map[string]any) map[string]any {
		tools, _ := out["tools"].([]any)
		if len(tools) == 0 {
			t.Fatalf("no tools in %v", out)
		}
		return tools[0].(map[string]any)
	}
	_, out := search(map[string]any{"query": "add two numbers", "detail_level": "name_only"})
	if e := first(out); e["name"] != "fake.add_numbers" || len(e) != 1 {
		t.Fatalf("name_only: %v", e)
	}
	_, out = search(map[string]any{"query": "add two numbers"})
	if e := first(out); e["signature"] != "add_numbers(*, a: float, b: float) -> Any" || e["summary"] != "Add two numbers; structured result." || e["source"] != nil {
		t.Fatalf("summary: %v", e)
	}
	_, out = search(map[string]any{"query": "add two numbers", "detail_level": "full"})
	if e := first(out); e["original_name"] != "add-numbers" || e["input_schema"] == nil || !strings.Contains(e["source"].(string), "def add_numbers(") {
		t.Fatalf("full: %v", e)
	}
	_, out = search(map[string]any{"query": "", "server": "fake", "limit": 2, "offset": 2})
	if out["total"].(float64) != 9 || len(out["tools"].([]any)) != 2 {
		t.Fatalf("paged listing: %v", out)
	}
	for _, bad := range []map[string]any{{"query": "x", "detail_level": "everything"}, {"query": "x", "limit": 1000}, {"query": "x", "server": "nope"}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: bad})
		if err != nil || !res.IsError {
			t.Errorf("%v: want a tool error, got %v %v", bad, err, textOf(res))
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_tool_definition", Arguments: map[string]any{"name": "fake.add-numbers"}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "def add_numbers(") {
		t.Fatalf("get_tool_definition by original name: %v %v", err, textOf(res))
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_tool_definition", Arguments: map[string]any{"name": "fake.nope"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "name") {
		t.Fatalf("unknown tool: %v %v", err, textOf(res))
	}
}

// toolCalls is how many tool calls an execution made: the answer leaves
// tool_calls out when there were none.
func toolCalls(out server.ExecuteCodeOutput) int {
	if out.ToolCalls == nil {
		return 0
	}
	return out.ToolCalls.Count
}
