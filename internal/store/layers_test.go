package store

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports holds the layering of STYLE.md for this package: store is a
// leaf that knows nothing of MCP or of codecell's other packages.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range []string{"github.com/modelcontextprotocol/", "github.com/codecell/codecell/"} {
				if strings.HasPrefix(path, bad) {
					t.Errorf("%s imports %s, against the layering", f, path)
				}
			}
		}
	}
}
