package server

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/workspace"
)

// Bounds on execute_code_file's args.
const (
	maxArgs     = 256
	maxArgBytes = 64 << 10 // all of them together
)

// codeDir is where initialize_code_file puts files it names itself.
const codeDir = "code"

// InitializeCodeFileInput is the input of initialize_code_file.
type InitializeCodeFileInput struct {
	Content   string `json:"content" jsonschema:"Python source to start the file with."`
	Filename  string `json:"filename,omitempty" jsonschema:"A .py path relative to the workspace. Default: a new code/cell_N.py."`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"Replace filename if it exists; without it an existing file is refused."`
}

// AppendCodeFileInput is the input of append_to_code_file.
type AppendCodeFileInput struct {
	Path    string `json:"path" jsonschema:"The code file's path in the workspace."`
	Content string `json:"content" jsonschema:"Python source to add at the end, on a new line."`
}

// ReadCodeFileInput is the input of read_code_file.
type ReadCodeFileInput struct {
	Path string `json:"path" jsonschema:"The code file's path in the workspace."`
}

// CodeFileOutput describes a code file.
type CodeFileOutput struct {
	Path    string `json:"path" jsonschema:"The file's path in the workspace."`
	Size    int64  `json:"size" jsonschema:"Bytes."`
	Lines   int    `json:"lines"`
	Content string `json:"content,omitempty" jsonschema:"The source (read_code_file only)."`
}

// ExecuteCodeFileInput is the input of execute_code_file.
type ExecuteCodeFileInput struct {
	Path           string   `json:"path" jsonschema:"The code file's path in the workspace."`
	SessionID      string   `json:"session_id,omitempty" jsonschema:"As execute_code's session_id."`
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty" jsonschema:"As execute_code's timeout_seconds."`
	Args           []string `json:"args,omitempty" jsonschema:"Command-line arguments: sys.argv[1:]."`
}

// addCodeFileTools adds the code-file tools of docs/tools.md, "Code files" (part of the exec
// toolset): files built up call by call, then run like execute_code.
func (s *Server) addCodeFileTools() {
	addTool(s, "exec", &mcp.Tool{
		Name:        "initialize_code_file",
		Title:       "Start a Python file",
		Description: "Create a .py file in the workspace and return its path; build it up with append_to_code_file, run it with execute_code_file.",
	}, s.initializeCodeFile)
	addTool(s, "exec", &mcp.Tool{
		Name:        "append_to_code_file",
		Title:       "Add to a Python file",
		Description: "Append code to a code file.",
	}, s.appendToCodeFile)
	addTool(s, "exec", &mcp.Tool{
		Name:        "read_code_file",
		Title:       "Read a Python file",
		Description: "Return a code file's source.",
	}, s.readCodeFile)
	addTool(s, "exec", &mcp.Tool{
		Name:        "execute_code_file",
		Title:       "Run a Python file",
		Description: "Run a workspace .py file in the sandbox, as execute_code runs code, with args as sys.argv[1:].",
	}, s.executeCodeFile)
}

func (s *Server) initializeCodeFile(ctx context.Context, req *mcp.CallToolRequest, in InitializeCodeFileInput) (*mcp.CallToolResult, CodeFileOutput, error) {
	ns := namespaceOf(req)
	if len(in.Content) > maxCode {
		return nil, CodeFileOutput{}, fieldError("content", "is %d bytes; the limit is %d (1 MiB)", len(in.Content), maxCode)
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return nil, CodeFileOutput{}, err
	}
	defer ws.Close()
	var e workspace.Entry
	verb := "created"
	if in.Filename == "" {
		e, err = newCodeFile(ws, []byte(in.Content))
	} else {
		var p string
		if p, err = s.pathArg(ctx, ns, in.Filename); err != nil {
			return nil, CodeFileOutput{}, err
		}
		if clean, cerr := workspace.Clean(p); cerr == nil && (path.Ext(clean) != ".py" || path.Base(clean) == ".py") {
			return nil, CodeFileOutput{}, fieldError("filename", "%q does not end in .py", in.Filename)
		}
		// Create first, so that a file the model forgot it had (or another
		// agent's) is not lost without a word.
		e, err = ws.Create(p, []byte(in.Content))
		if errors.Is(err, workspace.ErrExist) {
			if !in.Overwrite {
				return nil, CodeFileOutput{}, fieldError("filename", "%q exists; pass overwrite: true to replace it, or use append_to_code_file to add to it", in.Filename)
			}
			verb = "replaced"
			e, err = ws.Write(p, []byte(in.Content))
		}
	}
	if err != nil {
		return nil, CodeFileOutput{}, s.wsError(ctx, ns, "filename", err)
	}
	return s.codeFileResult(ctx, ns, verb, e, in.Content, false)
}

