package internal_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden states the layering of STYLE.md as data: each package may not
// import the packages listed for it (a prefix match on the import path).
// Dependencies run one way, toward the leaves; the sandbox and its helpers
// know nothing of MCP.
var forbidden = map[string][]string{
	"channel":   {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"config":    {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"seccomp":   {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"runner":    {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"analysis":  {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"bench":     {"github.com/codecell/codecell/internal/server", "github.com/codecell/codecell/internal/sandbox"},
	"pii":       {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"store":     {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"catalog":   {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"envs":      {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/server"},
	"upstream":  {"github.com/codecell/codecell/internal/server", "github.com/codecell/codecell/internal/sandbox"},
	"sandbox":   {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/server", "github.com/codecell/codecell/internal/httpapi", "github.com/codecell/codecell/internal/config"},
	"server":    {"github.com/codecell/codecell/internal/httpapi"},
	"httpapi":   {"github.com/codecell/codecell/internal/server"},
	"workspace": {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"skills":    {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/server", "github.com/codecell/codecell/internal/sandbox"},
	"dashboard": {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"metrics":   {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"procdir":   {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"egress":    {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"cgroup":    {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"mountinfo": {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
	"textcut":   {"github.com/modelcontextprotocol/", "github.com/codecell/codecell/internal/"},
}

func TestLayering(t *testing.T) {
	for pkg, bad := range forbidden {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no files (%v)", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range bad {
					if strings.HasPrefix(path, b) && !(pkg == "sandbox" && isAllowedLeaf(path)) && !isSharedLeaf(path) {
						t.Errorf("%s imports %s, against the layering", f, path)
					}
				}
			}
		}
	}
}

// isSharedLeaf says whether path is a package of helpers that imports
// nothing of codecell's (checked above), so any package may use it.
func isSharedLeaf(path string) bool {
	return path == "github.com/codecell/codecell/internal/mountinfo" || path == "github.com/codecell/codecell/internal/textcut"
}

// isAllowedLeaf lists the leaf packages the sandbox builds on.
func isAllowedLeaf(path string) bool {
	switch path {
	case "github.com/codecell/codecell/internal/channel", "github.com/codecell/codecell/internal/runner", "github.com/codecell/codecell/internal/egress":
		return true
	}
	return false
}
