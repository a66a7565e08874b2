package internal_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers places every package of the module in a DAG, as go/build's
// deps_test.go does, and is an allow-list: a package it does not place fails
// TestLayering until someone places it.
//
// "a, b < c, d" means that c and d may import a and b, and whatever a and b
// may import. Each package appears on the right of exactly one rule, after
// every package on its left has been placed, so the graph cannot have a
// cycle. NONE is the empty set: a package placed on NONE imports nothing of
// codecell's. MCP stands for the MCP Go SDK (github.com/modelcontextprotocol/).
// The standard library and other third-party libraries are not checked.
//
// Packages are named by their directory below internal/ ("store/pgtest"),
// or below the module's root when outside internal/ ("cmd/codecell").
//
// STYLE.md: dependencies run one way, toward the leaves; the sandbox, the
// store and the workspace know nothing of MCP.
const layers = `
	# Leaves: the standard library only.
	NONE < channel, dashboard, editdist, egress, metrics,
	       mountinfo, pii, proc, procdir, seccomp, store, textcut;
	editdist < analysis, catalog;
	proc < runner; # it compiles itself with the operator's interpreter
	editdist, egress < config;

	# Test kits, imported by tests (and by the bench) only.
	NONE < dashboard/browsertest, gate/gatetest, httpapi/httpapitest;
	proc < store/pgtest, testnet;

	NONE < MCP;

	mountinfo < cgroup;
	mountinfo, proc < workspace;
	catalog < codegen;
	store < skills;

	# Isolation: the sandbox knows nothing of MCP, config or the server.
	cgroup, channel, egress, proc, runner, seccomp, textcut < sandbox;
	sandbox < envs;

	# MCP clients and servers.
	MCP < upstream/fakeupstream;
	MCP, proc < bench;
	MCP, catalog, config, proc < upstream;
	MCP, dashboard < httpapi;
	# The privacy boundary, which every way out passes: it knows nothing
	# of the server or of HTTP (httpapi takes it as an interface).
	MCP, config, metrics, pii, store < gate;
	MCP, analysis, codegen, config, envs, gate, metrics, pii, skills, store,
	     textcut, upstream, workspace < server;

	# Wiring.
	bench, httpapi, procdir, server < cmd/codecell;
`

// modulePath is the import path of the module's root.
const modulePath = "github.com/codecell/codecell"

// A graph maps each placed package to the set of packages it may import.
type graph map[string]map[string]bool

