package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/server"
)

func runExec(ctx context.Context, g *globals, args []string) error {
	fs := g.flags()
	code := fs.String("c", "", "code to run")
	asJSON := fs.Bool("json", false, "print the structured result of execute_code")
	session := fs.String("session", "", "run in the session with this id (it lives only as long as this command: state persists across calls only under serve)")
	timeout := fs.Duration("timeout", 0, "wall-clock limit (default: the configured timeout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	src, script, err := readSource(*code, fs.Args())
	if err != nil {
		return err
	}
	g.quiet() // keep a one-shot command's stderr for the code
	a, err := g.newApp(ctx, nil)
	if err != nil {
		return err
	}
	defer a.close()

	// The same pipeline as a client's execute_code: through the MCP server.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := a.server.MCP().Connect(ctx, st, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "codecell-exec", Version: version}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	in := map[string]any{"code": src}
	if *session != "" {
		in["session_id"] = *session
		// The interpreter is this process's: a second exec --session with
		// the same id starts a new one, which a user would not guess.
		fmt.Fprintf(g.stderr, "codecell: --session %s ends with this command: a later exec does not see its names (sessions last across calls only under serve)\n", *session)
	}
	if *timeout > 0 {
		in["timeout_seconds"] = timeout.Seconds()
	}
	params := &mcp.CallToolParams{Name: "execute_code", Arguments: in}
	if script.Filename != "" || len(script.Args) > 0 {
		params.Meta = mcp.Meta{server.MetaScript: script}
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return err
	}
	var out server.ExecuteCodeOutput
	if res.StructuredContent == nil {
		// A bad argument: the text says which and why.
		return fmt.Errorf("%s", textOf(res))
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		io.WriteString(g.stdout, out.Stdout)
		io.WriteString(g.stderr, out.Stderr)
		if out.Result != nil {
			// Like a REPL: the value of the last expression, after the output.
			if s, ok := out.Result.(string); ok {
				fmt.Fprintln(g.stdout, s)
			} else {
				b, _ := json.Marshal(out.Result)
				fmt.Fprintln(g.stdout, string(b))
			}
		}
		if out.OutputFile != "" {
			// The answer budget is for a model's context; the terminal
			// gets told where the whole output is.
			fmt.Fprintf(g.stderr, "[codecell: the output was cut to the answer budget (sandbox.answerBudget); the whole output is in %s]\n",
				filepath.Join(a.server.Workspace(server.DefaultNamespace), out.OutputFile))
		}
		if out.Error != nil && (out.Error.Traceback != "" || out.Error.Type != "SystemExit") {
			io.WriteString(g.stderr, server.ErrorText(out.Error))
		}
	}
	if code := exitCode(out); code != 0 {
		return exitError{code}
	}
	return nil
}

// readSource takes code from -c, a file, or "-" (stdin); the arguments
// after it are the script's, as python's command line takes them. The
// script is named as python names it: the file's name as given, <stdin>,
// or (with -c) <cell>.
func readSource(code string, args []string) (string, server.Script, error) {
	switch {
	case code != "":
		return code, server.Script{Args: args}, nil
	case len(args) > 0 && args[0] == "-":
		b, err := io.ReadAll(os.Stdin)
		return string(b), server.Script{Filename: "<stdin>", Args: args[1:]}, err
	case len(args) > 0:
		b, err := os.ReadFile(args[0])
		return string(b), server.Script{Filename: args[0], Args: args[1:]}, err
	}
	return "", server.Script{}, fmt.Errorf("exec: give code with -c CODE, a FILE, or - for stdin (arguments after it are sys.argv[1:])")
}

// exitCode is the code's exit status: that of sys.exit, 1 for any other
// error, 0 on success.
func exitCode(out server.ExecuteCodeOutput) int {
	if out.OK {
		return 0
	}
	if out.Error != nil && out.Error.Type == "SystemExit" {
		msg := out.Error.Message
		for _, prefix := range []string{"exit status ", "the code's process exited with status "} {
			if rest, ok := strings.CutPrefix(msg, prefix); ok {
				if n, err := strconv.Atoi(strings.Fields(rest)[0]); err == nil && n > 0 && n < 256 {
					return n
				}
			}
		}
	}
	return 1
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
