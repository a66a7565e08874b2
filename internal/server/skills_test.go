package server

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/skills"
	"github.com/codecell/codecell/internal/store"
)

// compileExecutor plays the sandbox for save_skill: it answers the compile
// check as Python would for the code it was given, and records requests.
type compileExecutor struct {
	mu   sync.Mutex
	reqs []sandbox.Request
}

func (e *compileExecutor) Exec(ctx context.Context, req sandbox.Request) *sandbox.Result {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	e.mu.Unlock()
	src, _ := req.Context["source"].(string)
	switch {
	case strings.Contains(src, "TIMEOUT"):
		return &sandbox.Result{Error: &sandbox.ExecError{Type: sandbox.ErrTimeout, Message: "too slow"}}
	case strings.Contains(src, "def g(:"):
		return &sandbox.Result{OK: true, Result: map[string]any{"line": float64(3), "column": float64(7), "message": "invalid syntax"}}
	}
	return &sandbox.Result{OK: true}
}
func (*compileExecutor) Level() sandbox.Level { return sandbox.Production }

func newSkillsServer(t *testing.T) (*Server, *compileExecutor, string) {
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
	ex := &compileExecutor{}
	s, err := New(Options{Config: config.Default(), Executor: ex, DataDir: dataDir, Store: db, Skills: m})
	if err != nil {
		t.Fatal(err)
	}
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
		res, err := connectClient(t, s).ListTools(ctx, nil)
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
	without, err := New(Options{Config: config.Default(), Executor: &compileExecutor{}, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(without); got != "" {
		t.Errorf("without a skills manager: %q", got)
	}
}
