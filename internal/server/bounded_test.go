package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/envs"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/store"
)

// TestToolsAnswerWithinBudget: tools other than execute_code, called with
// the inputs that make their largest answers, answer within the answer
// budget (text and structured content together, plus the marker), and say
// where the rest is.
func TestToolsAnswerWithinBudget(t *testing.T) {
	s, cs := newTestServer(t, nil)
	budget := s.cfg.Sandbox.AnswerBudget
	const marker = 512 // what a cut's note adds
	size := func(v any) int {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}

	// A 1 MiB text file, read with no limit.
	var big strings.Builder
	for i := 0; big.Len() < 1<<20; i++ {
		fmt.Fprintf(&big, "line %06d of a long log\n", i)
	}
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "big.log", "content": big.String()}, nil)
	res, _ := callTool(t, cs, "read_workspace_file", map[string]any{"path": "big.log"})
	var read ReadWorkspaceFileOutput
	structured(t, res, &read)
	if n := size(res); n > budget+marker || !read.More || read.NextOffset == 0 {
		t.Errorf("read_workspace_file of 1 MiB with no limit: %d bytes of answer (budget %d), more %v, next_offset %d", n, budget, read.More, read.NextOffset)
	}

	// execute_analysis filter and transform over 10,000 rows of a CSV.
	var csv strings.Builder
	csv.WriteString("id,city,amount,note\n")
	for i := range 10000 {
		fmt.Fprintf(&csv, "%d,City%d,%d,some words to make the row longer\n", i, i%50, i)
	}
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "rows.csv", "content": csv.String()}, nil)
	for name, args := range map[string]map[string]any{
		"filter": {"analysis_type": "filter", "source": "rows.csv",
			"parameters": map[string]any{"conditions": []any{map[string]any{"field": "amount", "operator": ">=", "value": 0}}}},
		"transform": {"analysis_type": "transform", "source": "rows.csv",
			"parameters": map[string]any{"select": []any{"id", "city", "amount", "note"}}},
	} {
		res, text := callTool(t, cs, "execute_analysis", args)
		if res.IsError {
			t.Fatalf("%s: %s", name, text)
		}
		var out ExecuteAnalysisOutput
		structured(t, res, &out)
		if n := size(res); n > budget+marker {
			t.Errorf("%s of 10,000 rows: %d bytes of answer (budget %d)", name, n, budget)
		}
		if out.RowsOmitted == 0 || out.OutputFile == "" || !strings.Contains(text, out.OutputFile) {
			t.Errorf("%s: rows_omitted %d, output_file %q, text %q", name, out.RowsOmitted, out.OutputFile, text)
			continue
		}
		var saved ReadWorkspaceFileOutput
		mustCall(t, cs, "read_workspace_file", map[string]any{"path": out.OutputFile, "limit": 1 << 20}, &saved)
		if lines := strings.Count(saved.Content, "\n"); lines != 10000 && !saved.More {
			t.Errorf("%s: the output file holds %d rows, want 10000", name, lines)
		}
	}
}

// TestSearchWithinBudget: search_tools at its fullest (every tool, full
// detail, with generated sources) answers within the budget and says where
// the rest is.
func TestSearchWithinBudget(t *testing.T) {
	s, cs := newTestServer(t, func(o *Options) { o.Config.Sandbox.AnswerBudget = 4000 })
	res, text := callTool(t, cs, "search_tools", map[string]any{"detail_level": "full", "limit": 100})
	var out SearchToolsOutput
	structured(t, res, &out)
	b, _ := json.Marshal(res)
	if budget := s.cfg.Sandbox.AnswerBudget; len(b) > budget+512 {
		t.Errorf("search_tools full, 100: %d bytes of answer (budget %d)", len(b), budget)
	}
	if len(out.Tools) == out.Total || !strings.Contains(text, "fit the answer budget") || !strings.Contains(out.Note, "offset") {
		t.Errorf("%d of %d tools, note %q", len(out.Tools), out.Total, out.Note)
	}
}

// TestLargeTextsWithinBudget: a 1 MiB code file, and a skill of 900 KB,
// come back within the budget, head and tail, with where the whole is.
func TestLargeTextsWithinBudget(t *testing.T) {
	s, cs := newTestServer(t, nil)
	budget := s.cfg.Sandbox.AnswerBudget
	var code strings.Builder
	for i := 0; code.Len() < 900_000; i++ {
		fmt.Fprintf(&code, "x%d = %d\n", i, i)
	}
	code.WriteString("LAST = 'the end'\n")
	mustCall(t, cs, "initialize_code_file", map[string]any{"content": code.String(), "filename": "code/big.py"}, nil)
	res, text := callTool(t, cs, "read_code_file", map[string]any{"path": "code/big.py"})
	b, _ := json.Marshal(res)
	if len(b) > budget+512 || !strings.Contains(text, "LAST = 'the end'") || !strings.Contains(text, "read_workspace_file reads the whole file") {
		t.Errorf("read_code_file of 900 KB: %d bytes of answer (budget %d); the text ends %q", len(b), budget, text[max(0, len(text)-200):])
	}
}

