package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/pii"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/workspace"
)

// callTool calls a tool and returns its result and text.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return res, textOf(res)
}

// mustCall calls a tool that must succeed and decodes its structured
// result into out.
func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, text := callTool(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s(%v): %s", name, args, text)
	}
	if out != nil {
		structured(t, res, out)
	}
	return text
}

func TestWorkspaceToolsListed(t *testing.T) {
	_, cs := newTestServer(t, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"write_workspace_file": true, "read_workspace_file": true, "list_workspace_files": true, "delete_workspace_file": true,
		"initialize_code_file": true, "append_to_code_file": true, "read_code_file": true, "execute_code_file": true,
	}
	for _, tool := range tools.Tools {
		if !want[tool.Name] {
			continue
		}
		delete(want, tool.Name)
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
		schema := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		for name, p := range props {
			if d, _ := p.(map[string]any)["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", tool.Name, name)
			}
		}
	}
	for name := range want {
		t.Errorf("%s is not listed", name)
	}
}

func TestWorkspaceTools(t *testing.T) {
	s, cs := newTestServer(t, func(o *Options) { o.Config.PII.Mode = "off" })
	dir := s.Workspace(DefaultNamespace)

	var w WorkspaceEntry
	text := mustCall(t, cs, "write_workspace_file", map[string]any{"path": "data/notes.txt", "content": "line 1\nline 2\n"}, &w)
	if w.Path != "data/notes.txt" || w.Size != 14 || !strings.Contains(text, "wrote data/notes.txt") {
		t.Fatalf("write: %+v %q", w, text)
	}
	if _, err := time.Parse(time.RFC3339, w.ModTime); err != nil {
		t.Errorf("mod_time %q: %v", w.ModTime, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "data/notes.txt")); string(got) != "line 1\nline 2\n" {
		t.Fatalf("on disk: %q", got)
	}

	var r ReadWorkspaceFileOutput
	text = mustCall(t, cs, "read_workspace_file", map[string]any{"path": "data/notes.txt"}, &r)
	if r.Content != "line 1\nline 2\n" || r.Encoding != "text" || r.More || r.Size != 14 || text != r.Content {
		t.Fatalf("read: %+v %q", r, text)
	}
	// A page neither ends nor starts inside a word: it leaves the one it
	// ends in to the next page, and skips the rest of the one it starts in
	// (an offset not from next_offset).
	text = mustCall(t, cs, "read_workspace_file", map[string]any{"path": "data/notes.txt", "limit": 9}, &r)
	if r.Content != "line 1\n" || !r.More || r.NextOffset != 7 || !strings.Contains(text, "read on at offset 7") {
		t.Fatalf("page: %+v %q", r, text)
	}
	text = mustCall(t, cs, "read_workspace_file", map[string]any{"path": "data/notes.txt", "offset": 2, "limit": 5}, &r)
	if r.Content != " 1\n" || r.Offset != 4 || !r.More || r.NextOffset != 7 || !strings.Contains(text, "read on at offset 7") {
		t.Fatalf("page: %+v %q", r, text)
	}

	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 24)...)
	b64 := base64.StdEncoding.EncodeToString(png)
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "img/a.png", "content": b64, "encoding": "base64"}, &w)
	mustCall(t, cs, "read_workspace_file", map[string]any{"path": "img/a.png"}, &r)
	if r.Encoding != "base64" || r.Content != b64 || r.MIMEType != "image/png" {
		t.Fatalf("binary: %+v", r)
	}

	var l ListWorkspaceFilesOutput
	text = mustCall(t, cs, "list_workspace_files", map[string]any{}, &l)
	var paths []string
	for _, e := range l.Files {
		paths = append(paths, e.Path)
	}
	if got := strings.Join(paths, " "); got != "data data/notes.txt img img/a.png" || l.Truncated {
		t.Fatalf("list: %q %+v", got, l)
	}
	if !strings.Contains(text, "data/\n") || !strings.Contains(text, "img/a.png\t32\t") {
		t.Errorf("list text %q", text)
	}
	// Two files and two directories, a block each at least.
	if u := l.Usage; u == nil || u.Entries != 4 || u.Bytes < 4*4096 || u.Quota != 1<<30 || u.MaxEntries != 250000 || u.Enforcement != "watcher" {
		t.Errorf("usage %+v", l.Usage)
	} else if !strings.Contains(text, "[workspace] ") || !strings.Contains(text, "of 1.00 GiB, 4 entries of 250000") {
		t.Errorf("list text does not say the usage: %q", text)
	}
	mustCall(t, cs, "list_workspace_files", map[string]any{"pattern": "*.png"}, &l)
	if len(l.Files) != 1 || l.Files[0].Path != "img/a.png" || l.Files[0].Size != 32 {
		t.Fatalf("list *.png: %+v", l)
	}

	var d DeleteWorkspaceFileOutput
	mustCall(t, cs, "delete_workspace_file", map[string]any{"path": "img/a.png"}, &d)
	if d.Deleted != "img/a.png" {
		t.Fatalf("delete: %+v", d)
	}
	mustCall(t, cs, "delete_workspace_file", map[string]any{"path": "data", "recursive": true}, &d)
	mustCall(t, cs, "list_workspace_files", map[string]any{"pattern": "*.*"}, &l)
	if len(l.Files) != 0 {
		t.Fatalf("after delete: %+v", l)
	}
}

