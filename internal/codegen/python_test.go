package codegen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/catalog"
)

// python is the interpreter the tests run the generated code with.
const python = "/usr/bin/python3"

// needPython skips the test when the host has no python.
func needPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s is not available (%v): the generated code cannot be run", python, err)
	}
}

// fakeRPC stands in for the sandbox's codecell._rpc: it records each call
// and answers with what it was asked, the tool "fail" raises ToolError, and
// the async calls of the tool "slow" take 0.3 s. Other host calls (request)
// are the test's to answer.
const fakeRPC = `import asyncio

calls = []


class ToolError(Exception):
    def __init__(self, message, server=None, tool=None):
        super().__init__(message)
        self.message = message
        self.server = server
        self.tool = tool


class ApprovalDenied(ToolError):
    pass


class Image:
    def __init__(self, data, mime_type):
        self.data = data
        self.mime_type = mime_type


def call(server, tool, arguments):
    calls.append([server, tool, arguments])
    if tool == "fail":
        raise ToolError("it failed", server, tool)
    return {"server": server, "tool": tool, "arguments": arguments}


async def acall(server, tool, arguments):
    calls.append([server, tool, arguments])
    await asyncio.sleep(0.3 if tool == "slow" else 0)
    return {"server": server, "tool": tool, "arguments": arguments}


def request(method, params):
    raise RuntimeError("no host here: a test replaces request to answer " + method)
`

