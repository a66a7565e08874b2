package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// largestAnswers are the largest answers code can ask for (issue #28,
// findings 7 and 8): an exception's message, a traceback through 900
// functions with long names, 100 files with 4 KB paths, and all of them at
// once with both streams past the output limit.
var largestAnswers = []struct{ name, code string }{
	{"exception message", "raise ValueError('E' * 900000)"},
	{"deep traceback", deepTraceback},
	{"long file names", longFileNames},
	{"all at once", "import sys\nprint('o' * 2_000_000)\nsys.stderr.write('e' * 2_000_000)\nresult = 'r' * 2_000_000\n" +
		longFileNames + "\n" + deepTraceback},
}

// deepTraceback raises at the end of a chain of 900 functions, each
// named with 200 characters, with a message of 900,000.
const deepTraceback = `
src = ""
for i in range(900):
    name = "f%04d_" % i + "n" * 200
    nxt = "f%04d_" % (i + 1) + "n" * 200
    body = "raise ValueError('E' * 900000)" if i == 899 else nxt + "()"
    src += "def %s():\n    %s\n" % (name, body)
exec(compile(src, "chain.py", "exec"))
globals()["f0000_" + "n" * 200]()
`

// longFileNames writes 100 files, each 4 KB of path deep.
const longFileNames = `
import os
for i in range(100):
    d = os.path.join("f%03d" % i, *["d" * 250] * 15)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "data.txt"), "w").write("x")
`

// answerMarkers matches what marks a cut in an answer.
var answerMarkers = regexp.MustCompile(`\[codecell: [^\]]*\]|\[files\] and \d+ more \([^)]*\)|\[cut to the answer budget[^\]]*\]`)

// TestAnswerBudgetHoldsLargestAnswers: the serialized answer to each of
// largestAnswers, run in the real sandbox, is at most the answer budget
// and the markers of its cuts. Before, the exception's answer was 2.6 MiB
// and the files' 1.45 MiB.
func TestAnswerBudgetHoldsLargestAnswers(t *testing.T) {
	requireProduction(t)
	const budget = 20_000
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "60s", "answerBudget": 20000},
		"toolsets": ["exec"]}`)
	cs := serveStdio(t, cfgPath, dataDir, nil)
	defer cs.Close()
	for _, tt := range largestAnswers {
		t.Run(tt.name, func(t *testing.T) {
			res, out := call(t, cs, map[string]any{"code": tt.code, "timeout_seconds": 60})
			raw, _ := json.Marshal(res)
			markers := 0
			for _, m := range answerMarkers.FindAll(raw, -1) {
				markers += len(m)
			}
			t.Logf("%s: the answer is %d bytes (markers %d)", tt.name, len(raw), markers)
			if len(raw) > budget+markers {
				t.Errorf("the answer is %d bytes, over the budget of %d and its markers' %d", len(raw), budget, markers)
			}
			if out.OutputFile == "" {
				t.Errorf("nothing says where the whole output is: %.500s", raw)
			}
		})
	}
}

// TestRunawayOutputKeepsItsEnd (issue #30): output far past the sandbox's
// output limit keeps its end in the answer, and the workspace file of the
// cut answer holds the whole stream. Before, both held only the first
// MiB: the last line was gone, and the marker still said the whole output
// was in the file. The output limit here is 64 KiB, so that each stream is
// past 8 times it, where the execution used to end with OutputLimit:
// output up to the saved file's bound (SavedOutputLimit) ends nothing, and
// past it the file keeps the stream's last bytes and says what it dropped.
func TestRunawayOutputKeepsItsEnd(t *testing.T) {
	requireProduction(t)
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "60s", "answerBudget": 20000,
		"output": "64KiB"}, "toolsets": ["exec"]}`)
	cs := serveStdio(t, cfgPath, dataDir, nil)
	defer cs.Close()
	const mib = 1 << 20
	for _, tt := range []struct{ name, code, last, whole string }{
		{"60,000 log lines", "for i in range(60_000):\n    print(f'log line {i:06d}: something happened here')\nprint('ANSWER=42')",
			"ANSWER=42\n", "log line 031234: something happened here\n"},
		{"one 5 MB line", "print('x' * 5_000_000); print('tail-marker')", "tail-marker\n", strings.Repeat("x", 5_000_000) + "\ntail-marker\n"},
		{"past the saved file's bound", "import sys\nfor i in range(70):\n    sys.stdout.write('y' * (1 << 20))\nprint()\nprint('tail-marker')",
			"y\ntail-marker\n", "===== stdout =====\n" + strings.Repeat("y", 64*mib) + "\n[codecell: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, out := call(t, cs, map[string]any{"code": tt.code, "timeout_seconds": 60})
			if !out.OK {
				t.Errorf("the execution failed: %+v", out.Error)
			}
			if !strings.HasSuffix(out.Stdout, tt.last) {
				t.Errorf("the answer's stdout ends %q, want its last line %q", out.Stdout[max(0, len(out.Stdout)-200):], tt.last)
			}
			if out.OutputFile == "" {
				t.Fatalf("the answer was not cut: %d bytes of stdout", len(out.Stdout))
			}
			saved, err := os.ReadFile(filepath.Join(dataDir, "workspaces", "default", out.OutputFile))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(saved), tt.whole) || !strings.Contains(string(saved), tt.last) || strings.Contains(string(saved), "output truncated") {
				t.Errorf("the saved output (%d bytes) does not hold the whole stream", len(saved))
			}
			if len(saved) > 64*mib+64*1024+17*1024+300 {
				t.Errorf("the saved output is %d bytes, past its bound", len(saved))
			}
			if marker := "bytes of stdout dropped here, past the 64 MiB this file keeps whole; its last"; strings.Contains(tt.whole, "[codecell: ") &&
				(!strings.Contains(string(saved), marker) || !strings.Contains(out.Stdout+textOf(res), "the output's first 64 MiB and its last lines are in the workspace file")) {
				t.Errorf("past the saved file's bound, no marker says so: %q", out.Stdout[:min(len(out.Stdout), 300)])
			}
		})
	}
}
