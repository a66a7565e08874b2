package runner

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The protocol's names as Python writes them (see PROTOCOL.md).
var (
	// A frame built, or described, as a dict literal: {"type": "call", ...},
	// and the zygote's preformatted b'{"type":"exited",...}'.
	pyFrameLiteral = regexp.MustCompile(`\{\s*"type"\s*:\s*"(\w+)"`)
	// A received frame's type checked: msg.get("type") != "reply".
	pyFrameCheck = regexp.MustCompile(`\.get\(\s*"type"\s*\)\s*[!=]=\s*"(\w+)"`)
	// An error's dict has a "type" too ({"type": "SystemExit", ...}): it is
	// the value of a frame's "error", or cut_error's argument.
	pyErrorBefore = regexp.MustCompile(`(?:"error"\s*:|cut_error\()\s*$`)
	// A host call: request("tool", ...), arequest(...), _request(...).
	pyMethod = regexp.MustCompile(`\b_?a?request\(\s*"(\w+)"`)
)

// protocolSide is the names one side of the protocol uses, each with where
// it was seen.
type protocolSide struct {
	frames, methods map[string]string
}

// goSide is what package channel defines: its Type and Method constants.
func goSide(t *testing.T) protocolSide {
	t.Helper()
	side := protocolSide{frames: map[string]string{}, methods: map[string]string{}}
	for name, value := range goConstants(t, filepath.Join("..", "channel", "protocol.go")) {
		switch {
		case strings.HasPrefix(name, "Type"):
			side.frames[value] = "channel." + name
		case strings.HasPrefix(name, "Method"):
			side.methods[value] = "channel." + name
		}
	}
	if len(side.frames) == 0 || len(side.methods) == 0 {
		t.Fatalf("no Type or Method constants in package channel: %+v", side)
	}
	return side
}

// goConstants returns the string constants a Go file declares, by name.
func goConstants(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out
}

// pythonSide is what the embedded Python and the codegen templates (the
// raw strings of internal/codegen, the Python it emits) send or handle.
func pythonSide(t *testing.T) protocolSide {
	t.Helper()
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{}
	for _, f := range files {
		sources[f.Path] = string(f.Data)
	}
	templates, err := filepath.Glob(filepath.Join("..", "codegen", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range templates {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var raw []string
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(lit.Value, "`") {
				raw = append(raw, strings.Trim(lit.Value, "`"))
			}
			return true
		})
		sources[path] = strings.Join(raw, "\n")
	}
	side := protocolSide{frames: map[string]string{}, methods: map[string]string{}}
	for path, src := range sources {
		collectPython(side, path, src)
	}
	if len(side.frames) == 0 || len(side.methods) == 0 {
		t.Fatalf("found no frames or host calls in the Python: %+v", side)
	}
	return side
}

// collectPython adds the frame types and methods one Python source names.
func collectPython(side protocolSide, path, src string) {
	add := func(m map[string]string, name string) {
		if _, ok := m[name]; !ok {
			m[name] = path
		}
	}
	for _, loc := range pyFrameLiteral.FindAllStringSubmatchIndex(src, -1) {
		if !pyErrorBefore.MatchString(src[:loc[0]]) {
			add(side.frames, src[loc[2]:loc[3]])
		}
	}
	for _, m := range pyFrameCheck.FindAllStringSubmatch(src, -1) {
		add(side.frames, m[1])
	}
	for _, m := range pyMethod.FindAllStringSubmatch(src, -1) {
		add(side.methods, m[1])
	}
}

// mismatches states what package channel defines (goNames) and the other
// side (its names, seen where) does not name, and the other way round.
func mismatches(goNames, names map[string]string, what, side string) []string {
	var out []string
	for name, where := range names {
		if _, ok := goNames[name]; !ok {
			out = append(out, fmt.Sprintf("%s names the %s %q (%s), which package channel does not define", side, what, name, where))
		}
	}
	for name, where := range goNames {
		if _, ok := names[name]; !ok {
			out = append(out, fmt.Sprintf("%s defines the %s %q, which %s does not name", where, what, name, side))
		}
	}
	slices.Sort(out)
	return out
}

