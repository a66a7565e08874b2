package codegen

import (
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/catalog"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// schemaCases are representative input schemas with the signature each
// gives a tool with Ident "f". FuzzGenerate starts from them too.
var schemaCases = []struct {
	name, schema, want string
}{
	{"required and optional", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number","default":0}},"required":["a"],"additionalProperties":false}`,
		`f(*, a: float, b: float = 0) -> Any`},
	{"required listed after optional", `{"type":"object","properties":{"opt":{"type":"string"},"req":{"type":"integer"}},"required":["req"],"additionalProperties":false}`,
		`f(*, req: int, opt: str = ...) -> Any`},
	{"all scalar types", `{"type":"object","properties":{"s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},"z":{"type":"null"},"o":{"type":"object"},"a":{"type":"array"}},"additionalProperties":false}`,
		`f(*, s: str = ..., i: int = ..., n: float = ..., b: bool = ..., z: None = ..., o: dict[str, Any] = ..., a: list[Any] = ...) -> Any`},
	{"defaults", `{"type":"object","properties":{"s":{"type":"string","default":"it's \"x\"\n"},"t":{"type":"boolean","default":false},"n":{"default":null},"f":{"type":"number","default":-1.5e3},"big":{"type":"integer","default":123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890},"obj":{"type":"object","default":{"k":[1]}}},"additionalProperties":false}`,
		`f(*, s: str = "it's \"x\"\n", t: bool = False, n: Any = None, f: float = -1.5e3, big: int = ..., obj: dict[str, Any] = ...) -> Any`},
	{"required with default", `{"type":"object","properties":{"a":{"type":"integer","default":3}},"required":["a"],"additionalProperties":false}`,
		`f(*, a: int) -> Any`},
	{"enums", `{"type":"object","properties":{"color":{"type":"string","enum":["red","green"]},"n":{"enum":[1,2,null]},"mixed":{"enum":[1,2.5,"x"]},"obj":{"enum":[{"a":1}]},"flag":{"const":true}},"additionalProperties":false}`,
		`f(*, color: Literal["red", "green"] = ..., n: Literal[1, 2] | None = ..., mixed: int | float | str = ..., obj: dict[str, Any] = ..., flag: Literal[True] = ...) -> Any`},
	{"large enum", `{"type":"object","properties":{"e":{"enum":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}},"additionalProperties":false}`,
		`f(*, e: str = ...) -> Any`},
	{"nested arrays", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"array","items":{"type":"number"}}},"t":{"type":"array","items":[{"type":"string"}]},"deep":{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"string"}}}}}}}}}},"required":["m"],"additionalProperties":false}`,
		`f(*, m: list[list[float]], t: list[Any] = ..., deep: list[list[list[list[list[list[list[Any]]]]]]] = ...) -> Any`},
	{"unions", `{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]},"o":{"oneOf":[{"type":"array","items":{"type":"string"}},{"type":"object"}]},"t":{"type":["string","null"]},"nullable":{"type":"integer","nullable":true},"fmt":{"type":"string","anyOf":[{"format":"date"},{"format":"date-time"}]},"lit":{"anyOf":[{"const":"a"},{"const":"b"},{"type":"integer"}]},"one":{"allOf":[{"type":"boolean"}]}},"additionalProperties":false}`,
		`f(*, u: str | int | None = ..., o: list[str] | dict[str, Any] = ..., t: str | None = ..., nullable: int | None = ..., fmt: str = ..., lit: Literal["a", "b"] | int = ..., one: bool = ...) -> Any`},
	{"unknown types", `{"type":"object","properties":{"r":{"$ref":"#/$defs/x"},"w":{"type":"wat"},"any":{},"t":true,"n":{"anyOf":[{"type":"string"},{"not":{}}]},"obj":{"properties":{"x":{}}}},"additionalProperties":false}`,
		`f(*, r: Any = ..., w: Any = ..., any: Any = ..., t: Any = ..., n: Any = ..., obj: dict[str, Any] = ...) -> Any`},
	{"keywords", `{"type":"object","properties":{"from":{"type":"string"},"class":{"type":"string"},"None":{},"__debug__":{},"match":{},"type":{}},"required":["from"],"additionalProperties":false}`,
		`f(*, from_: str, class_: str = ..., None_: Any = ..., __debug___: Any = ..., match: Any = ..., type: Any = ...) -> Any`},
	{"hyphens digits and clashes", `{"type":"object","properties":{"my-arg":{},"my_arg":{},"my arg":{},"2x":{},"":{},"-":{},"café":{},"a.b":{}},"additionalProperties":false}`,
		`f(*, my_arg_2: Any = ..., my_arg: Any = ..., my_arg_3: Any = ..., _2x: Any = ..., arg: Any = ..., arg_2: Any = ..., caf_: Any = ..., a_b: Any = ...) -> Any`},
	{"helper names", `{"type":"object","properties":{"_rpc":{},"_args":{},"_OMIT":{},"extra":{}}}`,
		`f(*, _rpc_2: Any = ..., _args_2: Any = ..., _OMIT: Any = ..., extra: Any = ..., **extra_: Any) -> Any`},
	{"required not in properties", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b","a",7]}`,
		`f(*, a: str, b: Any, **extra: Any) -> Any`},
	{"additional properties", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`,
		`f(*, a: str = ..., **extra: Any) -> Any`},
	{"no properties", `{"type":"object"}`, `f(**extra: Any) -> Any`},
	{"nothing allowed", `{"type":"object","properties":{},"additionalProperties":false}`, `f() -> Any`},
	{"duplicate property", `{"type":"object","properties":{"a":{"type":"string"},"b":{},"a":{"type":"integer"}},"additionalProperties":false}`,
		`f(*, a: int = ..., b: Any = ...) -> Any`},
	{"no schema", ``, `f(**extra: Any) -> Any`},
	{"invalid JSON", `{"type":"object","properties":{`, `f(**kwargs: Any) -> Any`},
	{"not an object", `[1,2]`, `f(**kwargs: Any) -> Any`},
	{"boolean schema", `true`, `f(**kwargs: Any) -> Any`},
	{"not an object type", `{"type":"string"}`, `f(**kwargs: Any) -> Any`},
	{"properties not an object", `{"type":"object","properties":["a"]}`, `f(**kwargs: Any) -> Any`},
	{"trailing garbage", `{"type":"object"} x`, `f(**kwargs: Any) -> Any`},
	{"wrong keyword types", `{"type":["object",3],"properties":{"a":{"type":7,"description":5,"enum":"x","anyOf":{}}},"required":"a"}`,
		`f(*, a: Any = ..., **extra: Any) -> Any`},
}

func TestSignature(t *testing.T) {
	for _, tc := range schemaCases {
		t.Run(tc.name, func(t *testing.T) {
			tool := catalog.Tool{Server: "s", Name: "f", Ident: "f", InputSchema: json.RawMessage(tc.schema)}
			if got := Signature(tool); got != tc.want {
				t.Errorf("Signature:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestSignatureIdent(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","additionalProperties":false}`)
	tests := []struct{ ident, want string }{
		{"get_sum", "get_sum() -> Any"},
		{"", "arg_() -> Any"},
		{"get-sum", "get_sum_() -> Any"},
		{"class", "class_() -> Any"},
		{"__init__", "init__() -> Any"},
		{"2fa", "tool_2fa_() -> Any"},
	}
	for _, tc := range tests {
		t.Run(tc.ident, func(t *testing.T) {
			got := Signature(catalog.Tool{Server: "s", Name: "x", Ident: tc.ident, InputSchema: schema})
			if got != tc.want {
				t.Errorf("Signature with Ident %q = %s, want %s", tc.ident, got, tc.want)
			}
		})
	}
}

func TestSource(t *testing.T) {
	tests := []struct {
		name string
		tool catalog.Tool
		want []string // substrings of the source, in order
		not  []string // substrings it must not have
	}{
		{
			name: "call with original names",
			tool: catalog.Tool{Server: "everything", Name: "get-sum", Ident: "get_sum", Description: "Adds two numbers.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number","default":0},"from":{"type":"string"}},"required":["a"],"additionalProperties":false}`)},
			want: []string{
				`"""everything.get_sum: Adds two numbers.`,
				`Tool "get-sum" of the MCP server "everything"`,
				"from servers import _OMIT, _args\n",
				"def get_sum(*, a: float, b: float = 0, from_: str = _OMIT) -> Any:\n",
				"        a: First number\n",
				"        b: Second number (default 0)\n",
				`        from_ ("from"): (no description)`,
				"Raises servers.ToolError",
				"    return _rpc.call(\"everything\", \"get-sum\", _args({\n        \"a\": a,\n        \"b\": b,\n        \"from\": from_,\n    }))\n",
				"async def get_sum_async(*, a: float, b: float = 0, from_: str = _OMIT) -> Any:\n",
				"    return await _rpc.acall(\"everything\", \"get-sum\", _args({\n        \"a\": a,\n",
			},
		},
		{
			name: "no arguments",
			tool: catalog.Tool{Server: "s", Name: "ping", Ident: "ping", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
			want: []string{`Calls the tool "ping" of the MCP server "s".`, "def ping() -> Any:", `return _rpc.call("s", "ping", {})`},
			not:  []string{"from servers import", "Args:", "Literal"},
		},
		{
			name: "malformed schema",
			tool: catalog.Tool{Server: "s", Name: "b", Ident: "b", InputSchema: json.RawMessage(`{nope`)},
			want: []string{"def b(**kwargs: Any) -> Any:", "its input schema could not be read", `_args({}, kwargs)`},
		},
		{
			name: "triple quotes and backslashes",
			tool: catalog.Tool{Server: "s", Name: "q", Ident: "q", Description: `Say """hi""" or """"" \ \n \"""`,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"description":"a \"\"\" b \\"}},"additionalProperties":false}`)},
			want: []string{`Say ""\"hi""\" or ""\""" \\ \\n \\""\"` + "\n", `p: a ""\" b \\` + "\n"},
		},
		{
			name: "unicode and control characters",
			tool: catalog.Tool{Server: "s", Name: "u", Ident: "u", Title: "ignored", Description: "Grüße 🌍 — naïve\r\nline two\rline\x00three\u2028four\x1b\t."},
			want: []string{"Grüße 🌍 — naïve\n    line two\n    line\\x00three\\u2028four\\x1b\t.\n"},
		},
		{
			name: "title when no description",
			tool: catalog.Tool{Server: "s", Name: "t", Ident: "t", Title: "Fetch\nthe weather"},
			want: []string{`"""s.t: Fetch the weather`, `    """Fetch the weather`},
		},
		{
			name: "output schema",
			tool: catalog.Tool{Server: "s", Name: "o", Ident: "o",
				OutputSchema: json.RawMessage(`{"type":"object","properties":{"total":{"type":"number"},"items":{"type":"array","items":{"type":"string"}}}}`)},
			want: []string{"The structured content has the fields total: float, items: list[str]."},
		},
		{
			name: "helper names taken by the tool",
			tool: catalog.Tool{Server: "s", Name: "_rpc", Ident: "_rpc", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{}},"additionalProperties":false}`)},
			want: []string{"from codecell import _rpc as _rpc_\n", "def _rpc(*, x: Any = _OMIT)", "return _rpc_.call(", "return await _rpc_.acall("},
		},
		{
			name: "long signature wraps",
			tool: catalog.Tool{Server: "s", Name: "w", Ident: "w", InputSchema: json.RawMessage(`{"type":"object","properties":{"alpha_parameter":{"type":"string"},"beta_parameter":{"type":"string"},"gamma_parameter":{"type":"string"}},"additionalProperties":false}`)},
			want: []string{"def w(\n    *,\n    alpha_parameter: str = _OMIT,\n", ") -> Any:\n", `_args({` + "\n" + `        "alpha_parameter": alpha_parameter,` + "\n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := Source(tc.tool)
			rest := src
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("source lacks %q (in order); source:\n%s", w, src)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tc.not {
				if strings.Contains(src, n) {
					t.Errorf("source has %q; source:\n%s", n, src)
				}
			}
		})
	}
}

func TestFirstSentence(t *testing.T) {
	long := strings.Repeat("word ", 60)
	tests := []struct{ in, want string }{
		{"", ""},
		{"Adds two numbers. Returns the sum.", "Adds two numbers."},
		{"  Lists files\n  in a directory!  More.", "Lists files in a directory!"},
		{"Use e.g. this, i.e. that. Then.", "Use e.g. this, i.e. that."},
		{"Version 1.5 is out. Yes.", "Version 1.5 is out."},
		{"First paragraph\n\nSecond. paragraph", "First paragraph"},
		{long, strings.TrimSpace(long)[:199] + "…"},
	}
	for _, tc := range tests {
		if got := firstSentence(tc.in); got != tc.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCodeSpan(t *testing.T) {
	tests := []struct{ in, want string }{
		{"f() -> Any", "`f() -> Any`"},
		{"a `b` c", "``a `b` c``"},
		{"`x``", "``` `x`` ```"},
	}
	for _, tc := range tests {
		if got := codeSpan(tc.in); got != tc.want {
			t.Errorf("codeSpan(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	tool := func(name, ident string) catalog.Tool { return catalog.Tool{Server: "s", Name: name, Ident: ident} }
	tests := []struct {
		name    string
		servers map[string][]catalog.Tool
		want    string // in the error message
	}{
		{"hyphen in server", map[string][]catalog.Tool{"my-server": nil}, `server "my-server": invalid name: not a Python identifier`},
		{"keyword server", map[string][]catalog.Tool{"class": nil}, `server "class": invalid name`},
		{"empty server", map[string][]catalog.Tool{"": nil}, `server "": invalid name`},
		{"digit first", map[string][]catalog.Tool{"2fa": nil}, `server "2fa": invalid name`},
		{"underscore", map[string][]catalog.Tool{"_x": nil}, `names starting with _ are reserved`},
		{"exported name", map[string][]catalog.Tool{"ToolError": nil}, `exports that name itself`},
		{"non-ASCII server", map[string][]catalog.Tool{"café": nil}, `server "café": invalid name`},
		{"bad ident", map[string][]catalog.Tool{"s": {tool("get-sum", "get-sum")}}, `server "s": tool "get-sum": identifier "get-sum": invalid name`},
		{"keyword ident", map[string][]catalog.Tool{"s": {tool("import", "import")}}, `identifier "import": invalid name`},
		{"dunder ident", map[string][]catalog.Tool{"s": {tool("init", "__init__")}}, `identifier "__init__": invalid name`},
		{"duplicate ident", map[string][]catalog.Tool{"s": {tool("a-b", "a_b"), tool("x", "y"), tool("a_b", "a_b")}}, `tools "a-b" and "a_b": both have identifier "a_b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files, err := Generate(tc.servers, nil)
			if err == nil {
				t.Fatalf("Generate succeeded with %d files, want an error", len(files))
			}
			if !errors.Is(err, ErrInvalidName) {
				t.Errorf("error %v does not wrap ErrInvalidName", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

func TestGeneratePendingErrors(t *testing.T) {
	tests := []struct {
		name    string
		servers map[string][]catalog.Tool
		pending map[string]string
		want    string
	}{
		{"hyphen", nil, map[string]string{"my-server": "my-server"}, `server "my-server": invalid name: not a Python identifier`},
		{"reserved", nil, map[string]string{"_x": "x"}, `names starting with _ are reserved`},
		{"both", map[string][]catalog.Tool{"s": nil}, map[string]string{"s": "s"}, `server "s": invalid name: both pending and with tools`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.servers, tc.pending)
			if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Generate = %v, want ErrInvalidName saying %q", err, tc.want)
			}
		})
	}
}

func TestGenerateEmpty(t *testing.T) {
	for _, servers := range []map[string][]catalog.Tool{nil, {"idle": nil}} {
		files, err := Generate(servers, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"servers/INDEX.md", "servers/__init__.py"}
		if len(servers) > 0 {
			want = append(want, "servers/idle/__init__.py")
		}
		if got := sortedKeys(files); !slices.Equal(got, want) {
			t.Errorf("Generate(%v) files = %q, want %q", servers, got, want)
		}
	}
}

// fixture is the tree the golden files and the Python tests cover.
func fixture() map[string][]catalog.Tool {
	tool := func(server, name, ident, desc, schema string) catalog.Tool {
		return catalog.Tool{Server: server, Name: name, Ident: ident, Description: desc, InputSchema: json.RawMessage(schema)}
	}
	getSum := tool("everything", "get-sum", "get_sum", "Adds two numbers.\n\nBoth may be fractional.",
		`{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number","default":0}},"required":["a"],"additionalProperties":false}`)
	getSum.OutputSchema = json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}}}`)
	// As Zod writes them: an array of objects, a nested object that may be
	// null; the docstring lists their fields.
	entity := `{"type":"object","properties":{"name":{"type":"string","description":"The name of the entity"},
		"entityType":{"type":"string","description":"The type of the entity"},
		"observations":{"type":"array","items":{"type":"string"},"description":"What is known of it"},
		"source":{"anyOf":[{"type":"object","properties":{"url":{"type":"string"},"seen":{"type":"integer","description":"Unix time"}},"required":["url"]},{"type":"null"}]}},
		"required":["name","entityType","observations"],"additionalProperties":false}`
	createEntities := tool("everything", "create_entities", "create_entities", "Create multiple new entities in the knowledge graph",
		`{"type":"object","properties":{"entities":{"type":"array","items":`+entity+`}},"required":["entities"],"additionalProperties":false}`)
	createEntities.OutputSchema = json.RawMessage(`{"type":"object","properties":{"entities":{"type":"array","items":` + entity + `}},"required":["entities"]}`)
	return map[string][]catalog.Tool{
		"everything": {
			getSum,
			createEntities,
			tool("everything", "echo", "echo", "Echoes the message back.", `{"type":"object","properties":{"message":{"type":"string","description":"What to echo"}},"required":["message"]}`),
			tool("everything", "ping", "ping", "", ``),
			tool("everything", "fail", "fail", "Always fails.", `{"type":"object","additionalProperties":false}`),
			tool("everything", "slow", "slow", "Takes its time.", `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false}`),
		},
		"weird": {
			tool("weird", "search-items", "search_items",
				"Searches items: naïve Grüße 🌍 \"\"\"quoted\"\"\" C:\\temp\\new \\\"\"\"\r\nSecond line\x00with NUL.\n\n    Indented detail.",
				`{"type":"object","properties":{
					"query":{"type":"string","description":"What to find"},
					"from":{"type":"string","description":"Start date"},
					"class":{"type":"string","enum":["a","b"],"default":"a"},
					"my-arg":{"type":"integer"},
					"my_arg":{"type":["integer","null"]},
					"2x":{"type":"array","items":{"type":"array","items":{"type":"number"}}},
					"mode":{"anyOf":[{"const":"fast"},{"const":"slow"},{"type":"null"}]},
					"opts":{"type":"object","default":{"deep":true}},
					"limit":{"type":"integer","default":10,"description":"At most\nthis many"}
				},"required":["query","from"],"additionalProperties":false}`),
			tool("weird", "broken", "broken", "Its schema is not JSON.", `{"type":"object","properties":`),
			tool("weird", "fetch", "fetch", "Fetches a URL.", `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false}`),
			tool("weird", "fetch async", "fetch_async", "A tool whose name is another tool's async variant.", `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false}`),
			tool("weird", "_rpc", "_rpc", "A tool named like the runtime module.", `{"type":"object","properties":{"x":{}}}`),
		},
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pendingFixture is the server the golden files cover that is not connected
// yet.
func pendingFixture() map[string]string { return map[string]string{"slow_server": "slow-server"} }

// TestGolden compares the generated tree of the fixture with
// testdata/golden; go test -update rewrites it.
func TestGolden(t *testing.T) {
	files, err := Generate(fixture(), pendingFixture())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			p := filepath.Join(dir, filepath.FromSlash(name)+".golden")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := make(map[string]bool)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := strings.TrimSuffix(filepath.ToSlash(rel), ".golden")
		seen[name] = true
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, ok := files[name]
		if !ok {
			t.Errorf("%s: golden file for a file Generate no longer writes (run go test -update)", name)
			return nil
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from %s (run go test -update to accept):\n%s", name, p, diff(string(want), string(got)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(files) {
		if !seen[name] {
			t.Errorf("%s: no golden file (run go test -update)", name)
		}
	}
}

// diff shows the first line where want and got differ, with some context.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return "line " + strconv.Itoa(i+1) + ":\n-" + wl + "\n+" + gl
		}
	}
	return "(same lines)"
}

// TestSourceMatchesGenerate holds that Source shows exactly the module
// Generate writes, and Signature exactly its def line.
func TestSourceMatchesGenerate(t *testing.T) {
	servers := fixture()
	files, err := Generate(servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	for server, tools := range servers {
		for _, tool := range tools {
			path := "servers/" + server + "/" + tool.Ident + ".py"
			if got := Source(tool); got != string(files[path]) {
				t.Errorf("Source(%s) differs from %s", tool.QualifiedName(), path)
			}
			// Signature shows an omitted argument's default as "...".
			sig := Signature(tool)
			if got := omitted.ReplaceAllString(defLine(string(files[path]), tool.Ident), " = ..."); got != sig {
				t.Errorf("%s: def line %q, Signature %q", path, got, sig)
			}
		}
	}
}

// omitted is a def line's default that means "not sent": the module's
// sentinel, _OMIT or a name freed from a parameter's.
var omitted = regexp.MustCompile(` = _OMIT(_\d+)?\b`)

// defLine returns the def line of function ident in src, on one line.
func defLine(src, ident string) string {
	start := strings.Index(src, "\ndef "+ident+"(")
	end := strings.Index(src, ") -> Any:\n")
	if start < 0 || end < start {
		return ""
	}
	s := src[start+len("\ndef ") : end+len(") -> Any")]
	s = strings.ReplaceAll(s, "(\n    ", "(")
	s = strings.ReplaceAll(s, ",\n)", ")")
	return strings.ReplaceAll(s, ",\n    ", ", ")
}
