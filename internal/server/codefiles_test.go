package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCodeFiles(t *testing.T) {
	ex := &recordingExec{}
	s, cs := newTestServer(t, func(o *Options) { o.Executor = ex; o.Config.PII.Mode = "off" })
	dir := s.Workspace(DefaultNamespace)

	var f CodeFileOutput
	mustCall(t, cs, "initialize_code_file", map[string]any{"content": "import sys"}, &f)
	if f.Path != "code/cell_1.py" || f.Lines != 1 || f.Size != 10 {
		t.Fatalf("first: %+v", f)
	}
	mustCall(t, cs, "initialize_code_file", map[string]any{"content": "x = 1\n"}, &f)
	if f.Path != "code/cell_2.py" {
		t.Fatalf("second: %+v", f)
	}
	text := mustCall(t, cs, "append_to_code_file", map[string]any{"path": "code/cell_1.py", "content": "print(sys.argv)"}, &f)
	if f.Lines != 2 || !strings.Contains(text, "code/cell_1.py (2 lines)") {
		t.Fatalf("append: %+v %q", f, text)
	}
	text = mustCall(t, cs, "read_code_file", map[string]any{"path": "code/cell_1.py"}, &f)
	if f.Content != "import sys\nprint(sys.argv)" || !strings.Contains(text, "print(sys.argv)") {
		t.Fatalf("read: %+v %q", f, text)
	}
	mustCall(t, cs, "initialize_code_file", map[string]any{"content": "a = 1", "filename": "tools/a.py"}, &f)
	// An existing file is refused without overwrite, and left as it was.
	res, text := callTool(t, cs, "initialize_code_file", map[string]any{"content": "a = 2", "filename": "tools/a.py"})
	if !res.IsError || !strings.Contains(text, `invalid argument filename: "tools/a.py" exists; pass overwrite: true to replace it`) {
		t.Fatalf("an existing file without overwrite: %v %q", res.IsError, text)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "tools/a.py")); string(got) != "a = 1" {
		t.Fatalf("a refused initialize changed the file: %q", got)
	}
	text = mustCall(t, cs, "initialize_code_file", map[string]any{"content": "a = 2", "filename": "tools/a.py", "overwrite": true}, &f)
	if got, _ := os.ReadFile(filepath.Join(dir, "tools/a.py")); string(got) != "a = 2" || !strings.HasPrefix(text, "replaced tools/a.py") {
		t.Fatalf("overwrite: %q, %q", got, text)
	}
	text = mustCall(t, cs, "initialize_code_file", map[string]any{"content": "b = 1", "filename": "tools/b.py", "overwrite": true}, &f)
	if !strings.HasPrefix(text, "created tools/b.py") {
		t.Fatalf("overwrite of nothing: %q", text)
	}

	var out ExecuteCodeOutput
	mustCall(t, cs, "execute_code_file", map[string]any{"path": "code/cell_1.py", "args": []string{"x", "--y=1"}, "timeout_seconds": 5}, &out)
	req := ex.last()
	if req.Code != "import sys\nprint(sys.argv)" || req.Filename != "code/cell_1.py" || !slices.Equal(req.Args, []string{"x", "--y=1"}) || req.Timeout != 5*time.Second {
		t.Fatalf("request: code %q filename %q args %q timeout %v", req.Code, req.Filename, req.Args, req.Timeout)
	}
}

