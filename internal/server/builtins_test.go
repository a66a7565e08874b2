package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/runner"
	"github.com/codecell/codecell/internal/sandbox"
)

// hostCall makes one call from "code" to the host, as the sandbox's
// codecell package does, inside an execute_code run by ex.
func hostCall(t *testing.T, cs *mcp.ClientSession, ex *recordingExec, method string, params any) (any, error) {
	t.Helper()
	raw, _ := json.Marshal(params)
	var got any
	var gotErr error
	ex.execFunc = does(func(req sandbox.Request) {
		got, gotErr = req.Calls.HandleCall(context.Background(), method, raw)
	})
	defer func() { ex.execFunc = nil }()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "pass"}}); err != nil {
		t.Fatal(err)
	}
	return got, gotErr
}

// TestLeanDefault: the default lists execute_code and search_tools only;
// every other tool is reachable from code through the same handler, and
// search_tools finds it as codecell.<tool>.
func TestLeanDefault(t *testing.T) {
	ex := &recordingExec{}
	s, cs := newTestServer(t, func(o *Options) { o.Config = config.Default(); o.Executor = ex })
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"execute_code", "search_tools"}) {
		t.Errorf("listed %v", names)
	}

	// A workspace write from code, then a read: the same tools as MCP's.
	out, err := hostCall(t, cs, ex, "codecell", map[string]any{"tool": "write_workspace_file", "arguments": map[string]any{"path": "notes/a.txt", "content": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := out.(WorkspaceEntry); !ok || e.Path != "notes/a.txt" || e.Size != 5 {
		t.Errorf("write_workspace_file from code = %#v", out)
	}
	if b, err := os.ReadFile(filepath.Join(s.Workspace(DefaultNamespace), "notes/a.txt")); err != nil || string(b) != "hello" {
		t.Errorf("file %q %v", b, err)
	}
	out, err = hostCall(t, cs, ex, "codecell", map[string]any{"tool": "read_workspace_file", "arguments": map[string]any{"path": "notes/a.txt"}})
	if r, ok := out.(ReadWorkspaceFileOutput); err != nil || !ok || r.Content != "hello" {
		t.Errorf("read_workspace_file from code = %#v, %v", out, err)
	}
	out, err = hostCall(t, cs, ex, "codecell", map[string]any{"tool": "list_tool_categories"})
	if c, ok := out.(CategoriesOutput); err != nil || !ok || c.Codecell.Tools < 10 {
		t.Errorf("list_tool_categories from code = %#v, %v", out, err)
	}

	// Errors name what is wrong, as Python exceptions.
	for _, tt := range []struct {
		name   string
		params any
		kind   string
		want   string
	}{
		{"missing argument", map[string]any{"tool": "read_workspace_file", "arguments": map[string]any{}}, "TypeError", "path"},
		{"unknown argument", map[string]any{"tool": "read_workspace_file", "arguments": map[string]any{"path": "a", "nope": 1}}, "TypeError", "nope"},
		{"bad argument", map[string]any{"tool": "read_workspace_file", "arguments": map[string]any{"path": "/etc/passwd"}}, "ValueError", "path"},
		{"not from code", map[string]any{"tool": "execute_code", "arguments": map[string]any{"code": "1"}}, "AttributeError", "execute_code"},
		{"unknown tool", map[string]any{"tool": "nope"}, "AttributeError", "nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := hostCall(t, cs, ex, "codecell", tt.params)
			var ce *sandbox.CallError
			if !errors.As(err, &ce) || ce.Kind != tt.kind || !strings.Contains(ce.Message, tt.want) {
				t.Errorf("error %v, want a %s naming %q", err, tt.kind, tt.want)
			}
		})
	}
	// The servers package cannot reach codecell's own tools as an upstream.
	if _, err := hostCall(t, cs, ex, "tool", map[string]any{"server": "codecell", "tool": "read_workspace_file", "arguments": map[string]any{"path": "a"}}); err == nil {
		t.Error("servers.codecell reached a builtin")
	}

	// search_tools finds them, with their import.
	res2, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "write a file to the workspace", "limit": 3}})
	if err != nil {
		t.Fatal(err)
	}
	var found SearchToolsOutput
	structured(t, res2, &found)
	if len(found.Tools) == 0 || found.Tools[0].Name != "codecell.write_workspace_file" || !strings.HasPrefix(found.Tools[0].Signature, "write_workspace_file(") {
		t.Errorf("search found %+v", found.Tools)
	}
	def, err := s.ToolDefinition("codecell.write_workspace_file")
	if err != nil || !strings.Contains(def.Source, "from codecell import write_workspace_file") {
		t.Errorf("definition %+v, %v", def, err)
	}
}

