package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/bench"
	"github.com/codecell/codecell/internal/config"
)

var updateSurface = flag.Bool("update", false, "rewrite testdata/tools.golden.json (TestToolSurface)")

// surfaceGolden pins the tool surface, the product's headline: what a
// model is given to read in every conversation.
var surfaceGolden = filepath.Join("..", "..", "testdata", "tools.golden.json")

// surface is what a client lists of one toolset choice.
type surface struct {
	Tokens       int         `json:"tokens"` // cl100k_base, as bench.ToolsText renders it
	Instructions string      `json:"instructions"`
	Tools        []*mcp.Tool `json:"tools"`
}

// TestToolSurface compares the tool lists of the default (lean) and the
// "all" toolsets, names, descriptions and schemas, with
// testdata/tools.golden.json. A change to the surface must update it on
// purpose (go test ./cmd/codecell -run TestToolSurface -update), and the
// failure says what it costs in tokens.
func TestToolSurface(t *testing.T) {
	tok, err := bench.NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]surface{}
	for name, toolsets := range map[string][]string{"default": nil, "all": config.AllToolsets} {
		tools, instructions := listed(t, toolsets)
		got[name] = surface{Tokens: tok.Count(bench.ToolsText(instructions, tools)), Instructions: instructions, Tools: tools}
	}
	raw, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, '\n')
	if *updateSurface {
		if err := os.WriteFile(surfaceGolden, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(surfaceGolden)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/codecell -run TestToolSurface -update writes it)", err)
	}
	if bytes.Equal(raw, want) {
		return
	}
	var old map[string]struct {
		Tokens       int               `json:"tokens"`
		Instructions string            `json:"instructions"`
		Tools        []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(want, &old); err != nil {
		t.Fatalf("%s: %v", surfaceGolden, err)
	}
	var report []string
	for _, name := range []string{"default", "all"} {
		o, g := old[name], got[name]
		report = append(report, fmt.Sprintf("%s: %d tokens, was %d (%+d)", name, g.Tokens, o.Tokens, g.Tokens-o.Tokens))
		if o.Instructions != g.Instructions {
			report = append(report, "  the instructions changed")
		}
		before := map[string]string{}
		for _, r := range o.Tools {
			var tl struct{ Name string }
			json.Unmarshal(r, &tl)
			before[tl.Name] = string(r)
		}
		for _, tl := range g.Tools {
			r, _ := json.Marshal(tl)
			b, ok := before[tl.Name]
			switch {
			case !ok:
				report = append(report, "  new tool "+tl.Name)
			case !jsonEqual(b, string(r)):
				report = append(report, "  changed "+tl.Name)
			}
			delete(before, tl.Name)
		}
		gone := slices.Sorted(func(yield func(string) bool) {
			for n := range before {
				if !yield(n) {
					return
				}
			}
		})
		for _, n := range gone {
			report = append(report, "  removed "+n)
		}
	}
	t.Errorf("the tool surface differs from %s; if that is meant, run go test ./cmd/codecell -run TestToolSurface -update:\n%s",
		surfaceGolden, strings.Join(report, "\n"))
}

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return bytes.Equal(ra, rb)
}
