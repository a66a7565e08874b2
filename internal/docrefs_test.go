package internal_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// specRef matches a citation of the product specification by section, a
// document the repository does not hold. (Spelt in two parts so that this
// file does not match itself.)
var specRef = regexp.MustCompile(`SPEC\s*` + "\u00a7")

// TestNoSpecCitations: the code cites what its users have (the README,
// docs/tools.md, docs/config.md, BENCHMARKS.md) or states the rule in
// place; it does not cite sections of SPEC, which they do not have.
func TestNoSpecCitations(t *testing.T) {
	n := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		n++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if specRef.MatchString(line) {
				t.Errorf("%s:%d cites a section of SPEC, which is not in the repository: point to the README or docs/, or state the rule here", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read only %d Go files: is the test running in internal/?", n)
	}
}

func TestSpecRefMatches(t *testing.T) {
	for s, want := range map[string]bool{
		"// see SPEC \u00a76": true, "(SPEC\u00a74.1)": true, "SPEC.md": false, "the spec \u00a76": false,
	} {
		if got := specRef.MatchString(s); got != want {
			t.Errorf("specRef.MatchString(%q) = %v, want %v", s, got, want)
		}
	}
}