func TestWorkspaceToolRefusals(t *testing.T) {
	s, cs := newTestServer(t, func(o *Options) { o.Config.Sandbox.WorkspaceQuota = 8192 })
	dir := s.Workspace(DefaultNamespace)
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "a.txt", "content": "x"}, nil)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "etc")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"read_workspace_file", map[string]any{"path": "../x"}, []string{"invalid argument path", "leaves the workspace"}},
		{"read_workspace_file", map[string]any{"path": "/etc/passwd"}, []string{"invalid argument path", "absolute"}},
		{"read_workspace_file", map[string]any{"path": "passwd"}, []string{"invalid argument path", "symbolic link"}},
		{"read_workspace_file", map[string]any{"path": "etc/passwd"}, []string{"invalid argument path", "symbolic link"}},
		{"read_workspace_file", map[string]any{"path": ""}, []string{"invalid argument path", "empty"}},
		{"read_workspace_file", map[string]any{"path": "a\x00.txt"}, []string{"invalid argument path", "NUL"}},
		{"write_workspace_file", map[string]any{"path": "a\x00.txt", "content": "x"}, []string{"invalid argument path", "NUL"}},
		{"write_workspace_file", map[string]any{"path": "/tmp/x", "content": "x"}, []string{"invalid argument path", "absolute"}},
		{"write_workspace_file", map[string]any{"path": "../x", "content": "x"}, []string{"invalid argument path", "leaves the workspace"}},
		{"write_workspace_file", map[string]any{"path": "passwd", "content": "x"}, []string{"invalid argument path", "symbolic link"}},
		{"delete_workspace_file", map[string]any{"path": "../x"}, []string{"invalid argument path", "leaves the workspace"}},
		{"list_workspace_files", map[string]any{"path": "/etc"}, []string{"invalid argument path", "absolute"}},
		{"read_workspace_file", map[string]any{"path": "missing"}, []string{"no such file"}},
		{"read_workspace_file", map[string]any{"path": "a.txt", "offset": -1}, []string{"invalid argument offset"}},
		{"read_workspace_file", map[string]any{"path": "a.txt", "limit": 2 << 20}, []string{"invalid argument limit"}},
		{"write_workspace_file", map[string]any{"path": "etc/x", "content": "x"}, []string{"invalid argument path", "symbolic link"}},
		{"write_workspace_file", map[string]any{"path": "b", "content": "x", "encoding": "hex"}, []string{"invalid argument encoding"}},
		{"write_workspace_file", map[string]any{"path": "b", "content": "!!", "encoding": "base64"}, []string{"invalid argument content"}},
		{"write_workspace_file", map[string]any{"path": "big", "content": strings.Repeat("x", 5000)}, []string{"quota", "8192"}},
		{"list_workspace_files", map[string]any{"path": "etc"}, []string{"invalid argument path", "symbolic link"}},
		{"list_workspace_files", map[string]any{"pattern": "["}, []string{"invalid argument pattern"}},
		{"delete_workspace_file", map[string]any{"path": "."}, []string{"workspace itself"}},
		{"delete_workspace_file", map[string]any{"path": "etc/passwd"}, []string{"invalid argument path", "symbolic link"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.tool, tt.args), func(t *testing.T) {
			res, text := callTool(t, cs, tt.tool, tt.args)
			if !res.IsError {
				t.Fatalf("not an error: %q", text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not say %q", text, w)
				}
			}
			if strings.Contains(text, dir) {
				t.Errorf("%q names the host directory", text)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "big")); err == nil {
		t.Error("the write over quota left a file")
	}
}