// TestLargeSkillWithinBudget: load_skill of a 900 KB skill answers a
// client within the budget and says how to get the whole module; code that
// calls it gets the whole.
func TestLargeSkillWithinBudget(t *testing.T) {
	s, _, _ := newSkillsServer(t)
	ctx := context.Background()
	var code strings.Builder
	for i := 0; code.Len() < 900_000; i++ {
		fmt.Fprintf(&code, "x%d = %d\n", i, i)
	}
	if _, _, err := s.saveSkill(ctx, nil, SaveSkillInput{Name: "big", Code: code.String(), Description: "a big one"}); err != nil {
		t.Fatal(err)
	}
	res, _ := callTool(t, connectClient(t, s, nil), "load_skill", map[string]any{"name": "big"})
	var out LoadSkillOutput
	structured(t, res, &out)
	b, _ := json.Marshal(res)
	if budget := s.cfg.Sandbox.AnswerBudget; len(b) > budget+512 || !strings.Contains(out.Code, "inspect.getsource") {
		t.Errorf("load_skill of 900 KB: %d bytes of answer (budget %d)", len(b), budget)
	}
	if _, whole, err := s.loadSkill(ctx, nil, LoadSkillInput{Name: "big"}); err != nil || whole.Code != code.String() {
		t.Errorf("from code, load_skill gives %d bytes of a %d-byte module (%v)", len(whole.Code), code.Len(), err)
	}
}

// TestFileListWithinBudget: 200 files with 1 KB paths are listed within the
// answer budget, the list marked truncated and saying how to see the rest.
func TestFileListWithinBudget(t *testing.T) {
	s, cs := newTestServer(t, nil)
	dir := strings.Repeat("d", 200)
	for i := range 200 {
		p := fmt.Sprintf("%s/%s/%s/%s/f%03d.txt", dir, dir, dir, dir, i)
		mustCall(t, cs, "write_workspace_file", map[string]any{"path": p, "content": "x"}, nil)
	}
	res, text := callTool(t, cs, "list_workspace_files", map[string]any{})
	var out ListWorkspaceFilesOutput
	structured(t, res, &out)
	b, _ := json.Marshal(res)
	if budget := s.cfg.Sandbox.AnswerBudget; len(b) > budget+512 || !out.Truncated || !strings.Contains(text, "give a path or a pattern") {
		t.Errorf("list_workspace_files of 200 long paths: %d bytes of answer (budget %d), %d listed, truncated %v", len(b), budget, len(out.Files), out.Truncated)
	}
}

// bigToolUpstream is one server with one tool whose description is 200 KB.
type bigToolUpstream struct{ fakeUpstreams }

func (bigToolUpstream) Tools() []catalog.Tool {
	return []catalog.Tool{{Server: "fake", Name: "wordy", Description: strings.Repeat("A tool that explains itself at length. ", 5000)}}
}

// TestToolDefinitionWithinBudget: get_tool_definition of a tool with a
// 200 KB description answers within the budget.
func TestToolDefinitionWithinBudget(t *testing.T) {
	s, cs := newTestServer(t, func(o *Options) { o.Upstreams = bigToolUpstream{} })
	res, text := callTool(t, cs, "get_tool_definition", map[string]any{"name": "fake.wordy"})
	if res.IsError {
		t.Fatal(text)
	}
	b, _ := json.Marshal(res)
	if budget := s.cfg.Sandbox.AnswerBudget; len(b) > budget+512 || !strings.Contains(text, "inspect.getsource") {
		t.Errorf("get_tool_definition of a 200 KB description: %d bytes of answer (budget %d)", len(b), budget)
	}
}

// TestSanitizeWithinBudget: sanitize_pii of a 300 KB text answers within
// the budget, saying how to have the whole.
func TestSanitizeWithinBudget(t *testing.T) {
	s, cs := newTestServer(t, nil)
	text := strings.Repeat("write to ada@example.org about the invoice. ", 7000)
	res, out := callTool(t, cs, "sanitize_pii", map[string]any{"text": text})
	b, _ := json.Marshal(res)
	if budget := s.cfg.Sandbox.AnswerBudget; len(b) > budget+512 || !strings.Contains(out, "send the text in pieces") {
		t.Errorf("sanitize_pii of %d bytes: %d bytes of answer (budget %d)", len(text), len(b), budget)
	}
}