// newCodeFile creates code/cell_N.py with the next N after the highest
// there, and a later one should another call take it first.
func newCodeFile(ws *workspace.Workspace, content []byte) (workspace.Entry, error) {
	n := 0
	if l, err := ws.List(codeDir, codeDir+"/cell_*.py", 0); err == nil {
		for _, e := range l.Entries {
			num := strings.TrimSuffix(strings.TrimPrefix(e.Path, codeDir+"/cell_"), ".py")
			if k, err := strconv.Atoi(num); err == nil && k > n {
				n = k
			}
		}
	}
	for range 100 {
		n++
		e, err := ws.Create(fmt.Sprintf("%s/cell_%d.py", codeDir, n), content)
		if !errors.Is(err, workspace.ErrExist) {
			return e, err
		}
	}
	return workspace.Entry{}, errors.New("no free code file name; give a filename")
}

func (s *Server) appendToCodeFile(ctx context.Context, req *mcp.CallToolRequest, in AppendCodeFileInput) (*mcp.CallToolResult, CodeFileOutput, error) {
	ns := namespaceOf(req)
	p, err := s.pathArg(ctx, ns, in.Path)
	if err != nil {
		return nil, CodeFileOutput{}, err
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return nil, CodeFileOutput{}, err
	}
	defer ws.Close()
	old, err := ws.ReadFile(p, maxCode)
	if err != nil {
		return nil, CodeFileOutput{}, s.wsError(ctx, ns, "path", err)
	}
	// The file as Append will leave it, with the newline it adds.
	code := string(old)
	if code != "" && !strings.HasSuffix(code, "\n") {
		code += "\n"
	}
	code += in.Content
	if len(code) > maxCode {
		return nil, CodeFileOutput{}, fieldError("content", "would make the file %d bytes; a code file is at most %d (1 MiB)", len(code), maxCode)
	}
	e, err := ws.Append(p, []byte(in.Content), true)
	if err != nil {
		return nil, CodeFileOutput{}, s.wsError(ctx, ns, "path", err)
	}
	return s.codeFileResult(ctx, ns, "appended to", e, code, false)
}

func (s *Server) readCodeFile(ctx context.Context, req *mcp.CallToolRequest, in ReadCodeFileInput) (*mcp.CallToolResult, CodeFileOutput, error) {
	ns := namespaceOf(req)
	e, code, err := s.loadCodeFile(ctx, ns, in.Path)
	if err != nil {
		return nil, CodeFileOutput{}, err
	}
	code = s.fitText(code, s.textRoom(req), "read_workspace_file reads the whole file in pages")
	return s.codeFileResult(ctx, ns, "", e, code, true)
}

// loadCodeFile reads a code file for reading or running it.
func (s *Server) loadCodeFile(ctx context.Context, ns, name string) (workspace.Entry, string, error) {
	p, err := s.pathArg(ctx, ns, name)
	if err != nil {
		return workspace.Entry{}, "", err
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return workspace.Entry{}, "", err
	}
	defer ws.Close()
	code, err := ws.ReadFile(p, maxCode)
	if err != nil {
		return workspace.Entry{}, "", s.wsError(ctx, ns, "path", err)
	}
	if !utf8.Valid(code) {
		return workspace.Entry{}, "", fieldError("path", "%q is not UTF-8 text", name)
	}
	clean, _ := workspace.Clean(p)
	return workspace.Entry{Path: clean, Size: int64(len(code))}, string(code), nil
}

// codeFileResult describes a code file to the model; with withContent its
// source too, with personal data tokenized like any workspace file's.
func (s *Server) codeFileResult(ctx context.Context, ns, verb string, e workspace.Entry, code string, withContent bool) (*mcp.CallToolResult, CodeFileOutput, error) {
	out := CodeFileOutput{Path: e.Path, Size: e.Size, Lines: lineCount(code)}
	if !withContent {
		return textResult(fmt.Sprintf("%s %s (%d lines)\n", verb, out.Path, out.Lines)), out, nil
	}
	out.Content = code
	text := out.Content
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return textResult(fmt.Sprintf("# %s\n%s", out.Path, text)), out, nil
}

func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func (s *Server) executeCodeFile(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeFileInput) (*mcp.CallToolResult, ExecuteCodeOutput, error) {
	ns := namespaceOf(req)
	if err := checkArgs("args", in.Args); err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	e, code, err := s.loadCodeFile(ctx, ns, in.Path)
	if err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	if strings.TrimSpace(code) == "" {
		return nil, ExecuteCodeOutput{}, fieldError("path", "%q holds no code", in.Path)
	}
	timeout, err := s.checkExecInput(ExecuteCodeInput{Code: code, SessionID: in.SessionID, TimeoutSeconds: in.TimeoutSeconds}, req)
	if err != nil {
		return nil, ExecuteCodeOutput{}, err
	}
	return s.runCode(ctx, job{
		Namespace: ns,
		Code:      code,
		Args:      in.Args,
		Filename:  e.Path,
		SessionID: in.SessionID,
		Timeout:   timeout,
		Req:       req,
	})
}