func TestCodeFileRefusals(t *testing.T) {
	s, cs := newTestServer(t, nil)
	dir := s.Workspace(DefaultNamespace)
	mustCall(t, cs, "initialize_code_file", map[string]any{"content": "x = 1", "filename": "a.py"}, nil)
	if err := os.WriteFile(filepath.Join(dir, "empty.py"), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin.py"), []byte("\xff\xfe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "out.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.py"), []byte(strings.Repeat("#", maxCode+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"initialize_code_file", map[string]any{"content": "x", "filename": "a.txt"}, "invalid argument filename"},
		{"initialize_code_file", map[string]any{"content": "x", "filename": ".py"}, "invalid argument filename"},
		{"initialize_code_file", map[string]any{"content": "x", "filename": "../a.py"}, "invalid argument filename"},
		{"initialize_code_file", map[string]any{"content": "x", "filename": "/tmp/a.py"}, "invalid argument filename"},
		{"initialize_code_file", map[string]any{"content": strings.Repeat("x", maxCode+1)}, "invalid argument content"},
		{"append_to_code_file", map[string]any{"path": "missing.py", "content": "x"}, "no such file"},
		{"append_to_code_file", map[string]any{"path": "a.py", "content": strings.Repeat("x", maxCode)}, "invalid argument content"},
		{"append_to_code_file", map[string]any{"path": "out.py", "content": "x"}, "invalid argument path"},
		{"read_code_file", map[string]any{"path": "out.py"}, "invalid argument path"},
		{"read_code_file", map[string]any{"path": "bin.py"}, "not UTF-8"},
		{"execute_code_file", map[string]any{"path": "missing.py"}, "no such file"},
		{"execute_code_file", map[string]any{"path": "empty.py"}, "holds no code"},
		{"execute_code_file", map[string]any{"path": "a.py", "timeout_seconds": 0.5}, "invalid argument timeout_seconds"},
		// 0 is out of range, not "the default" (issue #30): README says 1 to maxTimeout.
		{"execute_code_file", map[string]any{"path": "a.py", "timeout_seconds": 0}, "invalid argument timeout_seconds: 0 is out of range"},
		{"execute_code", map[string]any{"code": "1", "timeout_seconds": 0}, "invalid argument timeout_seconds: 0 is out of range"},
		{"execute_code_file", map[string]any{"path": "a.py", "args": make([]string, maxArgs+1)}, "invalid argument args"},
		{"execute_code_file", map[string]any{"path": "a.py", "args": []string{strings.Repeat("x", maxArgBytes+1)}}, "invalid argument args"},
		{"execute_code_file", map[string]any{"path": "a.py", "args": []string{"a\x00b"}}, "NUL"},
		{"execute_code_file", map[string]any{"path": "a.py", "args": []string{strings.Repeat("x", maxArgBytes/2), strings.Repeat("y", maxArgBytes/2+1)}}, "bytes together"},
		{"read_code_file", map[string]any{"path": "big.py"}, "the limit is 1048576"},
		{"execute_code_file", map[string]any{"path": "big.py"}, "the limit is 1048576"},
		{"read_code_file", map[string]any{"path": "fifo.py"}, "not a regular file"},
		{"execute_code_file", map[string]any{"path": "out.py"}, "invalid argument path"},
		{"read_code_file", map[string]any{"path": "a\x00.py"}, "invalid argument path"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.tool, len(fmt.Sprint(tt.args)), tt.want), func(t *testing.T) {
			res, text := callTool(t, cs, tt.tool, tt.args)
			if !res.IsError || !strings.Contains(text, tt.want) {
				t.Fatalf("%v, %.200q; want an error with %q", res.IsError, text, tt.want)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.py")); string(got) != "x = 1" {
		t.Fatalf("a refused append changed the file: %q", got)
	}
}

// TestCodeFileAppendLimit: an append may fill a code file to exactly
// maxCode bytes, the newline it adds counted only when it adds one.
func TestCodeFileAppendLimit(t *testing.T) {
	s, cs := newTestServer(t, func(o *Options) { o.Config.PII.Mode = "off" })
	dir := s.Workspace(DefaultNamespace)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		start string
		grow  int // bytes of content that fill the file exactly
		lines int
	}{
		{"x = 1", maxCode - len("x = 1\n"), 2},
		{"x = 1\n", maxCode - len("x = 1\n"), 2},
		{"", maxCode, 1},
	} {
		name := fmt.Sprintf("f%d.py", len(tt.start))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tt.start), 0o644); err != nil {
			t.Fatal(err)
		}
		res, text := callTool(t, cs, "append_to_code_file", map[string]any{"path": name, "content": strings.Repeat("#", tt.grow+1)})
		if !res.IsError || !strings.Contains(text, fmt.Sprintf("would make the file %d bytes", maxCode+1)) {
			t.Fatalf("%q: one byte too many: %v %.200q", tt.start, res.IsError, text)
		}
		var f CodeFileOutput
		mustCall(t, cs, "append_to_code_file", map[string]any{"path": name, "content": strings.Repeat("#", tt.grow)}, &f)
		if got, _ := os.ReadFile(filepath.Join(dir, name)); f.Size != maxCode || len(got) != maxCode || f.Lines != tt.lines {
			t.Fatalf("%q: filled to %d bytes (%d on disk) in %d lines, want %d in %d", tt.start, f.Size, len(got), f.Lines, maxCode, tt.lines)
		}
	}
}

