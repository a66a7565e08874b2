package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/skills"
	"github.com/codecell/codecell/internal/store"
)

// compileCheck plays the sandbox for save_skill: it answers the compile
// check as Python would for the code it was given.
func compileCheck(_ context.Context, req sandbox.Request) *sandbox.Result {
	src, _ := req.Context["source"].(string)
	switch {
	case strings.Contains(src, "TIMEOUT"):
		return &sandbox.Result{Error: &sandbox.ExecError{Type: sandbox.ErrTimeout, Message: "too slow"}}
	case strings.Contains(src, "NO ANSWER"):
		return &sandbox.Result{}
	case strings.Contains(src, "def g(:"):
		return &sandbox.Result{OK: true, Result: map[string]any{"line": float64(3), "column": float64(7), "message": "invalid syntax"}}
	}
	return &sandbox.Result{OK: true}
}

// newSkillsServer is a server with a store and skills under its data dir,
// and compileCheck as its sandbox, recorded.
func newSkillsServer(t *testing.T) (*Server, *recordingExec, string) {
	t.Helper()
	dataDir := t.TempDir()
	db, err := store.Open(filepath.Join(dataDir, "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := skills.New(skills.Options{Store: db, Dir: filepath.Join(dataDir, "skills")})
	if err != nil {
		t.Fatal(err)
	}
	ex := &recordingExec{execFunc: compileCheck}
	s, _ := newTestServer(t, func(o *Options) { o.Executor, o.DataDir, o.Store, o.Skills = ex, dataDir, db, m })
	return s, ex, dataDir
}

func TestSaveSkillCompilesInTheSandbox(t *testing.T) {
	s, ex, dataDir := newSkillsServer(t)
	ctx := context.Background()
	_, _, err := s.saveSkill(ctx, nil, SaveSkillInput{Name: "x", Code: "def f():\n    pass\ndef g(:\n", Description: "d"})
	if err == nil || !strings.Contains(err.Error(), "invalid argument code: does not compile: line 3, column 7: invalid syntax") {
		t.Fatalf("syntax error: %v", err)
	}
	_, _, err = s.saveSkill(ctx, nil, SaveSkillInput{Name: "x", Code: "# TIMEOUT\n", Description: "d"})
	if err == nil || strings.Contains(err.Error(), "invalid argument") || !strings.Contains(err.Error(), "Timeout") {
		t.Fatalf("a failed check is not the caller's fault: %v", err)
	}
	_, out, err := s.saveSkill(ctx, nil, SaveSkillInput{Name: "x", Code: "def f():\n    return 1\n", Description: "d"})
	if err != nil || out.Version != 1 || out.Import != "from skills.x import ..." {
		t.Fatalf("save: %+v %v", out, err)
	}
	want := filepath.Join(dataDir, "skills", DefaultNamespace)
	for _, req := range ex.reqs {
		if req.Skills != want || req.Workspace != s.Workspace(DefaultNamespace) || req.Context["filename"] != "x.py" {
			t.Errorf("compile request: skills %q workspace %q context %v", req.Skills, req.Workspace, req.Context)
		}
	}
	// Executions get the namespace's skills too.
	if _, _, err := s.executeCode(ctx, nil, ExecuteCodeInput{Code: "print(1)"}); err != nil {
		t.Fatal(err)
	}
	if last := ex.reqs[len(ex.reqs)-1]; last.Skills != want {
		t.Errorf("execute_code's request has skills %q, want %q", last.Skills, want)
	}
}

func TestSkillToolsListed(t *testing.T) {
	ctx := context.Background()
	names := func(s *Server) string {
		res, err := connectClient(t, s, nil).ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			if strings.Contains(tool.Name, "skill") {
				out = append(out, tool.Name)
				if tool.OutputSchema == nil {
					t.Errorf("%s has no output schema", tool.Name)
				}
			}
		}
		return strings.Join(out, " ")
	}
	s, _, _ := newSkillsServer(t)
	if got := names(s); got != "delete_skill list_skills load_skill save_skill" {
		t.Errorf("with skills: %q", got)
	}
	without, _ := newTestServer(t, nil)
	if got := names(without); got != "" {
		t.Errorf("without a skills manager: %q", got)
	}
}

// TestSkillToolsOverMCP: the four tools through a client, with the
// sandbox played by compileCheck: versions, the text renderings, and
// refusals as tool errors that name the field.
func TestSkillToolsOverMCP(t *testing.T) {
	s, _, _ := newSkillsServer(t)
	cs := connectClient(t, s, nil)
	save := func(code string) {
		t.Helper()
		mustCall(t, cs, "save_skill", map[string]any{"name": "calc", "code": code,
			"description": "Scales a number.\nSecond line.", "tags": []string{"math"}}, nil)
	}
	save("def scale(x):\n    return 2 * x\n")
	save("def scale(x):\n    return 3 * x") // no final newline

	var loaded LoadSkillOutput
	text := mustCall(t, cs, "load_skill", map[string]any{"name": "calc", "version": 1}, &loaded)
	if loaded.Version != 1 || loaded.LatestVersion != 2 || loaded.Code != "def scale(x):\n    return 2 * x\n" ||
		loaded.Import != "from skills.calc import ..." || strings.Join(loaded.Tags, ",") != "math" || loaded.Created.IsZero() {
		t.Errorf("load_skill version 1: %+v", loaded)
	}
	if !strings.HasPrefix(text, "calc version 1 of 2, ") || !strings.Contains(text, "\ntags: math\n\ndef scale") {
		t.Errorf("load_skill text:\n%s", text)
	}
	if text := mustCall(t, cs, "load_skill", map[string]any{"name": "calc"}, &loaded); loaded.Version != 2 || !strings.HasSuffix(text, "3 * x\n") {
		t.Errorf("load_skill latest: %+v\n%s", loaded, text)
	}

	var listed ListSkillsOutput
	if text := mustCall(t, cs, "list_skills", map[string]any{"query": "scales"}, &listed); len(listed.Skills) != 1 ||
		text != "calc (v2) [math]: Scales a number.\n" {
		t.Errorf("list_skills: %+v\n%q", listed, text)
	}
	if text := mustCall(t, cs, "list_skills", map[string]any{"query": "nothing"}, &listed); len(listed.Skills) != 0 || listed.Skills == nil ||
		text != "(no skills)\n" {
		t.Errorf("list_skills without a match: %+v %q", listed, text)
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"load_skill", map[string]any{"name": "calc", "version": 3}, "invalid argument version: skill calc has versions 1 to 2"},
		{"load_skill", map[string]any{"name": "calc", "version": -1}, "invalid argument version"},
		{"load_skill", map[string]any{"name": "nope"}, "no such skill"},
		{"load_skill", map[string]any{"name": "../x"}, "invalid argument name"},
		{"save_skill", map[string]any{"name": "x", "code": "x = 1\n", "description": " "}, "invalid argument description"},
		{"delete_skill", map[string]any{"name": "nope"}, "no such skill"},
	} {
		if res, text := callTool(t, cs, tc.tool, tc.args); !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: isError=%v %q, want %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}

	var deleted DeleteSkillOutput
	if text := mustCall(t, cs, "delete_skill", map[string]any{"name": "calc"}, &deleted); deleted.Versions != 2 ||
		text != "deleted skill calc (2 versions)\n" {
		t.Errorf("delete_skill: %+v %q", deleted, text)
	}
	if res, _ := callTool(t, cs, "load_skill", map[string]any{"name": "calc"}); !res.IsError {
		t.Error("load_skill after delete_skill succeeded")
	}
}

