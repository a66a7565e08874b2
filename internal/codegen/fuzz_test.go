package codegen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/catalog"
)

// checkerScript compiles each source it is sent and answers "ok" or
// "error <reason>" on one line. A request is the source's length in bytes
// on a line, then the source. It ends at the end of its input.
const checkerScript = `
import sys
inp, out = sys.stdin.buffer, sys.stdout
while True:
    line = inp.readline()
    if not line:
        break
    src = inp.read(int(line))
    try:
        compile(src, "<generated>", "exec", dont_inherit=True)
        out.write("ok\n")
    except Exception as e:
        out.write("error " + repr(e).replace("\n", " ") + "\n")
    out.flush()
`

// compiler is one long-lived python that checks that sources compile: one
// per test process, because starting python for every fuzz input would
// make fuzzing a hundred times slower. It is safe for concurrent use.
type compiler struct {
	mu     sync.Mutex // guards the pipes: one request at a time
	cmd    *exec.Cmd
	cancel context.CancelFunc // kills the process group
	in     io.WriteCloser
	out    *bufio.Reader
	dead   error // why the process cannot be used any more, or nil
}

var (
	sharedCompilerOnce sync.Once
	sharedCompiler     *compiler
	sharedCompilerErr  error
)

// pythonCompiler returns the test process's compiler, starting it on first
// use; TestMain stops it.
func pythonCompiler() (*compiler, error) {
	sharedCompilerOnce.Do(func() {
		sharedCompiler, sharedCompilerErr = startCompiler()
	})
	return sharedCompiler, sharedCompilerErr
}

func startCompiler() (*compiler, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, python, "-I", "-c", checkerScript)
	isolate(cmd)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start python: %w", err)
	}
	return &compiler{cmd: cmd, cancel: cancel, in: in, out: bufio.NewReader(out)}, nil
}

// compile returns nil when src compiles, else the compiler's complaint.
func (c *compiler) compile(src string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return c.dead
	}
	if _, err := io.WriteString(c.in, strconv.Itoa(len(src))+"\n"+src); err != nil {
		c.dead = fmt.Errorf("python checker: %w", err)
		return c.dead
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		c.dead = fmt.Errorf("python checker: %w", err)
		return c.dead
	}
	line = strings.TrimSuffix(line, "\n")
	if line == "ok" {
		return nil
	}
	return errors.New(strings.TrimPrefix(line, "error "))
}

// close ends the python: closing its input ends its loop, and the context
// kills it should it not end within a second.
func (c *compiler) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.Close()
	timer := time.AfterFunc(time.Second, c.cancel)
	c.cmd.Wait()
	timer.Stop()
	c.cancel()
	c.dead = errors.New("python checker: closed")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedCompiler != nil {
		sharedCompiler.close()
	}
	os.Exit(code)
}

// FuzzGenerate holds that whatever a tool's schema, description and names
// say, every generated file compiles as Python and generation does not
// fail for a valid server name and identifier. The inputs are a tool's
// input schema, its description and a string used as the tool's name, a
// parameter's name and description, and an enum value.
func FuzzGenerate(f *testing.F) {
	for _, tc := range schemaCases {
		f.Add([]byte(tc.schema), "Adds two numbers.", "get-sum")
	}
	f.Add([]byte(`{"type":"object","properties":{"a":{"description":"\"\"\"\\"}}}`), `Say """hi""" \`, `from`)
	f.Add([]byte(`{}`), "Grüße \x00 \r\n \u2028 🌍", "2x y-z")
	f.Add([]byte(`{"type":"object","properties":{"x":{"enum":["\"\"\"","\\","\u0000"]}}}`), `"""`, "\"\"\"\\")
	f.Add([]byte{0xff, '{'}, "\xff\xfe", "\xff")
	f.Fuzz(func(t *testing.T, schema []byte, desc, name string) {
		needPython(t)
		c, err := pythonCompiler()
		if err != nil {
			t.Fatal(err)
		}
		// A second tool puts the strings where a schema would: a
		// parameter's name, description, default and enum value.
		prop, _ := json.Marshal(map[string]any{
			"type": "object",
			"properties": map[string]any{
				name:   map[string]any{"type": "string", "description": desc, "default": name, "enum": []string{name, desc}},
				"from": map[string]any{"title": name, "const": desc},
			},
			"required": []string{name},
		})
		tools := []catalog.Tool{
			{Server: "fuzz", Name: name, Ident: "tool", Title: name, Description: desc, InputSchema: schema, OutputSchema: schema},
			{Server: "fuzz", Name: desc, Ident: "other", Title: desc, Description: name, InputSchema: prop},
		}
		files, err := Generate(map[string][]catalog.Tool{"fuzz": tools}, nil)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		for path, src := range files {
			if !strings.HasSuffix(path, ".py") {
				continue
			}
			if err := c.compile(string(src)); err != nil {
				t.Fatalf("%s does not compile: %v\n%s", path, err, src)
			}
		}
		// Source and Signature take any identifier.
		odd := catalog.Tool{Server: desc, Name: name, Ident: name, Description: desc, InputSchema: schema}
		if src := Source(odd); c.compile(src) != nil {
			t.Fatalf("Source with Ident %q does not compile: %v\n%s", name, c.compile(src), src)
		}
		for _, tool := range append(tools, odd) {
			sig := Signature(tool)
			if err := c.compile("def " + sig + ":\n    pass\n"); err != nil {
				t.Fatalf("Signature %q does not compile: %v", sig, err)
			}
		}
	})
}
