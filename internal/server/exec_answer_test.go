package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/sandbox"
)

// printed is an execFunc whose code succeeds with out's output and
// result, as code that printed them would.
func printed(out sandbox.Result) execFunc {
	return func(context.Context, sandbox.Request) *sandbox.Result {
		res := out
		res.OK, res.Duration = true, time.Millisecond
		return &res
	}
}

// answering is newTestServer's mod for these tests: the lean default
// config with budget as its answer budget, and ex as the sandbox.
func answering(ex Executor, budget int) func(*Options) {
	return func(o *Options) {
		o.Config = config.Default()
		o.Config.Sandbox.AnswerBudget = budget
		o.Executor = ex
	}
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
		out  sandbox.Result
	}{
		{"stdout", sandbox.Result{Stdout: big}},
		{"stderr and stdout", sandbox.Result{Stdout: "small\n", Stderr: big}},
		{"result", sandbox.Result{Result: map[string]any{"rows": strings.Split(strings.Repeat("row,", 20_000), ",")}}},
		{"all three", sandbox.Result{Stdout: big, Stderr: big, Result: big}},
		{"multibyte", sandbox.Result{Stdout: strings.Repeat("é東🚀", 30_000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, cs := newTestServer(t, answering(printed(tt.out), budget))
			ws := s.Workspace(DefaultNamespace)
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
			if tt.out.Stdout != "" && !strings.Contains(string(whole), tt.out.Stdout) {
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
// file, and the structured content leaves out what is empty. The budget
// holds the structured and the text content together, each with stdout.
func TestAnswerWithinBudget(t *testing.T) {
	s, cs := newTestServer(t, answering(printed(sandbox.Result{Stdout: strings.Repeat("y", 9_000), Result: 42.0}), 20_000))
	ws := s.Workspace(DefaultNamespace)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var out ExecuteCodeOutput
	structured(t, res, &out)
	if len(out.Stdout) != 9_000 || out.Truncated != nil || out.OutputFile != "" || out.Result != 42.0 {
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
	_, cs := newTestServer(t, answering(printed(sandbox.Result{Stdout: big}), 0))
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
	s, cs := newTestServer(t, answering(printed(sandbox.Result{Stdout: strings.Repeat("w", 30_000)}), 1_000))
	ws := s.Workspace(DefaultNamespace)
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
	parts := []*answerPart{{cost: 100}, {cost: 50_000}, {cost: 30_000}}
	if !share(parts, 20_000) {
		t.Fatal("nothing to cut")
	}
	if parts[0].keep != 100 || parts[1].keep+parts[2].keep > 20_000-100 || parts[1].keep < 9_000 || parts[2].keep < 9_000 {
		t.Errorf("keeps %d %d %d", parts[0].keep, parts[1].keep, parts[2].keep)
	}
	if share([]*answerPart{{cost: 10}, {cost: 20}}, 30) {
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
		s, cs := newTestServer(t, answering(printed(sandbox.Result{Stdout: b.String(), Result: b.String()}), budget))
		ws := s.Workspace(DefaultNamespace)
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

// largestAnswer makes the largest answer it can: an error whose message
// and traceback are each the output limit, output at the limit on both
// streams, a result at the limit, and 100 files with 4 KB paths.
type largestAnswer struct {
	stdout, stderr, message, traceback string
	result                             any
	files                              int
}

func (e largestAnswer) exec(_ context.Context, req sandbox.Request) *sandbox.Result {
	// A path of 4 KB: directories of 250 characters, as deep as PATH_MAX
	// lets them go.
	seg := strings.Repeat("d", 250)
	for i := range e.files {
		dir := filepath.Join(req.Workspace, fmt.Sprintf("f%03d", i))
		for range 15 {
			dir = filepath.Join(dir, seg)
		}
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "data.txt"), []byte("x"), 0o644)
	}
	res := &sandbox.Result{OK: e.message == "", Stdout: e.stdout, Stderr: e.stderr, Result: e.result, Duration: time.Millisecond, Isolation: sandbox.Production}
	if e.message != "" {
		res.Error = &sandbox.ExecError{Type: "ValueError", Message: e.message, Traceback: e.traceback}
	}
	return res
}

// cutMarkers matches what marks a cut in an answer.
var cutMarkers = regexp.MustCompile(`\[codecell: [^\]]*\]|\[files\] and \d+ more \([^)]*\)|\[cut to the answer budget[^\]]*\]`)

// TestAnswerBoundsEverything (issue #28, findings 7 and 8): every part of
// an answer, the error's message and traceback and the files list and
// their links as well as the output and result, in the structured content
// and the text together, is within the answer budget; each cut says where
// the rest is. Before, raise ValueError('E' * 900000) answered 2.6 MiB and
// 100 files with 4 KB paths 1.45 MiB.
func TestAnswerBoundsEverything(t *testing.T) {
	const limit = 1 << 20 // the output limit's default
	huge := strings.Repeat("E", 900_000)
	var tb strings.Builder
	tb.WriteString("Traceback (most recent call last):\n")
	name := "recurse_" + strings.Repeat("deep_", 40)
	for i := 0; tb.Len() < limit; i++ {
		fmt.Fprintf(&tb, "  File \"<cell>\", line 2, in %s\n    return %s(n - 1, '%s')\n", name, name, strings.Repeat("arg", 30))
	}
	traceback := tb.String() + "ValueError: " + huge + "\n"
	tests := []struct {
		name string
		ex   largestAnswer
	}{
		{"exception message", largestAnswer{message: huge, traceback: "Traceback (most recent call last):\n  File \"<cell>\", line 1, in <module>\nValueError: " + huge + "\n"}},
		{"deep traceback", largestAnswer{message: "deep", traceback: traceback}},
		{"long file names", largestAnswer{files: 100}},
		{"all at once", largestAnswer{
			stdout: strings.Repeat("o", limit), stderr: strings.Repeat("e", limit), result: strings.Repeat("r", limit),
			message: huge, traceback: traceback, files: 100,
		}},
	}
	for _, tt := range tests {
		for _, budget := range []int{config.DefaultAnswerBudget, 5_000, config.MinAnswerBudget} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, budget), func(t *testing.T) {
				s, cs := newTestServer(t, answering(execFunc(tt.ex.exec), budget))
				ws := s.Workspace(DefaultNamespace)
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": "x"}})
				if err != nil {
					t.Fatal(err)
				}
				raw, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				markers := 0
				for _, m := range cutMarkers.FindAll(raw, -1) {
					markers += len(m)
				}
				if len(raw) > budget+markers {
					t.Errorf("the answer is %d bytes, over the budget of %d and its markers' %d", len(raw), budget, markers)
				}
				if budget == config.DefaultAnswerBudget && len(raw) > budget {
					t.Errorf("the answer is %d bytes, over the budget of %d, which has room for the markers", len(raw), budget)
				}
				t.Logf("answer: %d bytes", len(raw))
				var out ExecuteCodeOutput
				structured(t, res, &out)
				if out.OutputFile == "" {
					t.Fatalf("no output file: %+v", out.Truncated)
				}
				whole, err := os.ReadFile(filepath.Join(ws, out.OutputFile))
				if err != nil {
					t.Fatal(err)
				}
				if tt.ex.message != "" {
					if out.Truncated == nil || !out.Truncated.Error || !strings.Contains(string(whole), tt.ex.traceback) {
						t.Errorf("the error was not cut, or is not whole in the output file: truncated %+v", out.Truncated)
					}
					if out.Error == nil || !strings.Contains(out.Error.Message+out.Error.Traceback, "characters cut here") {
						t.Errorf("the error's cut is not marked: %.300v", out.Error)
					}
				}
				if tt.ex.files > 0 {
					if len(out.Files)+out.FilesOmitted != tt.ex.files || out.FilesOmitted == 0 {
						t.Errorf("%d files listed, %d omitted, of %d", len(out.Files), out.FilesOmitted, tt.ex.files)
					}
					if !strings.Contains(string(raw), "and "+fmt.Sprint(out.FilesOmitted)+" more (all are listed in "+out.OutputFile) {
						t.Errorf("the text does not say where the files left out are listed")
					}
					if !strings.Contains(string(whole), "f099/ddd") {
						t.Errorf("the output file does not list the files")
					}
				}
			})
		}
	}
}

// TestOutputSpillKeepsTheTail: past its bound the spill keeps each
// stream's last bytes (as many as it holds in memory) and counts those
// between, whatever the size of the writes.
func TestOutputSpillKeepsTheTail(t *testing.T) {
	for _, chunk := range []int{1, 3, 7, 64, 1000} {
		o := newOutputSpill(10, 100)
		var all strings.Builder
		for i := 0; all.Len() < 1000; i++ {
			all.WriteString(fmt.Sprintf("%d,", i))
		}
		whole := all.String()
		for i := 0; i < len(whole); i += chunk {
			o.add("stdout", []byte(whole[i:min(i+chunk, len(whole))]))
		}
		head, tail, dropped, ok := o.text("stdout")
		if !ok || head != whole[:100] || tail != whole[len(whole)-10:] || dropped != int64(len(whole)-110) || o.dropped() != dropped {
			t.Errorf("writes of %d: head %q, tail %q, dropped %d, want %q, %q, %d", chunk, head, tail, dropped, whole[:100], whole[len(whole)-10:], len(whole)-110)
		}
		o.Close()
	}
}