// TestBuiltinPolicy: a deny pattern that names one of codecell's tools
// keeps code from calling it; the allow list is for upstream tools.
func TestBuiltinPolicy(t *testing.T) {
	cfg := config.Default()
	cfg.PII.AllowRestore = true // else restore_pii is no tool at all
	cfg.Policy = config.Policy{Allow: []string{"github.*"}, Deny: []string{"codecell.restore_pii"}}
	ex := &recordingExec{}
	_, cs := newTestServer(t, func(o *Options) { o.Config = cfg; o.Executor = ex })
	if _, err := hostCall(t, cs, ex, "codecell", map[string]any{"tool": "sanitize_pii", "arguments": map[string]any{"text": "a@example.org"}}); err != nil {
		t.Errorf("sanitize_pii: %v", err)
	}
	_, err := hostCall(t, cs, ex, "codecell", map[string]any{"tool": "restore_pii", "arguments": map[string]any{"text": "x"}})
	var ce *sandbox.CallError
	if !errors.As(err, &ce) || ce.Kind != "PermissionError" {
		t.Errorf("restore_pii under deny: %v", err)
	}
}

// TestRestoreNotFromCodeByDefault: without pii.allowRestore, code cannot
// call restore_pii either (it is no tool at all: the call raises
// PermissionError naming the key), so the sandbox gets no originals by
// that way; with it, code can.
func TestRestoreNotFromCodeByDefault(t *testing.T) {
	ex := &recordingExec{}
	_, cs := newTestServer(t, func(o *Options) { o.Config = config.Default(); o.Executor = ex })
	_, err := hostCall(t, cs, ex, "codecell", map[string]any{"tool": "restore_pii", "arguments": map[string]any{"text": "[EMAIL_000000]"}})
	var ce *sandbox.CallError
	if !errors.As(err, &ce) || ce.Kind != "PermissionError" || !strings.Contains(ce.Message, "pii.allowRestore") {
		t.Errorf("restore_pii from code without allowRestore: %v", err)
	}
	cfg := config.Default()
	cfg.PII.AllowRestore = true
	ex = &recordingExec{}
	_, cs = newTestServer(t, func(o *Options) { o.Config = cfg; o.Executor = ex })
	if _, err := hostCall(t, cs, ex, "codecell", map[string]any{"tool": "restore_pii", "arguments": map[string]any{"text": "[EMAIL_000000]"}}); err != nil {
		t.Errorf("restore_pii from code with allowRestore: %v", err)
	}
}

// TestCodecellPackageMatchesTools: each tool code can call has a function
// of the same name in the sandbox's codecell package whose parameters are
// the tool's input properties, and every such function is a tool.
func TestCodecellPackageMatchesTools(t *testing.T) {
	s, _ := newTestServer(t, nil)
	src, err := runner.ReadFile("codecell/_tools.py")
	if err != nil {
		t.Fatal(err)
	}
	defs := regexp.MustCompile(`(?m)^def ([a-z_]+)\(([^)]*)\)`).FindAllStringSubmatch(string(src), -1)
	funcs := map[string][]string{}
	for _, d := range defs {
		if strings.HasPrefix(d[1], "_") {
			continue
		}
		var params []string
		for _, p := range strings.Split(d[2], ",") {
			if p = strings.TrimSpace(p); p != "" {
				params = append(params, strings.TrimSpace(strings.FieldsFunc(p, func(r rune) bool { return r == ':' || r == '=' })[0]))
			}
		}
		slices.Sort(params)
		funcs[d[1]] = params
	}
	// The env and skills tools need their managers, which this server has
	// not, and restore_pii needs pii.allowRestore; their functions are
	// checked by name only.
	optional := []string{"configure_environment", "get_environment_config", "install_dependencies", "check_installed_packages",
		"save_skill", "load_skill", "list_skills", "delete_skill", "get_execution_stats", "restore_pii"}
	seen := map[string]bool{}
	for _, b := range s.builtins {
		if b.call == nil {
			if _, ok := funcs[b.tool.Name]; ok {
				t.Errorf("%s is not callable from code but codecell has a function for it", b.tool.Name)
			}
			continue
		}
		seen[b.tool.Name] = true
		params, ok := funcs[b.tool.Name]
		if !ok {
			t.Errorf("codecell has no function %s", b.tool.Name)
			continue
		}
		raw, _ := json.Marshal(b.tool.InputSchema)
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		json.Unmarshal(raw, &schema)
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		if !slices.Equal(params, props) {
			t.Errorf("%s: the function takes %v, the tool %v", b.tool.Name, params, props)
		}
	}
	for name := range funcs {
		if !seen[name] && !slices.Contains(optional, name) {
			t.Errorf("codecell's function %s is no tool code can call", name)
		}
	}
}

