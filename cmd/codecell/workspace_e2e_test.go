package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/workspace"
)

// TestWorkspaceAndCodeFilesE2E: the workspace tools and sandboxed code see
// one workspace, under production isolation (as root the code runs as
// nobody, so what the host writes must be the sandbox user's); a link the
// code makes to a host file cannot be read or listed through the tools, and
// a FIFO it makes blocks none of them.
func TestWorkspaceAndCodeFilesE2E(t *testing.T) {
	requireProduction(t)
	cs := connectStdio(t, testConfig)

	mustOK := func(res *mcp.CallToolResult, text string) {
		t.Helper()
		if res.IsError {
			t.Fatalf("tool error: %s", text)
		}
	}
	mustOK(callToolInto(t, cs, "write_workspace_file", map[string]any{"path": "in/data.txt", "content": "from the host\n"}, nil))

	// The code reads the host's file, changes it, and writes beside it in
	// the directory the host made.
	res, out := call(t, cs, map[string]any{"code": `
print(open("in/data.txt").read(), end="")
with open("in/data.txt", "a") as f:
    f.write("and the code\n")
with open("in/result.csv", "w") as f:
    f.write("a,b\n1,2\n")
`})
	if !out.OK || out.Stdout != "from the host\n" {
		t.Fatalf("execute_code: %+v", out)
	}
	if !slices.Equal(out.Files, []string{"in/data.txt", "in/result.csv"}) {
		t.Fatalf("files %q", out.Files)
	}
	var links []string
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l.URI)
		}
	}
	if !slices.Equal(links, []string{"file:///workspace/in/data.txt", "file:///workspace/in/result.csv"}) {
		t.Errorf("resource links %q", links)
	}
	var r server.ReadWorkspaceFileOutput
	mustOK(callToolInto(t, cs, "read_workspace_file", map[string]any{"path": "in/result.csv"}, &r))
	if r.Content != "a,b\n1,2\n" || r.Encoding != "text" {
		t.Fatalf("read result.csv: %+v", r)
	}
	mustOK(callToolInto(t, cs, "read_workspace_file", map[string]any{"path": "in/data.txt"}, &r))
	if r.Content != "from the host\nand the code\n" {
		t.Fatalf("read data.txt: %+v", r)
	}

	// A code file built in two steps, run with arguments.
	var f server.CodeFileOutput
	mustOK(callToolInto(t, cs, "initialize_code_file", map[string]any{"content": "import sys\nprint(sys.argv[1:])"}, &f))
	mustOK(callToolInto(t, cs, "append_to_code_file", map[string]any{"path": f.Path, "content": "print(sys.argv[0])\nopen('made_by_file.txt', 'w').write('x')"}, nil))
	res, text := callToolInto(t, cs, "execute_code_file", map[string]any{"path": f.Path, "args": []string{"a", "b c"}}, &out)
	mustOK(res, text)
	if want := "['a', 'b c']\n" + f.Path + "\n"; out.Stdout != want {
		t.Fatalf("execute_code_file stdout %q, want %q", out.Stdout, want)
	}
	if !slices.Equal(out.Files, []string{"made_by_file.txt"}) {
		t.Errorf("execute_code_file files %q", out.Files)
	}

	// Links the code makes to host files lead nowhere through the tools.
	_, out = call(t, cs, map[string]any{"code": `
import os
os.symlink("/etc/passwd", "pw")
os.symlink("/etc", "etc")
os.symlink("../../../../../../etc/passwd", "rel")
`})
	if !out.OK {
		t.Fatalf("make links: %+v", out)
	}
	for _, p := range []string{"pw", "etc/passwd", "rel"} {
		res, text := callToolInto(t, cs, "read_workspace_file", map[string]any{"path": p}, nil)
		if !res.IsError || !strings.Contains(text, "symbolic link") || strings.Contains(text, "root:") {
			t.Errorf("read %q through a link out: isError=%v %q", p, res.IsError, text)
		}
	}
	res, text = callToolInto(t, cs, "read_code_file", map[string]any{"path": "pw"}, nil)
	if !res.IsError || strings.Contains(text, "root:") {
		t.Errorf("read_code_file through a link out: %q", text)
	}

	// A listing shows the links and does not follow them.
	var l server.ListWorkspaceFilesOutput
	mustOK(callToolInto(t, cs, "list_workspace_files", nil, &l))
	listed := map[string]bool{}
	for _, e := range l.Files {
		if strings.HasPrefix(e.Path, "etc/") {
			t.Fatalf("listed %q through the link to /etc", e.Path)
		}
		if e.Symlink {
			listed[e.Path] = true
		}
	}
	if len(listed) != 3 || !listed["pw"] || !listed["etc"] || !listed["rel"] {
		t.Errorf("links listed: %v", listed)
	}

	// A FIFO the code makes blocks no tool.
	if _, out = call(t, cs, map[string]any{"code": `import os; os.mkfifo("pipe")`}); !out.OK {
		t.Fatalf("mkfifo: %+v", out)
	}
	for tool, args := range map[string]map[string]any{
		"read_workspace_file": {"path": "pipe"},
		"read_code_file":      {"path": "pipe"},
		"append_to_code_file": {"path": "pipe", "content": "x"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		cancel()
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "not a regular file") {
			t.Errorf("%s on a FIFO: %v %q", tool, err, textOf(res))
		}
	}
}

