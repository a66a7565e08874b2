package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/cgroup"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/server"
)

// binary is the codecell binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The fast lane (make check): no binary, so the tests that run it
		// skip (needBinary).
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "codecell-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "codecell")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build codecell:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needBinary skips a test that runs the built binary in the fast lane
// (go test -short, make check), where TestMain builds none.
func needBinary(t testing.TB) {
	t.Helper()
	if binary == "" {
		t.Skip("-short (make check): the binary is not built; make test runs this")
	}
}

// requireProduction skips when bubblewrap cannot run here; make test installs
// it, so in CI this always runs.
func requireProduction(t testing.TB) {
	t.Helper()
	needBinary(t)
	if err := sandbox.Check(context.Background(), sandbox.Production, "/usr/bin/python3"); err != nil {
		t.Skipf("production isolation unavailable: %v", err)
	}
}

// unmountBelow detaches every mount beneath dir (workspace images).
func unmountBelow(dir string) {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(strings.ReplaceAll(f[4], `\040`, " "), dir+"/") {
			syscall.Unmount(strings.ReplaceAll(f[4], `\040`, " "), syscall.MNT_DETACH)
		}
	}
}

// testDirs makes a config file and a data dir reachable by the sandbox user.
// A config that names no toolsets gets every one: these tests call every
// tool, and the lean default has tests of its own (lean_test.go).
func testDirs(t testing.TB, cfg string) (cfgPath, dataDir string) {
	t.Helper()
	needBinary(t)
	var m map[string]any
	if json.Unmarshal([]byte(cfg), &m) == nil && m != nil && m["toolsets"] == nil {
		m["toolsets"] = []string{"all"}
		raw, _ := json.Marshal(m)
		cfg = string(raw)
	}
	root := t.TempDir()
	// Before the directory goes: a server killed (kill -9) leaves its
	// workspace images mounted, for the next server on the data dir.
	t.Cleanup(func() { unmountBelow(root) })
	os.Chmod(filepath.Dir(root), 0o755)
	os.Chmod(root, 0o755)
	cfgPath = filepath.Join(root, "codecell.json")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir = filepath.Join(root, "data")
	return cfgPath, dataDir
}

const testConfig = `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 2, "timeout": "20s"}}`

