package catalog

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestIdent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"get-sum", "get_sum"},
		{"getSum", "getSum"},
		{"get_sum", "get_sum"},
		{"read_text_file", "read_text_file"},
		{"GetSum", "GetSum"},
		{"get.sum", "get_sum"},
		{"get sum", "get_sum"},
		{"get--sum", "get_sum"},
		{"get__sum", "get_sum"},
		{"get-_-sum", "get_sum"},
		{"-get-sum-", "get_sum"},
		{"__init__", "init"},
		{"_private", "private"},
		{"2fa.verify", "_2fa_verify"},
		{"123", "_123"},
		{"-1abc", "_1abc"},
		{"v2", "v2"},
		{"tools/call", "tools_call"},
		{"créer-fichier", "cr_er_fichier"},
		{"検索", "_"},
		{"", "_"},
		{"---", "_"},
		// Keywords, soft keywords and builtins.
		{"import", "import_"},
		{"class", "class_"},
		{"None", "None_"},
		{"none", "none"},
		{"lambda", "lambda_"},
		{"async", "async_"},
		{"match", "match_"},
		{"type", "type_"},
		{"print", "print_"},
		{"list", "list_"},
		{"open", "open_"},
		{"sum", "sum_"},
		{"class-", "class_"},
		{"from.", "from_"},
		{"List", "List"},
		{"echo", "echo"},
		{"search", "search"},
	}
	for _, tt := range tests {
		if got := Ident(tt.in); got != tt.want {
			t.Errorf("Ident(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestIdentIsIdentifier checks the invariant on arbitrary input: the result
// is a non-empty ASCII identifier and no keyword.
func TestIdentIsIdentifier(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("aZ_-. 09é/検")
	for range 2000 {
		n := r.IntN(8)
		s := make([]rune, n)
		for i := range s {
			s[i] = alphabet[r.IntN(len(alphabet))]
		}
		id := Ident(string(s))
		if id == "" || id[0] >= '0' && id[0] <= '9' || reserved[id] {
			t.Fatalf("Ident(%q) = %q", string(s), id)
		}
		for i := 0; i < len(id); i++ {
			if !isIdentByte(id[i]) {
				t.Fatalf("Ident(%q) = %q", string(s), id)
			}
		}
	}
}

func identsOf(c *Catalog) map[string]string {
	m := make(map[string]string)
	for _, t := range c.Tools() {
		m[t.Server+" "+t.Name] = t.Ident
	}
	return m
}

func TestNewClashSuffixes(t *testing.T) {
	tools := []Tool{
		{Server: "s", Name: "get-sum"},
		{Server: "s", Name: "get.sum"},
		{Server: "s", Name: "get sum"},
		{Server: "s", Name: "get_sum"},   // keeps get_sum: it is its own identifier
		{Server: "s", Name: "get_sum_2"}, // a suffix must not take its name
		{Server: "s", Name: "getSum"},    // no clash: case is kept
		{Server: "s", Name: "class"},
		{Server: "s", Name: "class_"},
		{Server: "t", Name: "get-sum"}, // another server: no clash
	}
	want := map[string]string{
		"s get_sum":   "get_sum",
		"s get_sum_2": "get_sum_2",
		"s get sum":   "get_sum_3", // the losers in byte order of their names
		"s get-sum":   "get_sum_4",
		"s get.sum":   "get_sum_5",
		"s getSum":    "getSum",
		"s class_":    "class_", // its own identifier once escaped
		"s class":     "class_2",
		"t get-sum":   "get_sum",
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 50 {
		perm := slices.Clone(tools)
		r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		got := identsOf(New(perm))
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("permutation %d: %s got ident %q, want %q (all: %v)", i, k, got[k], v, got)
			}
		}
	}
}

func TestNewDuplicateNames(t *testing.T) {
	// An upstream bug, but New must still give unique, stable names.
	a := Tool{Server: "s", Name: "x", Description: "first"}
	b := Tool{Server: "s", Name: "x", Description: "second"}
	for _, in := range [][]Tool{{a, b}, {b, a}} {
		c := New(in)
		got, ok := c.Lookup("s.x")
		if !ok || got.Description != "first" {
			t.Fatalf("Lookup(s.x) = %+v, %v", got, ok)
		}
		got, ok = c.Lookup("s.x_2")
		if !ok || got.Description != "second" {
			t.Fatalf("Lookup(s.x_2) = %+v, %v", got, ok)
		}
	}
}

func TestNewIgnoresCallerIdentAndCopies(t *testing.T) {
	in := []Tool{{Server: "s", Name: "get-sum", Ident: "bogus", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	c := New(in)
	in[0].Name = "changed"
	in[0].InputSchema[2] = 'X'
	got, ok := c.Lookup("s.get_sum")
	if !ok || got.Name != "get-sum" || got.Ident != "get_sum" || string(got.InputSchema) != `{"type":"object"}` {
		t.Fatalf("Lookup = %+v, %v", got, ok)
	}
}

func TestLookup(t *testing.T) {
	c := New([]Tool{
		{Server: "everything", Name: "get-sum"},
		{Server: "everything", Name: "echo"},
		{Server: "fs", Name: "read_file"},
		{Server: "x", Name: "a-b"},
		{Server: "x", Name: "a_b"},
		{Server: "x", Name: "files.read"},
	})
	tests := []struct {
		in       string
		wantName string // "" for not found
	}{
		{"everything.get_sum", "get-sum"},
		{"everything.get-sum", "get-sum"},
		{"everything.echo", "echo"},
		{"fs.read_file", "read_file"},
		{"x.a_b", "a_b"}, // the qualified name wins over "a-b"'s original
		{"x.a-b", "a-b"},
		{"x.a_b_2", "a-b"},
		{"x.files.read", "files.read"},
		{"x.files_read", "files.read"},
		{"everything.getSum", ""},
		{"fs.get_sum", ""},
		{"get_sum", ""},
		{"everything", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := c.Lookup(tt.in)
		if ok != (tt.wantName != "") || got.Name != tt.wantName {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.in, got.Name, ok, tt.wantName)
		}
	}
}

func TestToolsAndServers(t *testing.T) {
	c := New([]Tool{
		{Server: "b", Name: "z"},
		{Server: "a-b", Name: "y"},
		{Server: "a", Name: "x"},
		{Server: "b", Name: "a"},
	})
	var got []string
	for _, t := range c.Tools() {
		got = append(got, t.QualifiedName())
	}
	// Qualified names use the server's module name (a-b imports as a_b),
	// sorted as strings.
	if want := []string{"a.x", "a_b.y", "b.a", "b.z"}; !slices.Equal(got, want) {
		t.Errorf("Tools = %v, want %v", got, want)
	}
	if got, want := c.Servers(), []string{"a", "a-b", "b"}; !slices.Equal(got, want) {
		t.Errorf("Servers = %v, want %v", got, want)
	}
	if got := c.ServerTools("b"); len(got) != 2 || got[0].Name != "a" || got[1].Name != "z" {
		t.Errorf("ServerTools(b) = %+v", got)
	}
	if got := c.ServerTools("nope"); got != nil {
		t.Errorf("ServerTools(nope) = %+v", got)
	}
	c.Servers()[0] = "mutated"
	if c.Servers()[0] != "a" {
		t.Error("Servers returned the catalog's own slice")
	}
	if New(nil).Search(Query{Text: "anything"}).Total != 0 || New(nil).Search(Query{}).Total != 0 {
		t.Error("an empty catalog found something")
	}
}

// pagingCatalog has 250 tools: 150 on server "big", 100 on "small".
func pagingCatalog() *Catalog {
	var tools []Tool
	for i := range 150 {
		tools = append(tools, Tool{Server: "big", Name: fmt.Sprintf("tool_%03d", i), Description: "Frobnicate a widget."})
	}
	for i := range 100 {
		tools = append(tools, Tool{Server: "small", Name: fmt.Sprintf("tool_%03d", i), Description: "Polish a gadget."})
	}
	return New(tools)
}

func TestSearchPaging(t *testing.T) {
	c := pagingCatalog()
	names := func(r Result) []string {
		var s []string
		for _, h := range r.Hits {
			s = append(s, h.Tool.QualifiedName())
		}
		return s
	}
	tests := []struct {
		q         Query
		total     int
		n         int
		first     string
		wantScore bool
	}{
		{Query{}, 250, 10, "big.tool_000", false},
		{Query{Limit: -1}, 250, 10, "big.tool_000", false},
		{Query{Limit: 1000}, 250, 100, "big.tool_000", false},
		{Query{Limit: 100, Offset: 200}, 250, 50, "small.tool_050", false},
		{Query{Offset: 249}, 250, 1, "small.tool_099", false},
		{Query{Offset: 250}, 250, 0, "", false},
		{Query{Offset: -5, Limit: 3}, 250, 3, "big.tool_000", false},
		{Query{Text: "   "}, 250, 10, "big.tool_000", false},
		{Query{Text: "widget", Limit: 100}, 150, 100, "big.tool_000", true},
		{Query{Text: "widget", Limit: 100, Offset: 100}, 150, 50, "big.tool_100", true},
		{Query{Text: "the of and"}, 0, 0, "", false}, // only stop words
		{Query{Text: "zeppelin"}, 0, 0, "", false},
	}
	for _, tt := range tests {
		r := c.Search(tt.q)
		got := names(r)
		if r.Total != tt.total || len(got) != tt.n || len(got) > 0 && got[0] != tt.first {
			t.Errorf("Search(%+v): total %d, %d hits from %v; want %d, %d from %q",
				tt.q, r.Total, len(got), got[:min(len(got), 1)], tt.total, tt.n, tt.first)
		}
		for _, h := range r.Hits {
			if (h.Score > 0) != tt.wantScore {
				t.Errorf("Search(%+v): score %v", tt.q, h.Score)
				break
			}
		}
	}
	// Pages put together are the whole list, in order, without repeats.
	var all []string
	for off := 0; ; off += 7 {
		r := c.Search(Query{Text: "widget gadget", Limit: 7, Offset: off})
		if len(r.Hits) == 0 {
			break
		}
		all = append(all, names(r)...)
	}
	if whole := names(c.Search(Query{Text: "widget gadget", Limit: MaxLimit})); len(all) != 250 || !slices.Equal(all[:100], whole) {
		t.Errorf("pages give %d hits, not the ranking", len(all))
	}
}

func TestSearchServerFilter(t *testing.T) {
	c := pagingCatalog()
	for _, text := range []string{"", "widget gadget", "tool"} {
		r := c.Search(Query{Text: text, Server: "small", Limit: MaxLimit})
		if r.Total != 100 || len(r.Hits) != 100 {
			t.Errorf("%q on small: total %d, %d hits", text, r.Total, len(r.Hits))
		}
		for _, h := range r.Hits {
			if h.Tool.Server != "small" {
				t.Errorf("%q on small: hit %s", text, h.Tool.QualifiedName())
			}
		}
		if r := c.Search(Query{Text: text, Server: "nope"}); r.Total != 0 || len(r.Hits) != 0 {
			t.Errorf("%q on an unknown server: %+v", text, r)
		}
	}
	if r := c.Search(Query{Text: "widget", Server: "small"}); r.Total != 0 {
		t.Errorf("widget on small: %d hits", r.Total)
	}
}

func TestSearchRanksExpected(t *testing.T) {
	c := New([]Tool{
		{Server: "fs", Name: "read_text_file", Description: "Read the complete contents of a file as text.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		{Server: "fs", Name: "read_file", Title: "Read File (Deprecated)", Description: "Read a file. DEPRECATED: use read_text_file."},
		{Server: "fs", Name: "write_file", Description: "Create or overwrite a file."},
		{Server: "fs", Name: "list_directory", Description: "List the entries of a directory."},
		{Server: "kv", Name: "deleteKey", Description: "Remove a key.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string","description":"The key to remove"}}}`)},
		{Server: "kv", Name: "getKey", Description: "Fetch the value stored under a key."},
		{Server: "mail", Name: "send-email", Description: "Send an email message to recipients."},
		{Server: "bad", Name: "weird", Description: "Has a malformed schema.", InputSchema: json.RawMessage(`{"properties":`)},
	})
	tests := []struct{ query, want string }{
		{"read a file", "fs.read_text_file"},          // the deprecated read_file yields
		{"reading files", "fs.read_text_file"},        // stemming
		{"show folder contents", "fs.list_directory"}, // synonyms
		{"delete a key", "kv.deleteKey"},              // camelCase name
		{"erase key", "kv.deleteKey"},                 // synonym of the name's verb
		{"mail a message", "mail.send_email"},         // synonym and kebab-case
		{"getKey", "kv.getKey"},                       // the name as typed
		{"weird", "bad.weird"},                        // a malformed schema costs nothing else
	}
	for _, tt := range tests {
		r := c.Search(Query{Text: tt.query})
		if len(r.Hits) == 0 || r.Hits[0].Tool.QualifiedName() != tt.want {
			var got []string
			for _, h := range r.Hits {
				got = append(got, fmt.Sprintf("%s %.2f", h.Tool.QualifiedName(), h.Score))
			}
			t.Errorf("Search(%q) = %v, want %s first", tt.query, got, tt.want)
		}
	}
}

func TestSchemaParams(t *testing.T) {
	names, descs := schemaParams(json.RawMessage(`{
		"type": "object",
		"properties": {
			"path": {"type": "string", "description": "Where"},
			"edits": {"type": "array", "items": {"type": "object", "properties": {
				"oldText": {"type": "string", "description": "Text to replace"}
			}}},
			"mode": {"anyOf": [{"type": "object", "properties": {"fast": {"type": "boolean"}}}]},
			"flag": true
		}
	}`))
	if want := []string{"edits", "oldText", "flag", "mode", "fast", "path"}; !slices.Equal(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}
	if want := []string{"Text to replace", "Where"}; !slices.Equal(descs, want) {
		t.Errorf("descs = %v, want %v", descs, want)
	}
	for _, bad := range []string{``, `null`, `[]`, `{"properties": 3}`, `{"properties": {"a": 1}}`, `{`} {
		names, _ := schemaParams(json.RawMessage(bad))
		if bad == `{"properties": {"a": 1}}` {
			if !slices.Equal(names, []string{"a"}) {
				t.Errorf("schemaParams(%s) = %v", bad, names)
			}
			continue
		}
		if len(names) != 0 {
			t.Errorf("schemaParams(%s) = %v", bad, names)
		}
	}
}

// TestSearchConcurrent runs searches from many goroutines on one catalog;
// with -race it checks that a Catalog needs no locking, and it checks that
// the pooled scratch memory is left clean between searches.
func TestSearchConcurrent(t *testing.T) {
	c := generatedCatalog(500)
	queries := benchQueries()
	want := make([]Result, len(queries))
	for i, q := range queries {
		want[i] = c.Search(Query{Text: q, Limit: 20})
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 200 {
				i := (g + k) % len(queries)
				got := c.Search(Query{Text: queries[i], Limit: 20})
				if got.Total != want[i].Total || len(got.Hits) != len(want[i].Hits) {
					t.Errorf("%q: total %d, want %d", queries[i], got.Total, want[i].Total)
					return
				}
				for j := range got.Hits {
					if got.Hits[j].Tool.QualifiedName() != want[i].Hits[j].Tool.QualifiedName() || got.Hits[j].Score != want[i].Hits[j].Score {
						t.Errorf("%q: hit %d differs", queries[i], j)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestModuleNames(t *testing.T) {
	for in, want := range map[string]string{
		"github": "github", "my-server": "my_server", "2fa": "s_2fa", "_x": "x", "ToolError": "ToolError_",
		"class": "class_", "---": "server", "print": "print_",
	} {
		if got := ModuleName(in); got != want {
			t.Errorf("ModuleName(%q) = %q, want %q", in, got, want)
		}
	}
	c := New([]Tool{{Server: "a-b", Name: "x"}, {Server: "a_b", Name: "y"}, {Server: "2fa", Name: "z"}})
	got := map[string]string{}
	for _, tool := range c.Tools() {
		got[tool.Server] = tool.Module
	}
	if got["a-b"] != "a_b" || got["a_b"] != "a_b_2" || got["2fa"] != "s_2fa" {
		t.Errorf("modules %v", got)
	}
	if tool, ok := c.Lookup("a_b.x"); !ok || tool.Server != "a-b" {
		t.Errorf("Lookup(a_b.x) = %+v %v", tool, ok)
	}
}

// TestModulesOfServersWithoutTools: servers named without tools take part in
// the choice of modules, so a server keeps its module when it connects.
func TestModulesOfServersWithoutTools(t *testing.T) {
	before := New([]Tool{{Server: "a_b", Name: "y"}}, "a-b", "a_b", "slow")
	after := New([]Tool{{Server: "a_b", Name: "y"}, {Server: "a-b", Name: "x"}}, "a-b", "a_b", "slow")
	for _, c := range []*Catalog{before, after} {
		for server, want := range map[string]string{"a-b": "a_b", "a_b": "a_b_2", "slow": "slow"} {
			if got, ok := c.Module(server); !ok || got != want {
				t.Errorf("Module(%q) = %q, %v, want %q", server, got, ok, want)
			}
		}
		if tool, ok := c.Lookup("a_b_2.y"); !ok || tool.Server != "a_b" {
			t.Errorf("Lookup(a_b_2.y) = %+v %v", tool, ok)
		}
		if _, ok := c.Module("nope"); ok {
			t.Error("Module of a server never named")
		}
	}
	if got := before.Servers(); len(got) != 1 || got[0] != "a_b" {
		t.Errorf("Servers() = %q, want only the server with tools", got)
	}
}