// writeTree writes files under dir, with the fake codecell runtime.
func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	all := map[string][]byte{
		"codecell/__init__.py": nil,
		"codecell/_rpc.py":     []byte(fakeRPC),
	}
	for name, data := range files {
		all[name] = data
	}
	for name, data := range all {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runPython runs script with the tree in dir first on sys.path, in isolated
// mode, and returns its standard output.
func runPython(t *testing.T, dir, script string, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append(append([]string{"-I"}, flags...), "-c", script, dir)
	cmd := exec.CommandContext(ctx, python, args...)
	isolate(cmd)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return stdout.Bytes()
}

// callScript exercises the fixture's tree and prints the calls it made.
const callScript = `
import asyncio, inspect, json, sys, time
sys.path.insert(0, sys.argv[1])

def raises(exc, f):
    try:
        f()
    except exc:
        return
    raise AssertionError(f"{f} did not raise {exc.__name__}")

import servers
from codecell import _rpc

loaded = lambda: sorted(m for m in sys.modules if m.startswith("servers."))
assert loaded() == [], f"import servers loaded {loaded()}"
assert servers.ToolError is _rpc.ToolError and servers.Image is _rpc.Image
assert "everything" in dir(servers) and "weird" in servers.__all__
raises(AttributeError, lambda: servers.nope)
def import_nope():
    from servers import nope
raises(ImportError, import_nope)

from servers.everything import echo, fail, get_sum, get_sum_async, ping, slow_async
assert not any(m.startswith("servers.weird") for m in loaded()), loaded()
assert servers.everything.get_sum is get_sum

get_sum(a=1)
get_sum(a=1.5, b=2)
echo(message="hi", extra_field=3)
ping()
ping(x=1)
try:
    fail()
except servers.ToolError as e:
    assert (e.server, e.tool, e.message) == ("everything", "fail", "it failed"), e
else:
    raise AssertionError("fail() did not raise servers.ToolError")
raises(TypeError, lambda: get_sum(1))
raises(TypeError, lambda: get_sum())
raises(TypeError, lambda: get_sum(a=1, c=2))

from servers.weird import _rpc as rpc_tool, broken, fetch, fetch_async, search_items, search_items_async
search_items(query="q", from_="2024")
search_items(query="q", from_="2024", class_="b", my_arg_2=1, my_arg=None, _2x=[[1.5]], mode="fast", opts={"x": 1}, limit=5)
broken(anything=1, **{"weird-key": 2})
fetch(url="u1")
fetch_async(url="u2")
rpc_tool(x=1)
rpc_tool()
from servers.weird.fetch import fetch_async as fetch_variant
assert servers.weird.fetch is fetch and servers.weird.fetch_async is fetch_async
assert inspect.iscoroutinefunction(fetch_variant) and not inspect.iscoroutinefunction(fetch_async)

async def together():
    start = time.perf_counter()
    results = await asyncio.gather(
        slow_async(id=1), slow_async(id=2), slow_async(id=3),
        fetch_variant(url="u3"), search_items_async(query="a", from_="b"),
    )
    return time.perf_counter() - start, results

elapsed, results = asyncio.run(together())
assert elapsed < 0.6, f"three 0.3 s calls together took {elapsed:.2f} s"
assert [r["arguments"] for r in results[:3]] == [{"id": 1}, {"id": 2}, {"id": 3}], results

print(json.dumps({
    "calls": _rpc.calls,
    "doc": inspect.getdoc(search_items),
    "async_doc": inspect.getdoc(search_items_async),
}))
`

func TestPythonCalls(t *testing.T) {
	needPython(t)
	servers := fixture()
	files, err := Generate(servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	var got struct {
		Calls    []any  `json:"calls"`
		Doc      string `json:"doc"`
		AsyncDoc string `json:"async_doc"`
	}
	if err := json.Unmarshal(runPython(t, dir, callScript, "-B"), &got); err != nil {
		t.Fatal(err)
	}
	// Original names come back, omitted optionals stay out, defaults the
	// schema gives are sent.
	want := `[
		["everything", "get-sum", {"a": 1, "b": 0}],
		["everything", "get-sum", {"a": 1.5, "b": 2}],
		["everything", "echo", {"extra_field": 3, "message": "hi"}],
		["everything", "ping", {}],
		["everything", "ping", {"x": 1}],
		["everything", "fail", {}],
		["weird", "search-items", {"query": "q", "from": "2024", "class": "a", "limit": 10}],
		["weird", "search-items", {"query": "q", "from": "2024", "class": "b", "my-arg": 1, "my_arg": null, "2x": [[1.5]], "mode": "fast", "opts": {"x": 1}, "limit": 5}],
		["weird", "broken", {"anything": 1, "weird-key": 2}],
		["weird", "fetch", {"url": "u1"}],
		["weird", "fetch async", {"url": "u2"}],
		["weird", "_rpc", {"x": 1}],
		["weird", "_rpc", {}],
		["everything", "slow", {"id": 1}],
		["everything", "slow", {"id": 2}],
		["everything", "slow", {"id": 3}],
		["weird", "fetch", {"url": "u3"}],
		["weird", "search-items", {"query": "a", "from": "b", "class": "a", "limit": 10}]
	]`
	var wantCalls []any
	if err := json.Unmarshal([]byte(want), &wantCalls); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Calls, wantCalls) {
		g, _ := json.MarshalIndent(got.Calls, "", "  ")
		t.Errorf("calls made:\n%s\nwant:\n%s", g, want)
	}
	// The docstring reads back as the description, whatever it holds.
	var desc string
	for _, tool := range servers["weird"] {
		if tool.Ident == "search_items" {
			desc = tool.Description
		}
	}
	if wantDoc := paragraph(desc) + "\n\nArgs:\n    query: What to find\n"; !strings.HasPrefix(got.Doc, wantDoc) {
		t.Errorf("docstring of search_items:\n%q\nwant it to start with\n%q", got.Doc, wantDoc)
	}
	if want := "Async variant of search_items: same arguments, same result."; got.AsyncDoc != want {
		t.Errorf("docstring of search_items_async = %q, want %q", got.AsyncDoc, want)
	}
}

// bigServer returns n tools of a few parameters each, described as
// upstream servers typically describe them.
func bigServer(n int) []catalog.Tool {
	tools := make([]catalog.Tool, n)
	for i := range tools {
		name := fmt.Sprintf("tool-%03d", i)
		tools[i] = catalog.Tool{
			Server: "big", Name: name, Ident: fmt.Sprintf("tool_%03d", i),
			Description: "Does thing number " + fmt.Sprint(i) + ". " + strings.Repeat("It has a long description. ", 10),
			InputSchema: json.RawMessage(`{"type":"object","properties":{
				"path":{"type":"string","description":"The path of the file to read"},
				"mode":{"type":"string","enum":["text","binary","auto"],"default":"auto","description":"How to read it"},
				"limit":{"type":"integer","description":"At most this many bytes"},
				"tags":{"type":"array","items":{"type":"string"},"description":"Labels"},
				"options":{"type":"object","description":"Further options"},
				"dry-run":{"type":"boolean","default":false}
			},"required":["path"],"additionalProperties":false}`),
		}
	}
	return tools
}

const importScript = `
import json, sys, time
sys.path.insert(0, sys.argv[1])
import codecell._rpc  # the runtime's own cost is not the generated code's
start = time.perf_counter()
import servers
mid = time.perf_counter()
import servers.big
end = time.perf_counter()
print(json.dumps({"servers_ms": (mid - start) * 1e3, "big_ms": (end - mid) * 1e3, "exports": len(servers.big.__all__)}))
`

// TestImportTime imports a server of 100 tools: from source alone (the
// generated tree may be read-only, so no bytecode cache) and with a warm
// cache. It logs the times (about 50 ms cold on a quiet machine) and
// asserts none: a loaded CI machine is several times slower, and what a
// wall-clock bound there would test is the machine.
func TestImportTime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs python nine times")
	}
	needPython(t)
	files, err := Generate(map[string][]catalog.Tool{"big": bigServer(100)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	type timing struct {
		ServersMS float64 `json:"servers_ms"`
		BigMS     float64 `json:"big_ms"`
		Exports   int     `json:"exports"`
	}
	measure := func(flags ...string) timing {
		var best timing
		for i := 0; i < 3; i++ { // the best of three, to discount a busy host
			var tm timing
			if err := json.Unmarshal(runPython(t, dir, importScript, flags...), &tm); err != nil {
				t.Fatal(err)
			}
			if i == 0 || tm.BigMS < best.BigMS {
				best = tm
			}
		}
		return best
	}
	cold := measure("-B")
	measure() // writes the bytecode cache
	warm := measure()
	t.Logf("import servers: %.1f ms; import servers.big (100 tools): %.1f ms without bytecode cache, %.1f ms with it",
		cold.ServersMS, cold.BigMS, warm.BigMS)
	if cold.Exports != 200 || warm.Exports != 200 {
		t.Errorf("servers.big exports %d names (%d with the cache), want 200", cold.Exports, warm.Exports)
	}
}

// standInScript imports servers that were not connected when the package
// was generated. Its host answers server_ready for "slow-server" by
// publishing the package generated once it connected (the servers symlink
// moves, as the real host's publish does), refuses "broken" with the reason,
// and says "empty" is connected without publishing anything for it.
const standInScript = `
import json, os, sys
root = sys.argv[1]
sys.path.insert(0, root)
sys.path.insert(0, os.path.join(root, "gen"))

from codecell import _rpc
asked = []
def request(method, params):
    asked.append([method, params])
    assert method == "server_ready", method
    if params["server"] == "slow-server":
        tmp = os.path.join(root, "gen", ".servers-new")
        os.symlink(os.path.join("..", "v2", "servers"), tmp)
        os.replace(tmp, os.path.join(root, "gen", "servers"))
        return {"state": "connected"}
    if params["server"] == "broken":
        raise ImportError("server unavailable: broken failed (connect: EOF (stderr: Cannot find package 'zod'))")
    return {"state": "connected"}
_rpc.request = request

import servers
assert {"slow_server", "broken", "empty"} <= set(dir(servers)), dir(servers)

from servers.slow_server import echo, echo_async
assert echo(message="hi")["arguments"] == {"message": "hi"}
assert servers.slow_server.echo is echo
assert servers.slow_server.__doc__.startswith("slow_server: 1 tool."), servers.slow_server.__doc__
from servers.slow_server import echo as again  # imported: the host is not asked twice
assert again is echo

errors = {}
for name in ["broken", "empty"]:
    try:
        __import__("servers." + name)
    except ImportError as e:
        errors[name] = [type(e).__name__, str(e), e.name]
    else:
        raise AssertionError("servers.%s imported" % name)
    assert "servers." + name not in sys.modules
print(json.dumps({"asked": asked, "errors": errors, "calls": _rpc.calls}))
`

// TestPythonStandIn: importing a server that was not connected when the
// package was generated waits for it through the host, then gives its
// tools; when the server does not come, ImportError says why.
func TestPythonStandIn(t *testing.T) {
	needPython(t)
	tool := catalog.Tool{Server: "slow-server", Name: "echo", Ident: "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)}
	before, err := Generate(nil, map[string]string{"slow_server": "slow-server", "broken": "broken", "empty": "empty"})
	if err != nil {
		t.Fatal(err)
	}
	after, err := Generate(map[string][]catalog.Tool{"slow_server": {tool}}, map[string]string{"broken": "broken", "empty": "empty"})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for name, data := range before {
		files["v1/"+name] = data
	}
	for name, data := range after {
		files["v2/"+name] = data
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	if err := os.MkdirAll(filepath.Join(dir, "gen"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "v1", "servers"), filepath.Join(dir, "gen", "servers")); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Asked  [][]any             `json:"asked"`
		Errors map[string][]string `json:"errors"`
		Calls  [][]any             `json:"calls"`
	}
	out := runPython(t, dir, standInScript, "-B")
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	asked, _ := json.Marshal(got.Asked)
	if want := `[["server_ready",{"server":"slow-server"}],["server_ready",{"server":"broken"}],["server_ready",{"server":"empty"}]]`; string(asked) != want {
		t.Errorf("host calls %s, want %s", asked, want)
	}
	if len(got.Calls) != 1 {
		t.Errorf("tool calls %v, want the one echo", got.Calls)
	}
	for name, want := range map[string]string{
		"broken": "cannot import servers.broken: server unavailable: broken failed (connect: EOF (stderr: Cannot find package 'zod'))",
		"empty":  "cannot import servers.empty: the server 'empty' is connected but has no tools",
	} {
		if e := got.Errors[name]; len(e) != 3 || e[0] != "ImportError" || e[1] != want || e[2] != "servers."+name {
			t.Errorf("import servers.%s: %q, want ImportError %q", name, e, want)
		}
	}
}