// parseLayers reads rules in the notation of layers.
func parseLayers(rules string) (graph, error) {
	g := graph{"NONE": {}}
	var text []string
	for _, line := range strings.Split(rules, "\n") {
		line, _, _ = strings.Cut(line, "#")
		text = append(text, line)
	}
	for _, rule := range strings.Split(strings.Join(text, " "), ";") {
		if strings.TrimSpace(rule) == "" {
			continue
		}
		lhs, rhs, ok := strings.Cut(rule, "<")
		if !ok || strings.Contains(rhs, "<") {
			return nil, fmt.Errorf("rule %q: want one \"<\"", strings.TrimSpace(rule))
		}
		below := map[string]bool{}
		for _, a := range splitList(lhs) {
			allowed, ok := g[a]
			if !ok {
				return nil, fmt.Errorf("rule %q: %s is used before it is placed", strings.TrimSpace(rule), a)
			}
			if a != "NONE" {
				below[a] = true
			}
			for b := range allowed {
				below[b] = true
			}
		}
		for _, c := range splitList(rhs) {
			if _, ok := g[c]; ok {
				return nil, fmt.Errorf("rule %q: %s is placed twice", strings.TrimSpace(rule), c)
			}
			g[c] = below
		}
	}
	delete(g, "NONE")
	return g, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// node names the package at import path, or "" if the rules do not check it.
func node(path string) string {
	switch {
	case strings.HasPrefix(path, "github.com/modelcontextprotocol/"):
		return "MCP"
	case strings.HasPrefix(path, modulePath+"/internal/"):
		return strings.TrimPrefix(path, modulePath+"/internal/")
	case strings.HasPrefix(path, modulePath+"/"):
		return strings.TrimPrefix(path, modulePath+"/")
	}
	return ""
}

// checkLayers reports each package of imports (package name to the import
// paths of its non-test files) that g does not place, each import g does not
// allow, and each package g places that does not exist.
func checkLayers(g graph, imports map[string][]string) []string {
	var errs []string
	for _, pkg := range slices.Sorted(mapKeys(imports)) {
		allowed, ok := g[pkg]
		if !ok {
			errs = append(errs, fmt.Sprintf("package %s is not placed in layers (internal/layers_test.go): place it", pkg))
			continue
		}
		for _, path := range imports[pkg] {
			if n := node(path); n != "" && !allowed[n] {
				errs = append(errs, fmt.Sprintf("%s imports %s, which layers does not allow", pkg, path))
			}
		}
	}
	for _, pkg := range slices.Sorted(mapKeys(g)) {
		if _, ok := imports[pkg]; !ok && pkg != "MCP" {
			errs = append(errs, fmt.Sprintf("layers places %s, which has no Go files", pkg))
		}
	}
	return errs
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// moduleImports walks the module from its root (the parent of internal/)
// and returns, for each directory with non-test Go files, the import paths
// of those files.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel("..", filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := node(modulePath + "/" + filepath.ToSlash(rel))
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if _, ok := out[pkg]; !ok {
			out[pkg] = []string{} // placed even if it imports nothing
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[pkg] = append(out[pkg], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLayering(t *testing.T) {
	g, err := parseLayers(layers)
	if err != nil {
		t.Fatal(err)
	}
	imports := moduleImports(t)
	if len(imports) < 20 {
		t.Fatalf("found only %d packages: is the test running in internal/?", len(imports))
	}
	for _, e := range checkLayers(g, imports) {
		t.Error(e)
	}
}

// TestLayeringRejects shows that the check fails for what it is meant to
// catch.
func TestLayeringRejects(t *testing.T) {
	const rules = `NONE < store, MCP; store < sandbox; sandbox, MCP < server`
	tests := []struct {
		name    string
		rules   string
		imports map[string][]string
		want    string
	}{
		{"unplaced package", rules, map[string][]string{
			"store": nil, "sandbox": nil, "server": nil, "gate": {"fmt"},
		}, "package gate is not placed"},
		{"import upward", rules, map[string][]string{
			"store": {modulePath + "/internal/sandbox"}, "sandbox": nil, "server": nil,
		}, "store imports " + modulePath + "/internal/sandbox, which layers does not allow"},
		{"MCP below the server", rules, map[string][]string{
			"store": nil, "sandbox": {"github.com/modelcontextprotocol/go-sdk/mcp"}, "server": nil,
		}, "sandbox imports github.com/modelcontextprotocol/go-sdk/mcp"},
		{"stale rule", rules, map[string][]string{"store": nil, "sandbox": nil}, "layers places server, which has no Go files"},
		{"transitive import allowed", rules, map[string][]string{
			"store": nil, "sandbox": nil, "server": {modulePath + "/internal/store", "github.com/jackc/pgx/v5"},
		}, ""},
		{"cmd placed", rules + `; server < cmd/codecell`, map[string][]string{
			"store": nil, "sandbox": nil, "server": nil, "cmd/codecell": {modulePath + "/internal/server"},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := parseLayers(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			errs := checkLayers(g, tt.imports)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Errorf("got %q, want no errors", errs)
				}
				return
			}
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tt.want) }) {
				t.Errorf("got %q, want an error containing %q", errs, tt.want)
			}
		})
	}
	for _, bad := range []string{`a < b`, `NONE < a; NONE < a`, `NONE < a < b`} {
		if _, err := parseLayers(bad); err == nil {
			t.Errorf("parseLayers(%q) = nil error, want one", bad)
		}
	}
}