// TestSearchNeverSilentlyEmpty: a search that matches nothing answers the
// nearest tools by spelling, says so and points to list_tool_categories;
// with nothing near, it says that.
func TestSearchNeverSilentlyEmpty(t *testing.T) {
	_, cs := newTestServer(t, func(o *Options) { o.Config = config.Default() })
	search := func(query string) (SearchToolsOutput, string) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query, "limit": 3}})
		if err != nil || res.IsError {
			t.Fatalf("search %q: %v %v", query, err, res)
		}
		var out SearchToolsOutput
		structured(t, res, &out)
		return out, res.Content[0].(*mcp.TextContent).Text
	}
	// A typo or two within a word is searched as the word.
	if out, _ := search("raed a workspce fille"); len(out.Tools) == 0 || out.Tools[0].Name != "codecell.read_workspace_file" || out.Note != "" {
		t.Errorf("near typos: %+v", out)
	}
	out, text := search("wspace fle")
	if len(out.Tools) == 0 || !strings.Contains(out.Tools[0].Name, "workspace") ||
		!strings.Contains(out.Note, "nearest by spelling") || !strings.Contains(out.Note, "list_tool_categories") ||
		!strings.Contains(text, out.Note) {
		t.Errorf("typo search: %+v\n%s", out, text)
	}
	out, text = search("qqqq zzzzv")
	if len(out.Tools) != 0 || !strings.Contains(out.Note, "nor comes near it") || !strings.Contains(out.Note, "list_tool_categories") || !strings.Contains(text, "list_tool_categories") {
		t.Errorf("hopeless search: %+v\n%s", out, text)
	}
	// A search that matches has no note.
	if out, _ := search("read a workspace file"); out.Note != "" || len(out.Tools) == 0 {
		t.Errorf("plain search: %+v", out)
	}
}

// TestCodecellHelpShowsWhatCanBeCalled: help(codecell) in the sandbox lists
// the tools code can call in that execution: restore_pii only where the
// config allows it, and none the policy denies; restore_pii's call where it
// is off says which key turns it on (issue #30).
func TestCodecellHelpShowsWhatCanBeCalled(t *testing.T) {
	const code = `import codecell, pydoc
text = pydoc.render_doc(codecell, renderer=pydoc.plaintext)
print("restore_pii" in text, "restore_pii" in codecell.__all__, "sanitize_pii" in text, "list_workspace_files" in text)
try:
    codecell.restore_pii("x")
except Exception as e:
    print(type(e).__name__, e)
`
	for _, tc := range []struct {
		name  string
		mod   func(*config.Config)
		lines []string
	}{
		{"restore off, list_workspace_files denied", func(c *config.Config) { c.Policy.Deny = []string{"codecell.list_workspace_files"} },
			[]string{"False False True False", "PermissionError restore_pii is off: it hands back the originals of personal data, which codecell's config allows with pii.allowRestore"}},
		{"restore on", func(c *config.Config) { c.PII.AllowRestore = true },
			[]string{"True True True True", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mgr, err := sandbox.New(sandbox.Options{Level: sandbox.Development, Python: "/usr/bin/python3", StateDir: t.TempDir(), PoolSize: 1})
			if err != nil {
				t.Skip(err)
			}
			t.Cleanup(func() { mgr.Close() })
			_, cs := newTestServer(t, func(o *Options) {
				o.Config.Sandbox.Isolation = "development"
				tc.mod(o.Config)
				o.Executor = mgr
			})
			var out ExecuteCodeOutput
			mustCall(t, cs, "execute_code", map[string]any{"code": code}, &out)
			got := strings.Split(out.Stdout, "\n")
			if len(got) < 2 || got[0] != tc.lines[0] || (tc.lines[1] != "" && got[1] != tc.lines[1]) {
				t.Errorf("stdout %q, want the lines %q", out.Stdout, tc.lines)
			}
		})
	}
}
