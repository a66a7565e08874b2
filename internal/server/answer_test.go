package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
)

// outputExecutor returns a fixed output, as code that printed it would.
type outputExecutor struct {
	stdout, stderr string
	result         any
}

func (e outputExecutor) Exec(context.Context, sandbox.Request) *sandbox.Result {
	return &sandbox.Result{OK: true, Stdout: e.stdout, Stderr: e.stderr, Result: e.result, Duration: time.Millisecond, Isolation: sandbox.Production}
}
func (outputExecutor) Level() sandbox.Level { return sandbox.Production }

func answerServer(t *testing.T, ex Executor, budget int) (*mcp.ClientSession, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Sandbox.AnswerBudget = budget
	dataDir := t.TempDir()
	s, err := New(Options{Config: cfg, Executor: ex, DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return connectClient(t, s), s.Workspace(DefaultNamespace)
}

// TestAnswerBudget: print('x' * 5_000_000) reaches the model as at most the
// budget, head and tail with the cut marked, in the structured content and
// in a text rendering that is not its copy; the whole output is in a
// workspace file, linked as a resource.
func TestAnswerBudget(t *testing.T) {
	const budget = 20_000
	big := "HEAD" + strings.Repeat("x", 1<<20) + "TAIL\n" // the output limit's default
	tests := []struct {
		name string
		ex   outputExecutor
	}{
		{"stdout", outputExecutor{stdout: big}},
		{"stderr and stdout", outputExecutor{stdout: "small\n", stderr: big}},
		{"result", outputExecutor{result: map[string]any{"rows": strings.Split(strings.Repeat("row,", 20_000), ",")}}},
		{"all three", outputExecutor{stdout: big, stderr: big, result: big}},
		{"multibyte", outputExecutor{stdout: strings.Repeat("é東🚀", 30_000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, ws := answerServer(t, tt.ex, budget)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "print('x' * 5_000_000)"}})
			if err != nil {
				t.Fatal(err)
			}
			var out ExecuteCodeOutput
			structured(t, res, &out)
			result, _ := resultText(out.Result)
			shown := utf8.RuneCountInString(out.Stdout) + utf8.RuneCountInString(out.Stderr) + utf8.RuneCountInString(result)
			if shown > budget+1000 { // the markers' words are on top of the kept text
				t.Errorf("%d characters reach the model, want about %d", shown, budget)
			}
			for _, part := range []string{out.Stdout, out.Stderr, result} {
				if !utf8.ValidString(part) {
					t.Error("a cut split a character")
				}
			}
			if out.Truncated == nil || out.OutputFile == "" || !strings.HasPrefix(out.OutputFile, ".codecell/output/") {
				t.Fatalf("truncated %+v, output_file %q", out.Truncated, out.OutputFile)
			}
			if strings.Contains(big, out.Stdout) && out.Stdout == big {
				t.Error("stdout came back whole")
			}
			if out.Truncated.Stdout && (!strings.HasPrefix(out.Stdout, "HEAD") && !strings.HasPrefix(out.Stdout, "é") ||
				!strings.Contains(out.Stdout, "characters cut here") || !strings.Contains(out.Stdout, out.OutputFile)) {
				t.Errorf("stdout is not head, marker and tail: %.200q ... %.200q", out.Stdout, out.Stdout[max(0, len(out.Stdout)-200):])
			}
			if out.Truncated.Stdout && strings.HasPrefix(out.Stdout, "HEAD") && !strings.HasSuffix(out.Stdout, "TAIL\n") {
				t.Errorf("stdout lost its tail: ...%q", out.Stdout[len(out.Stdout)-50:])
			}
			// The whole output is in the workspace file, and linked.
			whole, err := os.ReadFile(filepath.Join(ws, out.OutputFile))
			if err != nil {
				t.Fatal(err)
			}
			if tt.ex.stdout != "" && !strings.Contains(string(whole), tt.ex.stdout) {
				t.Error("the output file lacks the whole stdout")
			}
			var link *mcp.ResourceLink
			var text string
			for _, c := range res.Content {
				switch c := c.(type) {
				case *mcp.ResourceLink:
					link = c
				case *mcp.TextContent:
					text += c.Text
				}
			}
			if link == nil || link.URI != "file:///workspace/"+out.OutputFile {
				t.Errorf("no resource link to %s: %+v", out.OutputFile, res.Content)
			}
			if len(out.Files) != 0 || len(res.Content) != 2 {
				t.Errorf("the output file is also among the files: %v, %d contents", out.Files, len(res.Content))
			}
			// The text is a rendering within the budget, not the JSON of
			// the structured content.
			raw, _ := json.Marshal(res.StructuredContent)
			if text == string(raw) || utf8.RuneCountInString(text) > budget+2000 {
				t.Errorf("text content is %d characters (the structured JSON is %d)", len(text), len(raw))
			}
			if !strings.Contains(text, "[cut to the answer budget; the whole output is in "+out.OutputFile+"]") {
				t.Errorf("the text does not say where the whole output is: ...%q", text[max(0, len(text)-300):])
			}
		})
	}
}