// TestWorkspaceImageE2E: where codecell can mount images, a workspace that
// was a plain directory moves into its image at the first start with
// nothing lost; the quota holds in the code (an OSError naming it), the
// next execution runs, list_workspace_files says the usage, and the image
// is unmounted when the server exits and mounted again by the next.
func TestWorkspaceImageE2E(t *testing.T) {
	requireProduction(t)
	if err := workspace.ProbeImages(t.TempDir()); err != nil {
		t.Skipf("workspace images unavailable: %v", err)
	}
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1,
		"workspaceQuota": "8MiB", "workspaceEntries": 500}}`)
	ws := filepath.Join(dataDir, "workspaces", "default")
	if err := os.MkdirAll(filepath.Join(ws, "old/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "old/deep/kept.txt"), []byte("from before"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("deep/kept.txt", filepath.Join(ws, "old/link")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dataDir, 0o711)
	os.Chmod(filepath.Dir(ws), 0o711)
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, sandbox.UID, sandbox.UID) })

	cs := serveStdio(t, cfgPath, dataDir, nil)
	_, out := call(t, cs, map[string]any{"code": "print(open('old/link').read())\nimport shutil\nprint(shutil.disk_usage('.').total > 0)"})
	if !out.OK || out.Stdout != "from before\nTrue\n" {
		t.Fatalf("the moved workspace: %+v %+v", out, out.Error)
	}
	_, out = call(t, cs, map[string]any{"code": "open('big', 'wb').write(b'x' * (64 << 20))"})
	if out.OK || out.Error.Type != "OSError" || !strings.Contains(out.Error.Message, "quota") {
		t.Fatalf("past the quota: %+v", out.Error)
	}
	if _, out = call(t, cs, map[string]any{"code": "import os\nos.remove('big')\nprint('ok')"}); !out.OK {
		t.Fatalf("the next execution: %+v", out.Error)
	}
	var l server.ListWorkspaceFilesOutput
	if res, text := callToolInto(t, cs, "list_workspace_files", map[string]any{}, &l); res.IsError || l.Usage == nil ||
		l.Usage.Enforcement != "kernel" || l.Usage.Quota != 8<<20 || l.Usage.Entries != 4 {
		t.Fatalf("list: %s %+v", text, l.Usage)
	}
	cs.Close()
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("still mounted after the server exited: %d entries", len(ents))
	}
	cs = serveStdio(t, cfgPath, dataDir, nil)
	defer cs.Close()
	if _, out = call(t, cs, map[string]any{"code": "print(open('old/deep/kept.txt').read())"}); out.Stdout != "from before\n" {
		t.Fatalf("after a restart: %+v %+v", out, out.Error)
	}
}
