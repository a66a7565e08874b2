package internal_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// STYLE.md: every subprocess has a process group, Pdeathsig, a Cancel that
// ends the group and a non-zero WaitDelay. internal/proc's Command sets all
// four; these tests hold that every host subprocess is made by it.

// execAllowed lists the non-test files, relative to the module's root, that
// may refer to exec.Command or exec.CommandContext, and why.
var execAllowed = map[string]string{
	"internal/proc/proc.go": "the constructor itself",
	// mcp.CommandTransport takes an *exec.Cmd, which callers build with
	// proc.Command(context.Background(), ...): nothing to allow.
}

// attrAllowed lists the non-test files that may build a syscall.SysProcAttr
// without both Setpgid and Pdeathsig SIGKILL (replacing proc.Command's), and
// why.
var attrAllowed = map[string]string{
	"internal/cgroup/group.go":        "fills in a nil SysProcAttr to set CgroupFD; a Cmd from proc.Command has one",
	"internal/store/pgtest/pgtest.go": "postgres takes SIGQUIT (immediate shutdown) as its parent-death signal, so its backends exit too; it keeps Setpgid",
}

// subprocessViolations reports, for one parsed file, each reference to
// os/exec's Command or CommandContext and each syscall.SysProcAttr literal
// that lacks Setpgid: true or Pdeathsig: syscall.SIGKILL.
func subprocessViolations(fset *token.FileSet, f *ast.File, allowExec, allowAttr bool) []string {
	var execName, syscallName string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch path {
		case "os/exec":
			execName = name
		case "syscall":
			syscallName = name
		}
	}
	var out []string
	report := func(n ast.Node, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
	}
	if execName == "." && !allowExec {
		report(f, "dot-imports os/exec")
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			x, ok := n.X.(*ast.Ident)
			if ok && execName != "" && x.Name == execName && (n.Sel.Name == "Command" || n.Sel.Name == "CommandContext") && !allowExec {
				report(n, "%s.%s: build host subprocesses with proc.Command (internal/proc), or allow the file in execAllowed with a reason", x.Name, n.Sel.Name)
			}
		case *ast.CompositeLit:
			sel, ok := n.Type.(*ast.SelectorExpr)
			if !ok || syscallName == "" || allowAttr {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != syscallName || sel.Sel.Name != "SysProcAttr" {
				return true
			}
			var pgid, deathsig bool
			for _, e := range n.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				if key == nil {
					continue
				}
				switch key.Name {
				case "Setpgid":
					v, _ := kv.Value.(*ast.Ident)
					pgid = v != nil && v.Name == "true"
				case "Pdeathsig":
					v, _ := kv.Value.(*ast.SelectorExpr)
					deathsig = v != nil && v.Sel.Name == "SIGKILL"
				}
			}
			if !pgid || !deathsig {
				report(n, "a SysProcAttr without Setpgid: true and Pdeathsig: syscall.SIGKILL replaces proc.Command's; keep both, or allow the file in attrAllowed with a reason")
			}
		}
		return true
	})
	return out
}

func TestSubprocessesUseProc(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel("..", path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		_, allowExec := execAllowed[rel]
		_, allowAttr := attrAllowed[rel]
		for _, v := range subprocessViolations(fset, f, allowExec, allowAttr) {
			t.Error(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, list := range []map[string]string{execAllowed, attrAllowed} {
		for file := range list {
			if !seen[file] {
				t.Errorf("%s is allowed but does not exist: remove it from the list", file)
			}
		}
	}
}

// TestSubprocessRuleRejects shows that the check fails for what it is meant
// to catch.
func TestSubprocessRuleRejects(t *testing.T) {
	tests := []struct {
		name, src string
		want      int
	}{
		{"exec.Command", `package p; import "os/exec"; var c = exec.Command("true")`, 1},
		{"exec.CommandContext", `package p; import ("context"; "os/exec"); var c = exec.CommandContext(context.Background(), "true")`, 1},
		{"renamed import", `package p; import x "os/exec"; var f = x.Command`, 1},
		{"dot import", `package p; import . "os/exec"; var c = Command("true")`, 1},
		{"attributes dropped", `package p; import "syscall"; var a = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}`, 1},
		{"other signal", `package p; import "syscall"; var a = syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}`, 1},
		{"attributes kept", `package p; import "syscall"; var a = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Noctty: true}`, 0},
		{"exec.Cmd type", `package p; import "os/exec"; var c *exec.Cmd; var _ = exec.LookPath`, 0},
		{"another package's Command", `package p; import "github.com/codecell/codecell/internal/proc"; var f = proc.Command`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if got := subprocessViolations(fset, f, false, false); len(got) != tt.want {
				t.Errorf("got %d violations %q, want %d", len(got), got, tt.want)
			}
		})
	}
}