// TestSkillListWithinBudget: 40 skills with 2 KB descriptions are listed
// within the budget, the rest counted.
func TestSkillListWithinBudget(t *testing.T) {
	s, _, _ := newSkillsServer(t)
	ctx := context.Background()
	for i := range 40 {
		if _, _, err := s.saveSkill(ctx, nil, SaveSkillInput{Name: fmt.Sprintf("skill_%02d", i), Code: "x = 1\n", Description: strings.Repeat("does a thing well. ", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	res, text := callTool(t, connectClient(t, s, nil), "list_skills", map[string]any{})
	b, _ := json.Marshal(res)
	if budget := s.cfg.Sandbox.AnswerBudget; len(b) > budget+512 || !strings.Contains(text, "skills listed, to the answer budget") {
		t.Errorf("list_skills of 40 long skills: %d bytes of answer (budget %d)", len(b), budget)
	}
}

// TestDefinitionSuggestsNearest: get_tool_definition of a misspelt name
// says which tools are nearest by spelling.
func TestDefinitionSuggestsNearest(t *testing.T) {
	_, cs := newTestServer(t, func(o *Options) { o.Upstreams = fakeUpstreams{} })
	res, text := callTool(t, cs, "get_tool_definition", map[string]any{"name": "fake.ecko"})
	if !res.IsError || !strings.Contains(text, "nearest by spelling: fake.echo") {
		t.Errorf("get_tool_definition fake.ecko: %s", text)
	}
}

// TestUnlistedToolSaysWhatToDo: a call of a tool the server does not list
// says how to list it or call it from code, where the SDK said "unknown
// tool".
func TestUnlistedToolSaysWhatToDo(t *testing.T) {
	_, cs := newTestServer(t, func(o *Options) { o.Config = config.Default(); o.Upstreams = fakeUpstreams{} })
	for name, want := range map[string]string{
		"list_workspace_files": `toolset "workspace"`,
		"fake.echo":            "from servers.fake import echo",
		"no_such_tool":         "unknown tool",
	} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q in it", name, err, want)
		}
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_workspace_files", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "from codecell import list_workspace_files") {
		t.Errorf("list_workspace_files: %v", err)
	}
}

// TestListsWithinBudget: check_installed_packages with 200 names of 200
// characters, install_dependencies' failures with pages of installer
// output, and get_execution_stats after executions that failed with 300
// error classes of their own naming, each answer within the budget.
func TestListsWithinBudget(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var names []string
	for i := range 200 {
		names = append(names, fmt.Sprintf("pkg%03d-%s", i, strings.Repeat("x", 190)))
	}
	exec := execFunc(func(_ context.Context, req sandbox.Request) *sandbox.Result {
		if req.Code == checkPackageCode {
			found := map[string]any{}
			for _, n := range names {
				found[n] = "1.0." + strings.Repeat("9", 30)
			}
			return &sandbox.Result{OK: true, Result: found, Isolation: sandbox.Production}
		}
		// Each execution fails with an exception class of the code's own.
		cls := fmt.Sprintf("Err%s%s", req.Code, strings.Repeat("Q", 100))
		return &sandbox.Result{Error: &sandbox.ExecError{Type: cls, Message: "x"}, Isolation: sandbox.Production}
	})
	s, cs := newTestServer(t, func(o *Options) {
		o.Executor, o.Store = exec, st
		o.Envs = envs.New(envs.Options{DataDir: t.TempDir(), SystemPython: "/usr/bin/python3"})
	})
	budget := s.cfg.Sandbox.AnswerBudget
	size := func(v any) int { b, _ := json.Marshal(v); return len(b) }

	res, _ := callTool(t, cs, "check_installed_packages", map[string]any{"packages": names})
	var pk CheckPackagesOutput
	structured(t, res, &pk)
	if n := size(res); n > budget || pk.Omitted == 0 || len(pk.Packages)+pk.Omitted != 200 || !strings.Contains(textOf(res), "past the answer budget") {
		t.Errorf("check_installed_packages: %d bytes (budget %d), %d listed, %d omitted", n, budget, len(pk.Packages), pk.Omitted)
	}

	for i := range 300 {
		callTool(t, cs, "execute_code", map[string]any{"code": fmt.Sprint(i)})
	}
	res, _ = callTool(t, cs, "get_execution_stats", nil)
	var stats ExecutionStatsOutput
	structured(t, res, &stats)
	others := 0
	for k, v := range stats.ErrorsByType {
		if strings.HasSuffix(k, " others)") {
			others = v
		}
	}
	if n := size(res); n > budget || stats.Failed != 300 || others == 0 {
		t.Errorf("get_execution_stats: %d bytes (budget %d), %d failed, %d in others", n, budget, stats.Failed, others)
	}

	// install_dependencies' failures, each with a page of installer output.
	var results []envs.Outcome
	for i := range 50 {
		results = append(results, envs.Outcome{Package: fmt.Sprintf("pkg%d", i), Error: strings.Repeat("e", 3000), Output: strings.Repeat("installer line\n", 2000)})
	}
	room := s.textRoom(&mcp.CallToolRequest{Session: &mcp.ServerSession{}})
	for _, n := range []int{3, 50} {
		rs := slices.Clone(results[:n])
		s.fitOutcomes(rs, room)
		if got := size(rs) + len(installText(rs)); got > room {
			t.Errorf("install_dependencies, %d failures: %d bytes of answer (room %d)", n, got, room)
		}
		if !strings.Contains(rs[0].Output+rs[0].Error, "install fewer packages") {
			t.Errorf("%d failures: the cut does not say what to do: %.300q", n, rs[0].Output)
		}
		if n == 3 && !strings.Contains(rs[2].Output, "installer line") {
			t.Errorf("3 failures: the output is gone: %.300q", rs[2].Output)
		}
	}
}