// TestCodeFileLimitsAccepted: execute_code_file takes args up to both
// limits, and a code file of exactly maxCode bytes.
func TestCodeFileLimitsAccepted(t *testing.T) {
	ex := &recordingExec{}
	s, cs := newTestServer(t, func(o *Options) { o.Executor = ex; o.Config.PII.Mode = "off" })
	dir := s.Workspace(DefaultNamespace)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	code := "x = 1\n" + strings.Repeat("#", maxCode-len("x = 1\n"))
	if err := os.WriteFile(filepath.Join(dir, "max.py"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	args := make([]string, maxArgs)
	args[0] = strings.Repeat("a", maxArgBytes)
	mustCall(t, cs, "execute_code_file", map[string]any{"path": "max.py", "args": args}, nil)
	if req := ex.last(); len(req.Code) != maxCode || !slices.Equal(req.Args, args) {
		t.Fatalf("ran %d bytes of code with %d args", len(req.Code), len(req.Args))
	}
}

// TestNewCodeFileNumbers: initialize_code_file without a filename takes
// the number after the highest cell directly in code/.
func TestNewCodeFileNumbers(t *testing.T) {
	s, cs := newTestServer(t, func(o *Options) { o.Config.PII.Mode = "off" })
	dir := s.Workspace(DefaultNamespace)
	for _, p := range []string{"code/cell_7.py", "code/cell_x.py", "code/sub/cell_99.py", "code/cell_12.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var f CodeFileOutput
	mustCall(t, cs, "initialize_code_file", map[string]any{"content": "x = 1"}, &f)
	if f.Path != "code/cell_8.py" {
		t.Fatalf("new code file %q, want code/cell_8.py", f.Path)
	}
}

// TestScriptsNameThemselves: a code file run by execute_code_file, and code
// that execute_code runs as a script (its _meta's MetaScript, as codecell
// exec FILE arg... sends it), see their name in sys.argv[0] and their
// arguments after it, and their tracebacks name the file, not <cell>.
func TestScriptsNameThemselves(t *testing.T) {
	_, _, cs := sessionServer(t)
	const code = "import sys\nprint(sys.argv, __file__)\nraise ValueError('bad ' + sys.argv[1])\n"
	mustCall(t, cs, "initialize_code_file", map[string]any{"content": code, "filename": "tools/job.py"}, nil)
	res, text := callTool(t, cs, "execute_code_file", map[string]any{"path": "tools/job.py", "args": []string{"a b", "--c"}})
	var out ExecuteCodeOutput
	structured(t, res, &out)
	if out.Stdout != "['tools/job.py', 'a b', '--c'] tools/job.py\n" || out.Error == nil ||
		!strings.Contains(out.Error.Traceback, "File \"tools/job.py\", line 3, in <module>\n    raise ValueError('bad ' + sys.argv[1])\nValueError: bad a b") {
		t.Errorf("execute_code_file: stdout %q, error %+v\n%s", out.Stdout, out.Error, text)
	}

	call := func(meta mcp.Meta, code string) (*mcp.CallToolResult, ExecuteCodeOutput) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Meta: meta, Name: "execute_code", Arguments: map[string]any{"code": code}})
		if err != nil {
			t.Fatal(err)
		}
		var out ExecuteCodeOutput
		if !res.IsError || res.StructuredContent != nil {
			structured(t, res, &out)
		}
		return res, out
	}
	_, out = call(mcp.Meta{MetaScript: Script{Filename: "script.py", Args: []string{"x"}}}, code)
	if out.Stdout != "['script.py', 'x'] script.py\n" || out.Error == nil || !strings.Contains(out.Error.Traceback, "File \"script.py\", line 3, in <module>") {
		t.Errorf("execute_code as a script: stdout %q, error %+v", out.Stdout, out.Error)
	}
	// Arguments alone: the code is still the cell, without a __file__.
	_, out = call(mcp.Meta{MetaScript: map[string]any{"args": []string{"y"}}}, "import sys\nprint(sys.argv, '__file__' in globals())\n1/0")
	if out.Stdout != "['<cell>', 'y'] False\n" || out.Error == nil || !strings.Contains(out.Error.Traceback, "File \"<cell>\", line 3") {
		t.Errorf("execute_code with args: stdout %q, error %+v", out.Stdout, out.Error)
	}
	for name, meta := range map[string]any{
		"not an object": "script.py",
		"a NUL":         Script{Filename: "a\x00b"},
		"too many args": Script{Args: make([]string, maxArgs+1)},
	} {
		res, _ := call(mcp.Meta{MetaScript: meta}, code)
		if text := textOf(res); !res.IsError || !strings.Contains(text, "_meta."+MetaScript) {
			t.Errorf("%s: not refused: %q", name, text)
		}
	}
}