// TestWorkspacePII: personal data in a file's text and in its name reach
// the model as tokens, and a tokenized path finds its file.
func TestWorkspacePII(t *testing.T) {
	_, cs := newTestServer(t, nil)
	var w WorkspaceEntry
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "ada@example.org/notes.txt", "content": "mail ada@example.org"}, &w)
	tok, _, _ := strings.Cut(w.Path, "/")
	if !pii.IsToken(tok) || !strings.HasPrefix(tok, "[EMAIL_") || !strings.HasSuffix(w.Path, "/notes.txt") {
		t.Fatalf("write returned %q", w.Path)
	}
	var l ListWorkspaceFilesOutput
	text := mustCall(t, cs, "list_workspace_files", nil, &l)
	if len(l.Files) != 2 || l.Files[1].Path != tok+"/notes.txt" || strings.Contains(text, "ada@") {
		t.Fatalf("list: %+v %q", l, text)
	}
	var r ReadWorkspaceFileOutput
	text = mustCall(t, cs, "read_workspace_file", map[string]any{"path": tok + "/notes.txt"}, &r)
	if r.Content != "mail "+tok || r.Path != tok+"/notes.txt" || strings.Contains(text, "ada@") {
		t.Fatalf("read: %+v %q", r, text)
	}
	res, text := callTool(t, cs, "read_workspace_file", map[string]any{"path": "bob@example.org/x"})
	if !res.IsError || strings.Contains(text, "bob@") {
		t.Fatalf("an error names personal data: %q", text)
	}
}

