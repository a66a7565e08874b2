package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/seccomp"
)

const python = "/usr/bin/python3"

// newTestManager returns a manager for level, or skips when the host cannot
// run that level (make test installs everything, so CI runs them all).
func newTestManager(t testing.TB, level Level, lim Limits, pool int) (*Manager, string) {
	t.Helper()
	if level == Hardened && testing.Short() {
		t.Skip("-short (make check) runs no gVisor; make test does")
	}
	if err := Check(context.Background(), level, python); err != nil {
		t.Skipf("level %s unavailable here: %v", level, err)
	}
	prog, err := seccomp.Program()
	if err != nil {
		t.Fatal(err)
	}
	state := reachableTempDir(t)
	m, err := New(Options{Level: level, Python: python, Limits: lim, StateDir: state, PoolSize: pool, Seccomp: prog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, filepath.Join(reachableTempDir(t), "ws")
}

// reachableTempDir is a t.TempDir whose parents a sandbox running as nobody
// can search (the testing package makes the per-test parent 0700).
func reachableTempDir(t testing.TB) string {
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// slack is the wall-clock timeout of executions whose timeout is not what
// the test is about; it only has to end a test that hangs. An execution's
// timeout also covers starting a sandbox when no warm one is ready (a gVisor
// start takes seconds), and a loaded machine can make both slow.
const slack = 2 * time.Minute

func exec1(t testing.TB, m *Manager, ws, code string, timeout time.Duration) *Result {
	t.Helper()
	return m.Exec(context.Background(), Request{Workspace: ws, Code: code, Timeout: timeout})
}

func TestBasics(t *testing.T) {
	for _, level := range []Level{Development, Production, Hardened} {
		t.Run(string(level), func(t *testing.T) {
			m, ws := newTestManager(t, level, Limits{}, 1)
			tests := []struct {
				name, code     string
				ok             bool
				stdout, stderr string
				result         any
				errType        string
			}{
				{name: "print", code: "print(1)", ok: true, stdout: "1\n"},
				{name: "last expression", code: "x = 20\nx + 22", ok: true, result: float64(42)},
				{name: "result variable wins", code: "result = {'a': [1, 2]}\n'ignored'", ok: true, result: map[string]any{"a": []any{float64(1), float64(2)}}},
				// Code that replaces json's functions changes its own json,
				// not the runtime's (issue #30).
				{name: "json replaced by the code", code: "import json\njson.dumps = json.loads = None\nprint('x')\nresult = {'a': 1}", ok: true, stdout: "x\n", result: map[string]any{"a": float64(1)}},
				{name: "last expression runs when result is set", code: "result = 5\nprint(1)", ok: true, stdout: "1\n", result: float64(5)},
				{name: "repr of non-JSON", code: "{1, 2}", ok: true, result: "{1, 2}"},
				{name: "stderr", code: "import sys; sys.stderr.write('oops\\n')", ok: true, stderr: "oops\n"},
				{name: "exception", code: "def f():\n    1/0\nf()", errType: "ZeroDivisionError"},
				{name: "syntax error", code: "def (", errType: "SyntaxError"},
				{name: "sys.exit(3)", code: "import sys; sys.exit(3)", errType: "SystemExit"},
				{name: "os._exit", code: "import os; os._exit(4)", errType: "SystemExit"},
				{name: "subprocess output", code: "import subprocess; subprocess.run(['/usr/bin/echo', 'hi'])", ok: true, stdout: "hi\n"},
				// The process prepared itself before the code came (issue
				// 16): nothing of that shows, and its streams are the pipes.
				{name: "fresh state", code: "import linecache, sys\n" +
					"[sorted(k for k in globals() if not k.startswith('__')), sorted(k for k in linecache.cache if k.startswith('<')),\n" +
					" sys.stdout.seekable(), sys.stdout.isatty(), sys.stderr.seekable(), sys.stdin.read(), sys.stdout.fileno(), sys.stderr.fileno()]",
					ok: true, result: []any{[]any{"display", "display_image", "linecache", "sys"}, []any{"<cell>"}, false, false, false, "", float64(1), float64(2)}},
				// Past inlineFrame the exec frame's rest follows its first
				// message.
				{name: "code larger than one message", code: "s = '" + strings.Repeat("x", 100_000) + "'\nlen(s)", ok: true, result: float64(100_000)},
				{name: "signals at their defaults", code: "import signal\n[signal.getsignal(signal.SIGPIPE) == signal.SIG_DFL, signal.getsignal(signal.SIGINT) == signal.SIG_DFL]",
					ok: true, result: []any{true, true}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := exec1(t, m, ws, tt.code, slack)
					if r.OK != tt.ok {
						t.Fatalf("ok = %v, error %+v", r.OK, r.Error)
					}
					if tt.errType != "" && (r.Error == nil || r.Error.Type != tt.errType) {
						t.Fatalf("error = %+v, want type %s", r.Error, tt.errType)
					}
					if r.Stdout != tt.stdout || r.Stderr != tt.stderr {
						t.Fatalf("stdout %q stderr %q, want %q %q", r.Stdout, r.Stderr, tt.stdout, tt.stderr)
					}
					if tt.result != nil && !equalJSON(r.Result, tt.result) {
						t.Fatalf("result = %#v, want %#v", r.Result, tt.result)
					}
				})
			}
			t.Run("traceback shows user code only", func(t *testing.T) {
				r := exec1(t, m, ws, "def f():\n    raise ValueError('bad')\nf()", slack)
				if r.Error == nil || !strings.Contains(r.Error.Traceback, "raise ValueError('bad')") || strings.Contains(r.Error.Traceback, "codecell_runner") {
					t.Fatalf("traceback: %+v", r.Error)
				}
			})
			t.Run("context", func(t *testing.T) {
				r := m.Exec(context.Background(), Request{Workspace: ws, Code: "n * 2", Context: map[string]any{"n": 21}, Timeout: slack})
				if !r.OK || !equalJSON(r.Result, float64(42)) {
					t.Fatalf("%+v", r)
				}
			})
		})
	}
}

func equalJSON(a, b any) bool {
	return strings.TrimSpace(toJSON(a)) == strings.TrimSpace(toJSON(b))
}

// TestWorkspaceRecreated: a workspace is set up once, and set up again when
// it disappears between executions.
func TestWorkspaceRecreated(t *testing.T) {
	m, ws := newTestManager(t, Production, Limits{}, 1)
	for i := 0; i < 2; i++ {
		if r := exec1(t, m, ws, "open('f', 'w').write('x')", slack); !r.OK {
			t.Fatalf("execution %d: %+v", i, r.Error)
		}
		if err := os.RemoveAll(ws); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTextMappedAtFork: the fork server gives its mappings of program text
// an anonymous page each, so fork copies their page tables and an
// execution does not fault its interpreter's code in again (issue 16). The
// hardened level's fork server runs under gVisor, whose memory is its own.
func TestTextMappedAtFork(t *testing.T) {
	for _, level := range []Level{Development, Production} {
		t.Run(string(level), func(t *testing.T) {
			m, ws := newTestManager(t, level, Limits{}, 1)
			code := `import os, sys
exe = os.path.realpath(sys.executable)
text, mapping = [], None
for line in open('/proc/self/smaps'):
    f = line.split()
    if '-' in f[0] and len(f) >= 5:
        mapping = f
    elif f[0] == 'Anonymous:' and len(mapping) > 5 and mapping[5] == exe and mapping[1] == 'r-xp':
        text.append(int(f[1]))
text`
			r := exec1(t, m, ws, code, slack)
			if !r.OK {
				t.Fatalf("%+v", r.Error)
			}
			text, ok := r.Result.([]any)
			if !ok || len(text) == 0 {
				t.Fatalf("no text mapping of the interpreter found: %#v", r.Result)
			}
			for _, kb := range text {
				if kb.(float64) == 0 {
					t.Fatalf("the interpreter's text has no anonymous page (kB per mapping: %v): fork leaves it to be faulted in again", text)
				}
			}
		})
	}
}

// TestOutputStreamsInterleaved: stdout and stderr written in turns, by the
// code and by a process it starts, arrive whole and each on its own stream
// (under gVisor one thread forwards both pipes), and so does a last burst
// on stderr larger than one read, still unread when stdout ends.
func TestOutputStreamsInterleaved(t *testing.T) {
	for _, level := range []Level{Development, Production, Hardened} {
		t.Run(string(level), func(t *testing.T) {
			m, ws := newTestManager(t, level, Limits{}, 1)
			code := `import subprocess, sys
for i in range(2000):
    print('out %d' % i, flush=True)
    print('err %d' % i, file=sys.stderr, flush=True)
subprocess.run(['/usr/bin/python3', '-c', 'import sys; print("child out"); print("child err", file=sys.stderr)'])
sys.stderr.write('e' * 300000)
print('done')`
			r := exec1(t, m, ws, code, slack)
			if !r.OK {
				t.Fatalf("%+v", r.Error)
			}
			var out, errs strings.Builder
			for i := range 2000 {
				fmt.Fprintf(&out, "out %d\n", i)
				fmt.Fprintf(&errs, "err %d\n", i)
			}
			out.WriteString("child out\ndone\n")
			errs.WriteString("child err\n" + strings.Repeat("e", 300000))
			if r.Stdout != out.String() {
				t.Errorf("stdout (%d bytes) is not the %d bytes written; it ends %q", len(r.Stdout), out.Len(), tail(r.Stdout))
			}
			if r.Stderr != errs.String() {
				t.Errorf("stderr (%d bytes) is not the %d bytes written; it ends %q", len(r.Stderr), errs.Len(), tail(r.Stderr))
			}
		})
	}
}