// TestAnswerWithinBudget: an answer within the budget is whole, with no
// file, and the structured content leaves out what is empty.
func TestAnswerWithinBudget(t *testing.T) {
	cs, ws := answerServer(t, outputExecutor{stdout: strings.Repeat("y", 19_000), result: 42.0}, 20_000)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var out ExecuteCodeOutput
	structured(t, res, &out)
	if len(out.Stdout) != 19_000 || out.Truncated != nil || out.OutputFile != "" || out.Result != 42.0 {
		t.Errorf("stdout %d bytes, truncated %+v, file %q, result %v", len(out.Stdout), out.Truncated, out.OutputFile, out.Result)
	}
	if _, err := os.Stat(filepath.Join(ws, outputDir)); !os.IsNotExist(err) {
		t.Errorf("an output dir was made: %v", err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	for _, key := range []string{`"stderr"`, `"truncated"`, `"files"`, `"tool_calls"`, `"context_savings"`} {
		if strings.Contains(string(raw), key) {
			t.Errorf("structured content has %s though it is empty: %s", key, raw[len(raw)-200:])
		}
	}
}

// TestAnswerBudgetOff: answerBudget 0 returns everything the output limit
// let through.
func TestAnswerBudgetOff(t *testing.T) {
	big := strings.Repeat("z", 100_000)
	cs, _ := answerServer(t, outputExecutor{stdout: big}, 0)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var out ExecuteCodeOutput
	structured(t, res, &out)
	if out.Stdout != big || out.OutputFile != "" {
		t.Errorf("stdout %d bytes, file %q", len(out.Stdout), out.OutputFile)
	}
}

// TestAnswerOutputsKept: the output dir keeps the newest keptOutputs files.
func TestAnswerOutputsKept(t *testing.T) {
	cs, ws := answerServer(t, outputExecutor{stdout: strings.Repeat("w", 30_000)}, 1_000)
	var last string
	for range keptOutputs + 3 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		var out ExecuteCodeOutput
		structured(t, res, &out)
		last = out.OutputFile
	}
	entries, err := os.ReadDir(filepath.Join(ws, outputDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != keptOutputs {
		t.Errorf("%d output files kept, want %d", len(entries), keptOutputs)
	}
	if _, err := os.Stat(filepath.Join(ws, last)); err != nil {
		t.Errorf("the newest output is gone: %v", err)
	}
}

func TestShare(t *testing.T) {
	parts := []*answerPart{{runes: 100}, {runes: 50_000}, {runes: 30_000}}
	if !share(parts, 20_000) {
		t.Fatal("nothing to cut")
	}
	if parts[0].keep != 100 || parts[1].keep+parts[2].keep > 20_000-100 || parts[1].keep < 9_000 || parts[2].keep < 9_000 {
		t.Errorf("keeps %d %d %d", parts[0].keep, parts[1].keep, parts[2].keep)
	}
	if share([]*answerPart{{runes: 10}, {runes: 20}}, 30) {
		t.Error("a fitting answer is cut")
	}
}

// TestAnswerBudgetCutsNoValue: an answer over the budget is tokenized
// before it is cut, so that the cut never leaves part of a value (an
// address cut to dave.trunc@example.o) for the gate to miss; the whole
// output file keeps the values as the code printed them.
func TestAnswerBudgetCutsNoValue(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 60_000; i++ {
		fmt.Fprintf(&b, "row %d: dave.trunc%d@example.org\n", i, i)
	}
	for _, budget := range []int{1000, 1001, 1007, 2003, 5000} {
		cs, ws := answerServer(t, outputExecutor{stdout: b.String(), result: b.String()}, budget)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		if strings.Contains(string(raw), "dave") || strings.Contains(string(raw), "@e") {
			t.Errorf("budget %d: part of an address reached the answer: %.300s", budget, raw)
		}
		var out ExecuteCodeOutput
		structured(t, res, &out)
		if out.OutputFile == "" || out.Truncated == nil || !out.Truncated.Stdout {
			t.Fatalf("budget %d: not cut: %+v", budget, out)
		}
		whole, err := os.ReadFile(filepath.Join(ws, out.OutputFile))
		if err != nil || !strings.Contains(string(whole), "dave.trunc0@example.org") {
			t.Errorf("budget %d: the whole output lost its values: %v", budget, err)
		}
	}
}