// connectStdio starts codecell serve over stdio on cfg, with the extra
// arguments, and connects to it until the test ends.
func connectStdio(t testing.TB, cfg string, extra ...string) *mcp.ClientSession {
	t.Helper()
	cfgPath, dataDir := testDirs(t, cfg)
	cs := serveStdio(t, cfgPath, dataDir, nil, extra...)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// serveStdio starts codecell serve over stdio on a config file and data dir
// testDirs made, with the extra arguments, and connects a client with opts
// (nil for none). The caller closes the session, which ends the process, so
// that a test can start the server again on the same data dir.
func serveStdio(t testing.TB, cfgPath, dataDir string, opts *mcp.ClientOptions, extra ...string) *mcp.ClientSession {
	t.Helper()
	needBinary(t)
	cmd := exec.Command(binary, append([]string{"serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "warn"}, extra...)...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// servingAddr finds the address in codecell serve --http's log line that
// reports it, in the text or the JSON log format.
var servingAddr = regexp.MustCompile(`serving MCP over HTTP.*\baddr"?[=:]"?((?:127\.0\.0\.1|\[::\]):\d+)`)

// startHTTP starts codecell serve --http on a free loopback port, with the
// extra arguments, and returns its base URL. onLine, when not nil, gets each
// line the process logs, in order, from a goroutine of its own; the line
// that reports the address comes before startHTTP returns.
func startHTTP(t testing.TB, cfg string, onLine func(line string), extra ...string) string {
	t.Helper()
	cfgPath, dataDir := testDirs(t, cfg)
	base, _ := serveHTTPOn(t, cfgPath, dataDir, onLine, extra...)
	return base
}

// serveHTTPOn starts codecell serve --http on a config file and data dir
// testDirs made and returns its base URL and process, which is interrupted
// when the test ends if it still runs.
func serveHTTPOn(t testing.TB, cfgPath, dataDir string, onLine func(line string), extra ...string) (string, *exec.Cmd) {
	t.Helper()
	needBinary(t)
	cmd := exec.Command(binary, append([]string{"serve", "--http", "127.0.0.1:0", "--config", cfgPath, "--data-dir", dataDir}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	var mu sync.Mutex
	var early []string // the lines before the address, for the failure message
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		reported := false
		for lines.Scan() {
			line := lines.Text()
			if onLine != nil {
				onLine(line)
			}
			if reported {
				continue
			}
			if m := servingAddr.FindStringSubmatch(line); m != nil {
				found <- m[1]
				reported = true
				continue
			}
			mu.Lock()
			early = append(early, line)
			mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-found:
		// A server on every interface is reached through loopback.
		return "http://" + strings.Replace(a, "[::]:", "127.0.0.1:", 1), cmd
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("codecell serve --http did not report its address; log:\n%s", strings.Join(early, "\n"))
	}
	return "", cmd
}

// TestServeSaysWhereToGo: serve --http logs the MCP endpoint's and the
// dashboard's URLs (make run shows that line).
func TestServeSaysWhereToGo(t *testing.T) {
	lines := make(chan string, 100)
	base := startHTTP(t, `{"sandbox": {"isolation": "development", "python": "/usr/bin/python3", "pool": 1}}`, func(line string) {
		select {
		case lines <- line:
		default:
		}
	})
	for {
		select {
		case line := <-lines:
			if !strings.Contains(line, "serving MCP over HTTP") {
				continue
			}
			for _, want := range []string{"mcp=" + base + "/mcp", "dashboard=" + base + "/"} {
				if !strings.Contains(line, want) {
					t.Errorf("the serving line lacks %q: %s", want, line)
				}
			}
			return
		case <-time.After(30 * time.Second):
			t.Fatal("no serving line")
		}
	}
}

// TestNonLoopbackWithTokens: with http.tokens a non-loopback address
// starts (without them it is refused: TestRefusesToStart), and still asks
// every route but /healthz for a token.
func TestNonLoopbackWithTokens(t *testing.T) {
	requireProduction(t)
	base := startHTTP(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1},
		"http": {"tokens": {"token-nonloopback-0123456789": "team"}}}`, nil, "--http", "0.0.0.0:0")
	for path, want := range map[string]int{"/healthz": 200, "/mcp": 401, "/metrics": 401, "/api/v1/executions": 401} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without a token: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// legacyProtocol pins a Go SDK client to 2025-11-25, the last revision
// with MCP sessions (Mcp-Session-Id); without it the client speaks
// 2026-07-28, statelessly.
var legacyProtocol = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

func connectHTTP(t testing.TB, cfg string) *mcp.ClientSession {
	t.Helper()
	base := startHTTP(t, cfg, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	listTools(t, cs)
	return cs
}

// listTools lists the tools, as a host does before its model calls one. A
// 2026-07-28 client learns from the list which arguments it must mirror
// into headers (session_id, as Mcp-Param-Session-Id); without them the
// server refuses a call with a session_id (HeaderMismatch), as the revision
// asks.
func listTools(t testing.TB, cs *mcp.ClientSession) {
	t.Helper()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// callToolInto calls a tool, failing on a protocol error, decodes its
// structured result into out when out is not nil, and returns the result
// and its text.
func callToolInto(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any, out any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if out != nil && res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
	return res, textOf(res)
}

func call(t testing.TB, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, server.ExecuteCodeOutput) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: args})
	if err != nil {
		t.Fatalf("execute_code: protocol error %v", err)
	}
	var out server.ExecuteCodeOutput
	if res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
	}
	return res, out
}

func TestExecuteCodeOverTransports(t *testing.T) {
	requireProduction(t)
	transports := map[string]func(testing.TB, string) *mcp.ClientSession{
		"stdio": func(t testing.TB, cfg string) *mcp.ClientSession { return connectStdio(t, cfg) },
		"http":  connectHTTP,
	}
	for name, connect := range transports {
		t.Run(name, func(t *testing.T) {
			cs := connect(t, testConfig)
			tests := []struct {
				name     string
				args     map[string]any
				ok       bool
				stdout   string
				stderr   string
				result   string // JSON
				errType  string
				inTrace  string
				textHave string
			}{
				{name: "stdout", args: map[string]any{"code": "print('hello')"}, ok: true, stdout: "hello\n", textHave: "hello"},
				{name: "stderr", args: map[string]any{"code": "import sys; print('warn', file=sys.stderr)"}, ok: true, stderr: "warn\n"},
				{name: "last expression", args: map[string]any{"code": "a = 6\na * 7"}, ok: true, result: "42"},
				{name: "result variable", args: map[string]any{"code": "result = {'x': [1, 'two']}\n0"}, ok: true, result: `{"x":[1,"two"]}`},
				{name: "context", args: map[string]any{"code": "f'{name}:{sum(nums)}'", "context": map[string]any{"name": "n", "nums": []int{1, 2, 3}}}, ok: true, result: `"n:6"`},
				{name: "exception", args: map[string]any{"code": "def g(x):\n    return 1 / x\ng(0)"}, errType: "ZeroDivisionError", inTrace: "return 1 / x", textHave: "ZeroDivisionError"},
				{name: "timeout", args: map[string]any{"code": "while True: pass", "timeout_seconds": 1}, errType: "Timeout"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					res, out := call(t, cs, tt.args)
					if res.IsError == tt.ok || out.OK != tt.ok {
						t.Fatalf("isError=%v ok=%v, want ok=%v: %+v", res.IsError, out.OK, tt.ok, out)
					}
					if out.Stdout != tt.stdout || out.Stderr != tt.stderr {
						t.Errorf("stdout %q stderr %q, want %q %q", out.Stdout, out.Stderr, tt.stdout, tt.stderr)
					}
					if tt.result != "" {
						got, _ := json.Marshal(out.Result)
						if string(got) != tt.result {
							t.Errorf("result %s, want %s", got, tt.result)
						}
					}
					if tt.errType != "" && (out.Error == nil || out.Error.Type != tt.errType) {
						t.Errorf("error %+v, want type %s", out.Error, tt.errType)
					}
					if tt.inTrace != "" && !strings.Contains(out.Error.Traceback, tt.inTrace) {
						t.Errorf("traceback %q lacks %q", out.Error.Traceback, tt.inTrace)
					}
					if out.Isolation != "production" {
						t.Errorf("isolation %q", out.Isolation)
					}
					if tt.textHave != "" && !strings.Contains(textOf(res), tt.textHave) {
						t.Errorf("text rendering %q lacks %q", textOf(res), tt.textHave)
					}
				})
			}
		})
	}
}

func TestBadArguments(t *testing.T) {
	requireProduction(t)
	cs := connectStdio(t, testConfig)
	tests := []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"empty code", map[string]any{"code": ""}, "code"},
		{"code too large", map[string]any{"code": strings.Repeat("#", 1<<20+1)}, "code"},
		{"timeout too small", map[string]any{"code": "1", "timeout_seconds": 0.5}, "timeout_seconds"},
		{"timeout too large", map[string]any{"code": "1", "timeout_seconds": 100000}, "timeout_seconds"},
		{"language", map[string]any{"code": "1", "language": "ruby"}, "language"},
		{"context key", map[string]any{"code": "1", "context": map[string]any{"not an identifier": 1}}, "context"},
		{"wrong type", map[string]any{"code": 12}, "code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: tt.args})
			if err != nil {
				t.Fatalf("protocol error instead of a tool error: %v", err)
			}
			if !res.IsError || !strings.Contains(textOf(res), tt.field) {
				t.Fatalf("isError=%v text %q, want a tool error naming %s", res.IsError, textOf(res), tt.field)
			}
		})
	}
	// The server is still fine after all of them.
	if _, out := call(t, cs, map[string]any{"code": "1+1"}); !out.OK {
		t.Fatalf("after bad arguments: %+v", out)
	}
}

func TestToolsHaveSchemas(t *testing.T) {
	requireProduction(t)
	cs := connectStdio(t, testConfig)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s lacks a schema or description", tool.Name)
		}
	}
	if cs.InitializeResult().Instructions == "" {
		t.Error("server has no instructions")
	}
}

func TestHealthz(t *testing.T) {
	requireProduction(t)
	base := startHTTP(t, testConfig, nil)
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
	// A browser request from a foreign origin is refused.
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST /mcp: %s, want 403", resp2.Status)
	}
}

// runCLI runs the binary and returns its combined output and exit code.
func runCLI(t testing.TB, args ...string) (string, int) {
	t.Helper()
	needBinary(t)
	cmd := exec.Command(binary, args...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func TestRefusesToStart(t *testing.T) {
	tests := []struct {
		name string
		cfg  string
		args []string
		want []string
	}{
		{"bad config key", `{"sandbox": {"memroy": "1GiB"}}`, []string{"serve"}, []string{"codecell.json", "sandbox.memroy", "unknown key"}},
		{"bad config value", `{"sandbox": {"memory": "lots"}}`, []string{"serve"}, []string{"sandbox.memory"}},
		{"missing variable", `{"http": {"tokens": {"${CODECELL_E2E_UNSET}": "a"}}}`, []string{"serve"}, []string{"CODECELL_E2E_UNSET"}},
		{"python missing", `{"sandbox": {"python": "/nonexistent/python3"}}`, []string{"serve"}, []string{"cannot run", "/nonexistent/python3", "apt-get install python3"}},
		{"non-loopback without auth", `{}`, []string{"serve", "--http", "0.0.0.0:0"}, []string{"refusing", "--insecure-no-auth"}},
		{"doctor fails for an unusable level", `{"sandbox": {"python": "/nonexistent/python3"}}`, []string{"doctor"}, []string{"UNAVAILABLE", "cannot run here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgPath, dataDir := testDirs(t, tt.cfg)
			out, code := runCLI(t, append(tt.args, "--config", cfgPath, "--data-dir", dataDir)...)
			if code == 0 {
				t.Fatalf("exit 0, want failure; output:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestDoctorAndExec(t *testing.T) {
	requireProduction(t)
	cfgPath, dataDir := testDirs(t, testConfig)
	out, code := runCLI(t, "doctor", "--config", cfgPath, "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "isolation production (configured)  ok") {
		t.Fatalf("doctor exit %d:\n%s", code, out)
	}
	// The filter's line names no call as refused that is refused only for
	// some arguments (clone, socket), and an unset key gets no notice.
	if strings.Contains(out, "denies clone") || !strings.Contains(out, "for some arguments") || strings.Contains(out, "not active yet") {
		t.Errorf("doctor's seccomp line or a notice for an unset key:\n%s", out)
	}
	// What sandbox.memory bounds here, said plainly either way.
	if _, err := cgroup.Host(); err == nil {
		if !strings.Contains(out, "cgroups  ") || !strings.Contains(out, "bounds all of a sandbox's processes together") {
			t.Errorf("doctor does not say memory is per sandbox:\n%s", out)
		}
	} else if !strings.Contains(out, "MEMORY PER PROCESS ONLY") {
		t.Errorf("doctor does not say memory is per process (%v):\n%s", err, out)
	}
	out, code = runCLI(t, "exec", "--config", cfgPath, "--data-dir", dataDir, "-c", "print('hi'); import sys; sys.exit(5)")
	if code != 5 || !strings.Contains(out, "hi") {
		t.Fatalf("exec exit %d, want 5:\n%s", code, out)
	}
	// The hint the runner adds to a missing module's message is printed too.
	out, code = runCLI(t, "exec", "--config", cfgPath, "--data-dir", dataDir, "-c", "import no_such_module_xyz")
	if code == 0 || !strings.Contains(out, "ModuleNotFoundError: No module named 'no_such_module_xyz'\nhint: to install it, call install_dependencies") {
		t.Fatalf("exec of a missing module exit %d:\n%s", code, out)
	}
	// exec --session cannot outlive its process, and says so (issue #30).
	out, code = runCLI(t, "exec", "--session", "s1", "--config", cfgPath, "--data-dir", dataDir, "-c", "x = 1")
	if code != 0 || !strings.Contains(out, "--session s1 ends with this command") {
		t.Fatalf("exec --session exit %d, without a warning:\n%s", code, out)
	}
	out, code = runCLI(t, "exec", "--json", "--config", cfgPath, "--data-dir", dataDir, "-c", "21*2")
	var res server.ExecuteCodeOutput
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Result != float64(42) {
		t.Fatalf("exec --json exit %d:\n%s", code, out)
	}
	out, code = runCLI(t, "version")
	if code != 0 || !strings.Contains(out, "codecell") || !strings.Contains(out, "go1") {
		t.Fatalf("version: %s", out)
	}
}

// TestExecScript: codecell exec FILE arg... runs the file as python would:
// the arguments are sys.argv[1:], sys.argv[0] the file's name as given, and
// the traceback names the file; - reads the script from stdin.
func TestExecScript(t *testing.T) {
	requireProduction(t)
	cfgPath, dataDir := testDirs(t, testConfig)
	dir := t.TempDir()
	script := "import sys\nprint(sys.argv)\nraise SystemExit(int(sys.argv[1]) // 0)\n"
	if err := os.WriteFile(filepath.Join(dir, "script.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) (string, int) {
		t.Helper()
		needBinary(t)
		cmd := exec.Command(binary, append([]string{"exec", "--config", cfgPath, "--data-dir", dataDir}, args...)...)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, code := run("", "script.py", "7", "--json")
	if code != 1 || !strings.Contains(out, "['script.py', '7', '--json']\n") ||
		!strings.Contains(out, "File \"script.py\", line 3, in <module>\n    raise SystemExit(int(sys.argv[1]) // 0)") || strings.Contains(out, "<cell>") {
		t.Errorf("exec script.py 7 --json: exit %d:\n%s", code, out)
	}
	out, code = run(script, "-", "8")
	if code != 1 || !strings.Contains(out, "['<stdin>', '8']\n") || !strings.Contains(out, "File \"<stdin>\", line 3") {
		t.Errorf("exec - 8: exit %d:\n%s", code, out)
	}
	out, code = run("", "-c", "import sys; print(sys.argv[1:])", "x", "y")
	if code != 0 || out != "['x', 'y']\n" {
		t.Errorf("exec -c CODE x y: exit %d:\n%s", code, out)
	}
}

// TestConfigSourceFromAnyCwd: started in / as desktop hosts do, with no
// config named, doctor and list_tool_categories say every place looked; with
// --config, the file read.
func TestConfigSourceFromAnyCwd(t *testing.T) {
	requireProduction(t)
	home := t.TempDir()
	_, dataDir := testDirs(t, "{}")
	cmd := exec.Command(binary, "doctor", "--data-dir", dataDir)
	cmd.Dir = "/"
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{"/codecell.json", home + "/.config/codecell/config.json", "--config"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor in / does not say it looked at %s:\n%s", want, out)
		}
	}

	cfgPath, dataDir := testDirs(t, testConfig)
	cs := serveStdio(t, cfgPath, dataDir, nil)
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_tool_categories", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.StructuredContent.(map[string]any)["config"]; got != cfgPath || !strings.Contains(textOf(res), "config: "+cfgPath) {
		t.Errorf("list_tool_categories config = %v, text %q; want %s", got, textOf(res), cfgPath)
	}
}

// TestServeToolsets: --toolsets lists only the toolsets named, over the
// config's; an unknown one stops serve with a message naming it.
func TestServeToolsets(t *testing.T) {
	requireProduction(t)
	cfgPath, dataDir := testDirs(t, `{"toolsets": ["all"], "sandbox": {"pool": 1}}`)
	// Naming toolsets adds to the lean pair (issue #30): the README's
	// `serve --toolsets workspace,skills` keeps execute_code and search_tools.
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"exec, discovery", []string{"append_to_code_file", "close_session", "execute_code", "execute_code_file", "get_tool_definition",
			"initialize_code_file", "list_sessions", "list_tool_categories", "read_code_file", "search_tools"}},
		{"workspace", []string{"delete_workspace_file", "execute_code", "list_workspace_files", "read_workspace_file", "search_tools", "write_workspace_file"}},
		{"workspace,-default", []string{"delete_workspace_file", "list_workspace_files", "read_workspace_file", "write_workspace_file"}},
	} {
		cs := serveStdio(t, cfgPath, dataDir, nil, "--toolsets", tc.flag)
		res, err := cs.ListTools(context.Background(), nil)
		cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("--toolsets %s: tools %v, want %v", tc.flag, names, tc.want)
		}
	}
	out, code := runCLI(t, "serve", "--config", cfgPath, "--data-dir", dataDir, "--toolsets", "exec,nope")
	if code == 0 || !strings.Contains(out, `--toolsets: unknown toolset "nope"`) {
		t.Errorf("serve --toolsets exec,nope: exit %d:\n%s", code, out)
	}
}

// TestDoctorGatesUpstreamStderr: doctor shows why an upstream server
// failed, through the gate: a key the server printed on stderr comes out
// as a token, as it does in serve's log.
func TestDoctorGatesUpstreamStderr(t *testing.T) {
	const key = "sk_live_51HqJ3kLm9Np2Qr4St6Uv8Wx0Yz2Ab4Cd6Ef8Gh0"
	cfg := fmt.Sprintf(`{"sandbox": {"isolation": "development", "python": "/usr/bin/python3"},
		"mcpServers": {"broken": {"command": "/bin/sh", "args": ["-c", "echo 'auth failed: token=%s' >&2; exit 3"], "startupTimeout": "10s"}}}`, key)
	cfgPath, dataDir := testDirs(t, cfg)
	out, _ := runCLI(t, "doctor", "--config", cfgPath, "--data-dir", dataDir)
	if !strings.Contains(out, "upstream broken") {
		t.Fatalf("doctor says nothing of the upstream:\n%s", out)
	}
	if strings.Contains(out, key) {
		t.Errorf("doctor printed the upstream's key raw:\n%s", out)
	}
	if !strings.Contains(out, "[SECRET_") {
		t.Errorf("no token where the key was:\n%s", out)
	}
}

// TestServeSaysWhenItStops: a server that is stopped says so in its log,
// and why.
func TestServeSaysWhenItStops(t *testing.T) {
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "development", "python": "/usr/bin/python3", "pool": 1}}`)
	cmd := exec.Command(binary, "serve", "--config", cfgPath, "--data-dir", dataDir)
	cmd.Stdin = strings.NewReader("") // the client closes stdin at once
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "shutting down") || !strings.Contains(string(out), "the client closed stdin") {
		t.Errorf("no shutdown line in the log:\n%s", out)
	}
}