// TestCompileRequestIsWarmRequest: save_skill's compile check asks for the
// sandbox the namespace's executions and its warm pool use, so a warm one
// serves it; a sandbox that gives no answer is an error that is not the
// caller's.
func TestCompileRequestIsWarmRequest(t *testing.T) {
	s, ex, _ := newSkillsServer(t)
	ctx := context.Background()
	if _, _, err := s.saveSkill(ctx, nil, SaveSkillInput{Name: "x", Code: "x = 1\n", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	warm, got := s.WarmRequest(ctx, DefaultNamespace), ex.reqs[0]
	if got.Workspace != warm.Workspace || got.Skills != warm.Skills || got.Python != warm.Python || warm.Skills == "" {
		t.Errorf("compile request %+v, warm request %+v", got, warm)
	}
	_, _, err := s.saveSkill(ctx, nil, SaveSkillInput{Name: "x", Code: "# NO ANSWER\n", Description: "d"})
	if err == nil || strings.Contains(err.Error(), "invalid argument") || !strings.Contains(err.Error(), "no result") {
		t.Errorf("a sandbox without an answer: %v", err)
	}
}

// TestSkillsFoundByMeaning: a saved skill is found by what it does, in
// words its name and description do not share letter for letter: by
// list_skills' query, and by search_tools beside the tools (the lean list
// has no list_skills).
func TestSkillsFoundByMeaning(t *testing.T) {
	s, _, _ := newSkillsServer(t)
	ctx := context.Background()
	for _, d := range []SaveSkillInput{
		{Name: "invoice_totals", Code: "def total(rows):\n    return sum(r['amount'] for r in rows)\n", Description: "Adds up the amounts of invoice rows.", Tags: []string{"billing"}},
		{Name: "slugify", Code: "def slug(s):\n    return s.lower()\n", Description: "Turns a title into a URL slug."},
	} {
		if _, _, err := s.saveSkill(ctx, nil, d); err != nil {
			t.Fatal(err)
		}
	}
	// "invoices" is no substring of "invoice_totals" or its description:
	// list_skills used to want every word as a substring.
	list, err := ListSkills(ctx, s.skills, DefaultNamespace, ListSkillsInput{Query: "totals of invoices"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Skills) == 0 || list.Skills[0].Name != "invoice_totals" {
		t.Errorf("list_skills %q: %+v", "totals of invoices", list.Skills)
	}
	if list, _ := ListSkills(ctx, s.skills, DefaultNamespace, ListSkillsInput{Query: "slugif"}); len(list.Skills) != 1 || list.Skills[0].Name != "slugify" {
		t.Errorf("a substring still finds its skill: %+v", list.Skills)
	}
	out, err := s.searchTools(SearchToolsInput{Query: "sum the invoices"})
	if err != nil {
		t.Fatal(err)
	}
	out.Skills = s.searchSkills(ctx, DefaultNamespace, "sum the invoices")
	if len(out.Skills) == 0 || out.Skills[0].Name != "invoice_totals" || out.Skills[0].Import != "from skills.invoice_totals import ..." {
		t.Errorf("search_tools' skills: %+v", out.Skills)
	}
	if !strings.Contains(renderSearch(out), "saved skill invoice_totals") {
		t.Errorf("the text says nothing of the skill:\n%s", renderSearch(out))
	}
	if got := s.searchSkills(ctx, "another", "sum the invoices"); len(got) != 0 {
		t.Errorf("another namespace's search finds %+v", got)
	}
}