// TestExecuteCodeReportsFiles: execute_code's files are what the code
// created or changed, also as resource links.
func TestExecuteCodeReportsFiles(t *testing.T) {
	ex := &recordingExec{}
	s, cs := newTestServer(t, func(o *Options) { o.Executor = ex; o.Config.PII.Mode = "off" })
	dir := s.Workspace(DefaultNamespace)
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "kept.txt", "content": "x"}, nil)
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "changed.txt", "content": "x"}, nil)
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "gone.txt", "content": "x"}, nil)
	ex.execFunc = does(func(req sandbox.Request) {
		os.MkdirAll(filepath.Join(req.Workspace, "out dir"), 0o755)
		os.WriteFile(filepath.Join(req.Workspace, "out dir", "r#1.csv"), []byte("a,b\n"), 0o644)
		os.WriteFile(filepath.Join(req.Workspace, "changed.txt"), []byte("xy"), 0o644)
		os.Remove(filepath.Join(req.Workspace, "gone.txt"))
	})
	res, text := callTool(t, cs, "execute_code", map[string]any{"code": "pass"})
	var out ExecuteCodeOutput
	structured(t, res, &out)
	if got := strings.Join(out.Files, " "); got != "changed.txt out dir/r#1.csv" || out.FilesOmitted != 0 {
		t.Fatalf("files %q", got)
	}
	if got := strings.Join(out.FilesDeleted, " "); got != "gone.txt" {
		t.Fatalf("files_deleted %q", got)
	}
	if !strings.Contains(text, "[files] changed.txt, out dir/r#1.csv\n[deleted] gone.txt\n") {
		t.Errorf("text %q", text)
	}
	var links []string
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, fmt.Sprintf("%s %s %s %d", l.URI, l.Name, l.MIMEType, *l.Size))
		}
	}
	want := []string{"file:///workspace/changed.txt changed.txt text/plain; charset=utf-8 2", "file:///workspace/out%20dir/r%231.csv out dir/r#1.csv text/csv; charset=utf-8 4"}
	if strings.Join(links, "|") != strings.Join(want, "|") {
		t.Errorf("links %q, want %q", links, want)
	}

	// Nothing changed: no files.
	ex.execFunc = nil
	res, _ = callTool(t, cs, "execute_code", map[string]any{"code": "pass"})
	out = ExecuteCodeOutput{} // files is left out when empty
	structured(t, res, &out)
	if len(out.Files) != 0 || len(res.Content) != 1 {
		t.Fatalf("unchanged workspace: %v %d", out.Files, len(res.Content))
	}

	// Many files: 100 reported, the rest counted.
	ex.execFunc = does(func(req sandbox.Request) {
		for i := range 105 {
			os.WriteFile(filepath.Join(req.Workspace, fmt.Sprintf("f%03d", i)), nil, 0o644)
		}
	})
	res, text = callTool(t, cs, "execute_code", map[string]any{"code": "pass"})
	structured(t, res, &out)
	if len(out.Files) != 100 || out.FilesOmitted != 5 || out.Files[0] != "f000" || len(res.Content) != 101 || !strings.Contains(text, "and 5 more") {
		t.Fatalf("many files: %d files, %d omitted, %d content", len(out.Files), out.FilesOmitted, len(res.Content))
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceToolLimits: a write is at most maxWrite bytes, after base64
// decoding; a listing at most DefaultListLimit entries.
func TestWorkspaceToolLimits(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) { o.Config.PII.Mode = "off" })
	dir := s.Workspace(DefaultNamespace)
	// The handler is called directly: the SDK's stdio and in-memory
	// transports refuse a frame over 16 MiB before any tool sees it, and
	// close the connection.
	big := strings.Repeat("x", maxWrite+1)
	for _, in := range []WriteWorkspaceFileInput{
		{Path: "big", Content: big},
		{Path: "big", Content: base64.StdEncoding.EncodeToString([]byte(big)), Encoding: "base64"},
	} {
		_, _, err := s.writeWorkspaceFile(context.Background(), nil, in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "content" || !strings.Contains(err.Error(), fmt.Sprint("the limit is ", maxWrite)) {
			t.Fatalf("%s write of %d bytes: %v", in.Encoding, len(big), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "big")); err == nil {
		t.Fatal("a refused write left a file")
	}
	if _, _, err := s.writeWorkspaceFile(context.Background(), nil, WriteWorkspaceFileInput{Path: "max", Content: big[:maxWrite]}); err != nil {
		t.Fatalf("a write of exactly %d bytes: %v", maxWrite, err)
	}

	for i := range workspace.DefaultListLimit + 1 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The cap on entries, with the answer budget off (TestFileListWithinBudget
	// has the budget's cut).
	s.cfg.Sandbox.AnswerBudget = 0
	var l ListWorkspaceFilesOutput
	text := mustCall(t, connectClient(t, s, nil), "list_workspace_files", map[string]any{"pattern": "f*"}, &l)
	if len(l.Files) != workspace.DefaultListLimit || !l.Truncated || !strings.Contains(text, fmt.Sprintf("[%d entries listed", workspace.DefaultListLimit)) {
		t.Fatalf("%d files, truncated=%v, text ends %q", len(l.Files), l.Truncated, text[max(0, len(text)-60):])
	}
}

// TestFilesIncompleteSaid: when the watcher could not follow every change,
// the result says its files may be incomplete instead of passing them for
// the whole list.
func TestFilesIncompleteSaid(t *testing.T) {
	for _, incomplete := range []bool{false, true} {
		var out ExecuteCodeOutput
		listFiles(&out, workspace.Report{Incomplete: incomplete})
		text := answerContent(&out, nil)[0].(*mcp.TextContent).Text
		if said := strings.Contains(text, "may be incomplete"); said != incomplete {
			t.Errorf("incomplete %v: %q", incomplete, text)
		}
	}
}
