package skills

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/store"
)

// hostCompiler compiles with the host's Python. Only the tests use it, on
// code they wrote; the server compiles in a sandbox.
type hostCompiler struct{ calls int }

func (c *hostCompiler) Compile(ctx context.Context, ns, filename, code string) error {
	c.calls++
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-I", "-S", "-c", `
import json, sys
try:
    compile(sys.stdin.read(), sys.argv[1], "exec")
    print("null")
except SyntaxError as e:
    print(json.dumps({"line": e.lineno or 0, "column": e.offset or 0, "message": e.msg}))
`, filename)
	cmd.Stdin = strings.NewReader(code)
	out, err := cmd.Output()
	if err != nil {
		return err
	}
	var se *SyntaxError
	if err := json.Unmarshal(out, &se); err != nil {
		return err
	}
	if se != nil {
		return se
	}
	return nil
}

func newManager(t *testing.T) (*Manager, *store.Store, string) {
	t.Helper()
	root := t.TempDir()
	db, err := store.Open(filepath.Join(root, "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dir := filepath.Join(root, "skills")
	m, err := New(Options{Store: db, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return m, db, dir
}

const addCode = "def add(a, b):\n    return a + b\n"

func save(t *testing.T, m *Manager, ns, name, code string, tags ...string) Skill {
	t.Helper()
	sk, err := m.Save(context.Background(), ns, Draft{Name: name, Code: code, Description: "does " + name, Tags: tags}, &hostCompiler{})
	if err != nil {
		t.Fatalf("save %s: %v", name, err)
	}
	return sk
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		rule string
	}{
		{"add", true, ""},
		{"Fetch_data2", true, ""},
		{"match", true, ""}, // a soft keyword imports fine
		{strings.Repeat("a", MaxName), true, ""},
		{"", false, "empty"},
		{"1abc", false, "digit"},
		{"a-b", false, "identifier"},
		{"a.b", false, "identifier"},
		{"café", false, "identifier"},
		{"class", false, "keyword"},
		{"None", false, "keyword"},
		{"_private", false, "starts with _"},
		{"__init__", false, "starts with _"},
		{strings.Repeat("a", MaxName+1), false, "at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckName(tt.name)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Field != "name" || !strings.Contains(ie.Rule, tt.rule) {
				t.Fatalf("got %v, want an error on name saying %q", err, tt.rule)
			}
		})
	}
}

func TestSaveRefuses(t *testing.T) {
	m, _, dir := newManager(t)
	tests := []struct {
		name  string
		draft Draft
		field string
		rule  string
	}{
		{"bad name", Draft{Name: "a-b", Code: addCode, Description: "d"}, "name", "identifier"},
		{"empty code", Draft{Name: "x", Code: "  \n", Description: "d"}, "code", "empty"},
		{"huge code", Draft{Name: "x", Code: strings.Repeat("#", MaxCode+1), Description: "d"}, "code", "1 MiB"},
		{"no description", Draft{Name: "x", Code: addCode}, "description", "empty"},
		{"empty tag", Draft{Name: "x", Code: addCode, Description: "d", Tags: []string{"a", " "}}, "tags", "empty"},
		{"syntax error", Draft{Name: "x", Code: "def f():\n    return 1\n\ndef g(:\n    pass\n", Description: "d"}, "code", "line 4"},
		{"bad indentation", Draft{Name: "x", Code: "def f():\nreturn 1\n", Description: "d"}, "code", "line 2"},
		{"code not UTF-8", Draft{Name: "x", Code: "s = '\xff'\n", Description: "d"}, "code", "UTF-8"},
		{"long description", Draft{Name: "x", Code: addCode, Description: strings.Repeat("d", MaxDescription+1)}, "description", "at most 4096"},
		{"description not UTF-8", Draft{Name: "x", Code: addCode, Description: "caf\xe9"}, "description", "UTF-8"},
		{"too many tags", Draft{Name: "x", Code: addCode, Description: "d", Tags: make([]string, MaxTags+1)}, "tags", "at most 20"},
		{"long tag", Draft{Name: "x", Code: addCode, Description: "d", Tags: []string{strings.Repeat("t", MaxTag+1)}}, "tags", "at most 64"},
		{"tag with a newline", Draft{Name: "x", Code: addCode, Description: "d", Tags: []string{"a\nb"}}, "tags", "control"},
		{"tag not UTF-8", Draft{Name: "x", Code: addCode, Description: "d", Tags: []string{"\xff"}}, "tags", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Save(context.Background(), "default", tt.draft, &hostCompiler{})
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Field != tt.field || !strings.Contains(ie.Rule, tt.rule) {
				t.Fatalf("got %v, want an error on %s saying %q", err, tt.field, tt.rule)
			}
		})
	}
	if list, _ := m.List(context.Background(), "default", ""); len(list) != 0 {
		t.Errorf("refused saves stored %v", list)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "default")); len(entries) != 0 {
		t.Errorf("refused saves left files: %v", entries)
	}
}

func TestSaveVersionsAndFiles(t *testing.T) {
	m, _, dir := newManager(t)
	ctx := context.Background()
	v1 := save(t, m, "default", "add", addCode, "math", "math", " util ")
	if v1.Version != 1 || strings.Join(v1.Tags, ",") != "math,util" {
		t.Fatalf("first save: %+v", v1)
	}
	v2 := save(t, m, "default", "add", "def add(a, b):\n    return a + b + 0\n")
	if v2.Version != 2 {
		t.Fatalf("second save is version %d", v2.Version)
	}
	sd := filepath.Join(dir, "default", "add")
	if got := readFile(t, filepath.Join(sd, "add.py")); got != v2.Code {
		t.Errorf("add.py holds %q", got)
	}
	md := readFile(t, filepath.Join(sd, "SKILL.md"))
	for _, want := range []string{"---\nname: add\n", `description: "does add"`, "tags: []", "version: 2\n", "created: "} {
		if !strings.Contains(md, want) {
			t.Errorf("SKILL.md lacks %q:\n%s", want, md)
		}
	}
	for _, p := range []string{sd, filepath.Join(dir, "default")} {
		if info, _ := os.Stat(p); info.Mode().Perm() != 0o755 {
			t.Errorf("%s has mode %v, want 0755", p, info.Mode().Perm())
		}
	}
	for _, f := range []string{"add.py", "__init__.py", "SKILL.md"} {
		if info, _ := os.Stat(filepath.Join(sd, f)); info.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v, want 0644", f, info.Mode().Perm())
		}
	}
	if entries, _ := os.ReadDir(sd); len(entries) != 3 {
		t.Errorf("skill directory holds %v", entries)
	}

	old, err := m.Load(ctx, "default", "add", 1)
	if err != nil || old.Code != addCode || old.Version != 1 {
		t.Fatalf("load version 1: %+v, %v", old, err)
	}
	latest, err := m.Load(ctx, "default", "add", 0)
	if err != nil || latest.Version != 2 {
		t.Fatalf("load latest: %+v, %v", latest, err)
	}
	if _, err := m.Load(ctx, "default", "add", 3); !errors.Is(err, ErrNotFound) {
		t.Errorf("load version 3: %v", err)
	}
	if _, err := m.Load(ctx, "default", "nope", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("load a missing skill: %v", err)
	}
}

// TestImport runs the files as the sandbox's runner would see them: a
// "skills" package whose path is the namespace's directory.
func TestImport(t *testing.T) {
	m, _, dir := newManager(t)
	save(t, m, "default", "add", addCode+"\n__all__ = ['add']\n_hidden = 7\n")
	save(t, m, "default", "greet", "def greet(name):\n    return 'hi ' + name\n")
	out, err := exec.Command("/usr/bin/python3", "-I", "-S", "-B", "-c", `
import importlib.machinery, importlib.util, sys
spec = importlib.machinery.ModuleSpec("skills", None, is_package=True)
spec.submodule_search_locations = [sys.argv[1]]
sys.modules["skills"] = importlib.util.module_from_spec(spec)
from skills.add import add, _hidden
from skills.greet import greet
import skills.add
print(add(2, 3), _hidden, greet("bo"), skills.add.__all__)
`, filepath.Join(dir, "default")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "5 7 hi bo ['add']" {
		t.Fatalf("import: %v\n%s", err, out)
	}
	// "import *" takes __all__ where the module has one, else its public
	// names, and never the generated __init__'s own.
	out, err = exec.Command("/usr/bin/python3", "-I", "-S", "-B", "-c", `
import importlib.machinery, importlib.util, sys
spec = importlib.machinery.ModuleSpec("skills", None, is_package=True)
spec.submodule_search_locations = [sys.argv[1]]
sys.modules["skills"] = importlib.util.module_from_spec(spec)
a, g = {}, {}
exec("from skills.add import *", a)
exec("from skills.greet import *", g)
print(sorted(a.keys() - {"__builtins__"}), sorted(g.keys() - {"__builtins__"}))
`, filepath.Join(dir, "default")).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "['add'] ['greet']" {
		t.Fatalf("import *: %v\n%s", err, out)
	}
}

func TestList(t *testing.T) {
	m, _, _ := newManager(t)
	ctx := context.Background()
	save(t, m, "default", "add", addCode, "Math")
	save(t, m, "default", "greet", "def greet(n):\n    return n\n", "text")
	save(t, m, "default", "greet", "def greet(n):\n    return n + '!'\n", "text", "polite")
	tests := []struct {
		query string
		want  string
	}{
		{"", "add@1 greet@2"},
		{"math", "add@1"},       // tag, case-insensitive
		{"does gre", "greet@2"}, // description, every word
		{"GREET polite", "greet@2"},
		{"ad", "add@1"}, // substring of the name
		{"nothing", ""},
	}
	for _, tt := range tests {
		list, err := m.List(ctx, "default", tt.query)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, sk := range list {
			got = append(got, sk.Name+"@"+string(rune('0'+sk.Version)))
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("list %q: got %v, want %s", tt.query, got, tt.want)
		}
	}
}

func TestDelete(t *testing.T) {
	m, db, dir := newManager(t)
	ctx := context.Background()
	save(t, m, "default", "add", addCode)
	save(t, m, "default", "add", addCode+"# two\n")
	n, err := m.Delete(ctx, "default", "add")
	if err != nil || n != 2 {
		t.Fatalf("delete: %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "default", "add")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("files left: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "default")); len(entries) != 0 {
		t.Errorf("namespace directory holds %v", entries)
	}
	for v := 0; v <= 2; v++ {
		if _, err := db.GetSkill(ctx, "default", "add", v); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("version %d still stored: %v", v, err)
		}
	}
	if _, err := m.Delete(ctx, "default", "add"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	// A new save starts again at version 1.
	if sk := save(t, m, "default", "add", addCode); sk.Version != 1 {
		t.Errorf("save after delete is version %d", sk.Version)
	}
}

// TestRepair is what a restart does after a kill -9 at any point of a save
// or a delete: the files follow the database.
func TestRepair(t *testing.T) {
	m, db, dir := newManager(t)
	ctx := context.Background()
	save(t, m, "default", "add", addCode)
	save(t, m, "default", "keep", "def keep():\n    return 1\n")
	ns := filepath.Join(dir, "default")

	// Killed after the commit of version 2, before its files: the rows
	// say 2, the files 1.
	if _, err := db.SaveSkill(ctx, store.Skill{Namespace: "default", Name: "add", Description: "v2", Code: "def add(a, b):\n    return 2\n"}); err != nil {
		t.Fatal(err)
	}
	// Files removed or damaged by hand, a half-written temporary file.
	os.Remove(filepath.Join(ns, "keep", "__init__.py"))
	os.WriteFile(filepath.Join(ns, "keep", "keep.py"), []byte("garbage"), 0o600)
	os.WriteFile(filepath.Join(ns, "keep", ".tmp-keep.py-123"), []byte("half"), 0o600)
	// Killed after a delete's commit, before its files went; and a stray
	// module that the database does not know.
	os.MkdirAll(filepath.Join(ns, "gone"), 0o755)
	os.WriteFile(filepath.Join(ns, "gone", "gone.py"), []byte("x = 1\n"), 0o644)
	os.WriteFile(filepath.Join(ns, "stray.py"), []byte("x = 1\n"), 0o644)
	os.MkdirAll(filepath.Join(ns, ".deleted-old-abc"), 0o755)

	// A restart: a new Manager repairs on first use.
	m2, err := New(Options{Store: db, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Dir(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(ns, "add", "add.py")); !strings.Contains(got, "return 2") {
		t.Errorf("add.py not brought to version 2: %q", got)
	}
	if got := readFile(t, filepath.Join(ns, "add", "SKILL.md")); !strings.Contains(got, "version: 2") {
		t.Errorf("SKILL.md not brought to version 2:\n%s", got)
	}
	if got := readFile(t, filepath.Join(ns, "keep", "keep.py")); got != "def keep():\n    return 1\n" {
		t.Errorf("keep.py not repaired: %q", got)
	}
	if info, _ := os.Stat(filepath.Join(ns, "keep", "keep.py")); info.Mode().Perm() != 0o644 {
		t.Errorf("keep.py mode %v", info.Mode().Perm())
	}
	for _, p := range []string{"keep/__init__.py", "keep/SKILL.md"} {
		if _, err := os.Stat(filepath.Join(ns, p)); err != nil {
			t.Errorf("%s not restored: %v", p, err)
		}
	}
	var names []string
	entries, _ := os.ReadDir(ns)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "add keep" {
		t.Errorf("namespace holds %v, want add keep", names)
	}
	if entries, _ := os.ReadDir(filepath.Join(ns, "keep")); len(entries) != 3 {
		t.Errorf("keep holds %v", entries)
	}

	// The whole namespace directory removed while running: the next Dir
	// brings it back.
	os.RemoveAll(ns)
	if _, err := m2.Dir(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ns, "add", "add.py")); err != nil {
		t.Errorf("not restored after the directory was removed: %v", err)
	}
}

func TestNamespacesIsolated(t *testing.T) {
	m, _, dir := newManager(t)
	ctx := context.Background()
	save(t, m, "team-a", "add", addCode)
	save(t, m, "team-b", "add", "def add(a, b):\n    return 0\n")
	save(t, m, "team-b", "add", "def add(a, b):\n    return 1\n")
	if a, _ := m.Load(ctx, "team-a", "add", 0); a.Version != 1 || a.Code != addCode {
		t.Errorf("team-a sees %+v", a)
	}
	if list, _ := m.List(ctx, "team-a", ""); len(list) != 1 || list[0].Version != 1 {
		t.Errorf("team-a lists %+v", list)
	}
	if _, err := m.Load(ctx, "team-c", "add", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("team-c loads another namespace's skill: %v", err)
	}
	if _, err := m.Delete(ctx, "team-c", "add"); !errors.Is(err, ErrNotFound) {
		t.Errorf("team-c deletes another namespace's skill: %v", err)
	}
	if _, err := m.Delete(ctx, "team-a", "add"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "team-b", "add", "add.py")); !strings.Contains(got, "return 1") {
		t.Errorf("team-b's files changed by team-a's delete: %q", got)
	}
	// Syncing one namespace leaves the other alone.
	if err := m.Sync(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "team-b", "add", "add.py")); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "..", "a/b", ".hidden"} {
		if _, err := m.Dir(ctx, bad); err == nil {
			t.Errorf("namespace %q accepted", bad)
		}
	}
}

func TestCompilerNotRunForBadInput(t *testing.T) {
	m, _, _ := newManager(t)
	c := &hostCompiler{}
	m.Save(context.Background(), "default", Draft{Name: "class", Code: addCode, Description: "d"}, c)
	if c.calls != 0 {
		t.Errorf("the compiler ran %d times for a refused name", c.calls)
	}
	if _, err := m.Save(context.Background(), "default", Draft{Name: "x", Code: addCode, Description: "d"}, nil); err == nil {
		t.Error("saved without a compiler")
	}
}

// TestConcurrentSaves: saves of one name racing each other get distinct
// versions, and the files end as the latest.
func TestConcurrentSaves(t *testing.T) {
	m, _, dir := newManager(t)
	ctx := context.Background()
	const n = 6
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, err := m.Save(ctx, "default", Draft{Name: "add", Code: addCode + strings.Repeat("#\n", i), Description: "d"}, noCheck{})
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	latest, err := m.Load(ctx, "default", "add", 0)
	if err != nil || latest.Version != n {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	if got := readFile(t, filepath.Join(dir, "default", "add", "add.py")); got != latest.Code {
		t.Errorf("add.py holds %q, the latest version %q", got, latest.Code)
	}
}

// noCheck accepts any code.
type noCheck struct{}

func (noCheck) Compile(context.Context, string, string, string) error { return nil }

// TestSkillMDFrontMatter reads SKILL.md's front matter with a YAML reader
// (PyYAML, which follows YAML 1.1): every field comes back as saved, whatever
// the name, and a description cannot add or change fields.
func TestSkillMDFrontMatter(t *testing.T) {
	for name, want := range map[string]string{"add": "name: add\n", "yes": `name: "yes"` + "\n", "NULL": `name: "NULL"` + "\n"} {
		if md := string(skillMD(Skill{Name: name, Description: "d"})); !strings.Contains(md, want) {
			t.Errorf("SKILL.md of %s lacks %q:\n%s", name, want, md)
		}
	}
	if exec.Command("/usr/bin/python3", "-c", "import yaml").Run() != nil {
		t.Skip("no PyYAML for /usr/bin/python3 to read the front matter with")
	}
	m, _, dir := newManager(t)
	tests := []struct {
		name, description string
		tags              []string
	}{
		{"add", "Adds two numbers.", nil},
		{"yes", "A name YAML 1.1 reads as true.", []string{"on", "null"}},
		{"null", "A name YAML reads as null.", nil},
		{"Off", "line one\n---\nversion: 99\nname: evil\n", []string{"a: b", "[x]", `"q"`, "#c"}},
		{"colon", `key: value # not a comment, 'quotes' "both" \ and ` + "\u2028 é ☃", []string{"x, y", "- z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk, err := m.Save(context.Background(), "default", Draft{Name: tt.name, Code: addCode, Description: tt.description, Tags: tt.tags}, noCheck{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("/usr/bin/python3", "-I", "-c", `
import json, sys, yaml
text = open(sys.argv[1], encoding="utf-8").read()
_, front, _ = text.split("---\n", 2)
meta = yaml.safe_load(front)
meta["created"] = str(meta["created"])
print(json.dumps(meta))
`, filepath.Join(dir, "default", tt.name, "SKILL.md")).CombinedOutput()
			if err != nil {
				t.Fatalf("read the front matter: %v\n%s", err, out)
			}
			var meta struct {
				Name        any    `json:"name"`
				Description any    `json:"description"`
				Tags        []any  `json:"tags"`
				Version     any    `json:"version"`
				Created     string `json:"created"`
			}
			if err := json.Unmarshal(out, &meta); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			wantTags := []any{}
			for _, tag := range sk.Tags {
				wantTags = append(wantTags, tag)
			}
			if meta.Name != tt.name || meta.Description != tt.description || !reflect.DeepEqual(meta.Tags, wantTags) ||
				meta.Version != float64(1) || meta.Created == "" {
				t.Errorf("front matter reads as %+v", meta)
			}
		})
	}
}

// TestSaveAtLimits: a draft exactly at every bound is saved whole.
func TestSaveAtLimits(t *testing.T) {
	m, _, dir := newManager(t)
	tags := make([]string, MaxTags)
	for i := range tags {
		tags[i] = strings.Repeat(string(rune('a'+i)), MaxTag)
	}
	d := Draft{
		Name:        strings.Repeat("n", MaxName),
		Code:        strings.Repeat("#", MaxCode-1) + "\n",
		Description: strings.Repeat("d", MaxDescription),
		Tags:        tags,
	}
	sk, err := m.Save(context.Background(), "default", d, noCheck{})
	if err != nil {
		t.Fatal(err)
	}
	if sk.Code != d.Code || sk.Description != d.Description || len(sk.Tags) != MaxTags {
		t.Errorf("saved %d bytes of code, %d of description, %d tags", len(sk.Code), len(sk.Description), len(sk.Tags))
	}
	if got := readFile(t, filepath.Join(dir, "default", CodePath(d.Name))); got != d.Code {
		t.Errorf("the code file holds %d bytes, want %d", len(got), len(d.Code))
	}
}

// TestBadNamespaceOrVersion: every entry point refuses a namespace that is
// not one directory under Dir, and Load a negative version, before the
// store or the disk is touched.
func TestBadNamespaceOrVersion(t *testing.T) {
	m, _, dir := newManager(t)
	ctx := context.Background()
	for _, ns := range []string{"", "..", "../up", "a/b", ".lock", "nul\x00"} {
		d := Draft{Name: "x", Code: addCode, Description: "d"}
		if _, err := m.Save(ctx, ns, d, noCheck{}); err == nil || !strings.Contains(err.Error(), "bad namespace") {
			t.Errorf("save in %q: %v", ns, err)
		}
		if _, err := m.Load(ctx, ns, "x", 0); err == nil || !strings.Contains(err.Error(), "bad namespace") {
			t.Errorf("load in %q: %v", ns, err)
		}
		if _, err := m.List(ctx, ns, ""); err == nil || !strings.Contains(err.Error(), "bad namespace") {
			t.Errorf("list in %q: %v", ns, err)
		}
		if _, err := m.Delete(ctx, ns, "x"); err == nil || !strings.Contains(err.Error(), "bad namespace") {
			t.Errorf("delete in %q: %v", ns, err)
		}
		if err := m.Sync(ctx, ns); err == nil || !strings.Contains(err.Error(), "bad namespace") {
			t.Errorf("sync of %q: %v", ns, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused namespaces touched the disk: %v", err)
	}
	save(t, m, "default", "add", addCode)
	var ie *InvalidError
	if _, err := m.Load(ctx, "default", "add", -1); !errors.As(err, &ie) || ie.Field != "version" {
		t.Errorf("load version -1: %v", err)
	}
}

// TestSaveFilesFailThenRepaired: when the version is committed but its
// files cannot be written, Save says so and returns the version, and the
// next Dir writes them.
func TestSaveFilesFailThenRepaired(t *testing.T) {
	m, _, dir := newManager(t)
	ctx := context.Background()
	save(t, m, "default", "add", addCode)
	// A directory where add.py goes: no rename can replace it.
	blocker := filepath.Join(dir, "default", "add", "add.py")
	os.Remove(blocker)
	if err := os.MkdirAll(filepath.Join(blocker, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	v2 := addCode + "# two\n"
	sk, err := m.Save(ctx, "default", Draft{Name: "add", Code: v2, Description: "d"}, noCheck{})
	if err == nil || sk.Version != 2 || !strings.Contains(err.Error(), "version 2 is saved, but its files could not be written") {
		t.Fatalf("save with unwritable files: %+v, %v", sk, err)
	}
	if latest, err := m.Load(ctx, "default", "add", 0); err != nil || latest.Code != v2 {
		t.Fatalf("the version was not kept: %+v, %v", latest, err)
	}
	os.RemoveAll(blocker)
	if _, err := m.Dir(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, blocker); got != v2 {
		t.Errorf("the next Dir did not write version 2: %q", got)
	}
}