// contract is every mismatch between package channel and the Python.
func contract(goNames, py protocolSide) []string {
	return append(mismatches(goNames.frames, py.frames, "frame type", "the Python"),
		mismatches(goNames.methods, py.methods, "host-call method", "the Python")...)
}

// TestProtocolContract holds the two halves of the host↔runner protocol
// (PROTOCOL.md) to the same names: every frame type and host-call method
// the Python sends or handles is a constant of package channel, every such
// constant is used by the Python, and the host's call handler answers
// exactly those methods.
func TestProtocolContract(t *testing.T) {
	goNames := goSide(t)
	for _, m := range contract(goNames, pythonSide(t)) {
		t.Error(m)
	}
	for _, m := range mismatches(goNames.methods, handledMethods(t, goNames), "host-call method", "internal/server's HandleCall") {
		t.Error(m)
	}
}

// handledMethods returns the case values of the method switch of
// internal/server's HandleCall, resolved through channel's constants.
func handledMethods(t *testing.T, goNames protocolSide) map[string]string {
	t.Helper()
	byConst := map[string]string{}
	for value, name := range goNames.methods {
		byConst[name] = value
	}
	path := filepath.Join("..", "server", "exec_calls.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "HandleCall" {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				switch e := e.(type) {
				case *ast.BasicLit:
					v, _ := strconv.Unquote(e.Value)
					t.Errorf("%s: HandleCall's case %s is a literal, not package channel's constant", path, e.Value)
					out[v] = path
				case *ast.SelectorExpr:
					name := "channel." + e.Sel.Name
					v, ok := byConst[name]
					if !ok {
						t.Errorf("%s: HandleCall's case %s is not a Method constant of package channel", path, name)
						v = name
					}
					out[v] = path
				}
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatalf("%s: found no HandleCall switch", path)
	}
	return out
}

// TestProtocolContractCatchesMismatches shows that the contract fails on a
// name either side has and the other lacks.
func TestProtocolContractCatchesMismatches(t *testing.T) {
	goNames := protocolSide{
		frames:  map[string]string{"exec": "channel.TypeExec", "result": "channel.TypeResult"},
		methods: map[string]string{"tool": "channel.MethodTool"},
	}
	tests := []struct {
		name, python, want string
	}{
		{"agree", `chan.send({"type": "result", "ok": True, "error": {"type": "SandboxError"}})
if req.get("type") != "exec": pass
request("tool", {})`, ""},
		{"python sends a frame Go lacks", `{"type": "result"} {"type": "exec"} {"type": "bogus"} request("tool", {})`,
			`the Python names the frame type "bogus" (x.py), which package channel does not define`},
		{"python handles a frame Go lacks", `{"type": "result"} {"type": "exec"} msg.get("type") == "bogus" request("tool", {})`,
			`the Python names the frame type "bogus" (x.py), which package channel does not define`},
		{"python calls a method Go lacks", `{"type": "result"} {"type": "exec"} request("tool", {}) await arequest("bogus", {})`,
			`the Python names the host-call method "bogus" (x.py), which package channel does not define`},
		{"go defines a frame no python uses", `{"type": "result"} request("tool", {})`,
			`channel.TypeExec defines the frame type "exec", which the Python does not name`},
		{"go defines a method no python sends", `{"type": "result"} {"type": "exec"}`,
			`channel.MethodTool defines the host-call method "tool", which the Python does not name`},
		{"an error's type is no frame", `{"type": "result"} {"type": "exec"} request("tool", {}) cut_error({"type": "SystemExit"}, limits)`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			py := protocolSide{frames: map[string]string{}, methods: map[string]string{}}
			collectPython(py, "x.py", tt.python)
			got := strings.Join(contract(goNames, py), "\n")
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestPythonTestsAreNotEmbedded: the runner's Python unit tests stay out
// of the image every sandbox mounts.
func TestPythonTestsAreNotEmbedded(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasPrefix(f.Path, "tests") || strings.Contains(f.Path, "test_") {
			t.Errorf("%s is embedded in the runner", f.Path)
		}
	}
}
