package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SearchLimit is how many results the code-mode agent asks search_tools
// for. A CodeRunner passes it as the call's limit.
const SearchLimit = 3

// CodeRunner is codecell as a model sees it; [SessionRunner] implements it
// with a real codecell MCP session. Each method returns the text the model
// reads.
type CodeRunner interface {
	// ListTools returns what the host loads from codecell before any task:
	// its instructions and its tools/list, as [ToolsText] writes them.
	ListTools(ctx context.Context) (string, error)
	// SearchTools calls search_tools with the query and limit SearchLimit
	// and returns the result as [ResultText] writes it.
	SearchTools(ctx context.Context, query string) (string, error)
	// ExecuteCode calls execute_code with the code and returns the result as
	// [ResultText] writes it. A failed execution is a result, not an error.
	ExecuteCode(ctx context.Context, code string) (string, error)
}

// Part is one piece of a transcript.
type Part struct {
	Kind   string `json:"kind"`  // "tools" (loaded before the task), "call" (written by the model) or "result" (read by it)
	Label  string `json:"label"` // the server, or the tool called
	Text   string `json:"text"`
	Tokens int    `json:"tokens"`
}

// Transcript is what the model reads and writes for one task, in order.
type Transcript struct {
	Parts []Part `json:"parts"`
}

// Tokens is the transcript's total.
func (t Transcript) Tokens() int {
	n := 0
	for _, p := range t.Parts {
		n += p.Tokens
	}
	return n
}

// TokensOf sums the tokens of the parts of one kind.
func (t Transcript) TokensOf(kind string) int {
	n := 0
	for _, p := range t.Parts {
		if p.Kind == kind {
			n += p.Tokens
		}
	}
	return n
}

func (t *Transcript) add(tok *Tokenizer, kind, label, text string) {
	t.Parts = append(t.Parts, Part{Kind: kind, Label: label, Text: text, Tokens: tok.Count(text)})
}

// Scenario is one task done both ways.
type Scenario struct {
	Name string // short, e.g. "filter"
	Task string // what the user asks; the same both ways, so not counted

	// Direct does the task the way a model calling the upstream tools
	// directly would, through d: each call it writes and each result it
	// reads go into the transcript. It decides from the real results, as
	// the model would, and uses the servers' own filters where they have
	// them.
	Direct func(ctx context.Context, d *DirectCaller) error

	// Search is the code-mode agent's one search_tools query; Uses are the
	// tools (server.tool) its code calls, which the search must find.
	Search string
	Uses   []string
	// Code is the Python the code-mode agent writes, one execute_code call
	// per cell: a first look at the data where a real agent would need one
	// (the names of a sheet's columns), then the code that does the task and
	// returns only the answer, the last cell's result.
	Code []string
	// Check verifies the answer (the last cell's result, decoded from JSON)
	// and the state it left in the servers; nil accepts any answer.
	Check func(answer any) error
	// Target is the least reduction the scenario must show: 0.99
	// (BENCHMARKS.md's target), or more where issue #17 asks for it.
	Target float64
}

// Connector starts MCP sessions with the servers of a scenario: the bundled
// [Servers] or the real npm servers ([NPMServers]).
type Connector interface {
	// Names returns the servers' names, as codecell's config names them.
	Names() []string
	// Connect connects a new client to the named server; the caller
	// closes the session.
	Connect(ctx context.Context, name string) (*mcp.ClientSession, error)
}

// Outcome is one scenario's measurement.
type Outcome struct {
	Name         string     `json:"name"`
	DirectTokens int        `json:"direct_tokens"`
	CodeTokens   int        `json:"code_tokens"`
	Reduction    float64    `json:"reduction"` // 1 - code/direct
	Target       float64    `json:"target"`    // the least Reduction the scenario must show
	Answer       any        `json:"answer"`    // the code-mode answer
	Error        string     `json:"error,omitempty"`
	Direct       Transcript `json:"-"`
	Code         Transcript `json:"-"`
}

// Run does every bundled scenario both ways, code mode first, against
// servers, which must be the ones runner's codecell has as upstreams under
// the same names. It returns every scenario's outcome; a scenario that
// fails has its Error set, and the error returned joins all failures.
func Run(ctx context.Context, runner CodeRunner, servers *Servers) ([]Outcome, error) {
	tok, err := NewTokenizer()
	if err != nil {
		return nil, err
	}
	var outs []Outcome
	var errs []error
	for _, sc := range Scenarios(servers) {
		o, err := sc.Run(ctx, tok, runner, servers)
		if err != nil {
			o.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", sc.Name, err))
		}
		outs = append(outs, o)
	}
	return outs, errors.Join(errs...)
}

// Run does the scenario in code mode through runner, checks the answer,
// then does it by direct calls to servers, and counts both transcripts.
func (sc Scenario) Run(ctx context.Context, tok *Tokenizer, runner CodeRunner, servers Connector) (Outcome, error) {
	o := Outcome{Name: sc.Name, Target: sc.Target}
	answer, err := sc.codeMode(ctx, tok, runner, &o.Code)
	if err != nil {
		return o, fmt.Errorf("code mode: %w", err)
	}
	o.Answer = answer
	if err := sc.direct(ctx, tok, servers, &o.Direct); err != nil {
		return o, fmt.Errorf("direct: %w", err)
	}
	o.DirectTokens, o.CodeTokens = o.Direct.Tokens(), o.Code.Tokens()
	o.Reduction = 1 - float64(o.CodeTokens)/float64(o.DirectTokens)
	return o, nil
}

func (sc Scenario) codeMode(ctx context.Context, tok *Tokenizer, runner CodeRunner, tr *Transcript) (any, error) {
	tools, err := runner.ListTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list codecell's tools: %w", err)
	}
	tr.add(tok, "tools", "codecell", tools)
	tr.add(tok, "call", "codecell.search_tools", callText("codecell.search_tools", map[string]any{"query": sc.Search, "limit": SearchLimit}))
	found, err := runner.SearchTools(ctx, sc.Search)
	if err != nil {
		return nil, fmt.Errorf("search_tools: %w", err)
	}
	tr.add(tok, "result", "codecell.search_tools", found)
	if err := searchFound(found, sc.Uses); err != nil {
		return nil, err
	}
	var answer any
	for i, cell := range sc.Code {
		tr.add(tok, "call", "codecell.execute_code", callText("codecell.execute_code", map[string]any{"code": cell}))
		res, err := runner.ExecuteCode(ctx, cell)
		if err != nil {
			return nil, fmt.Errorf("execute_code: %w", err)
		}
		tr.add(tok, "result", "codecell.execute_code", res)
		var out struct {
			OK     bool            `json:"ok"`
			Result any             `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(res), &out); err != nil {
			return nil, fmt.Errorf("execute_code result is not the JSON of its structured content: %w", err)
		}
		if !out.OK {
			return nil, fmt.Errorf("cell %d failed: %s", i+1, out.Error)
		}
		answer = out.Result
	}
	if sc.Check == nil {
		return answer, nil
	}
	if err := sc.Check(answer); err != nil {
		return answer, fmt.Errorf("wrong answer: %w", err)
	}
	return answer, nil
}

// searchFound checks that a search_tools result lists every tool in uses.
func searchFound(found string, uses []string) error {
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(found), &res); err != nil {
		return fmt.Errorf("search_tools result is not the JSON of its structured content: %w", err)
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	for _, u := range uses {
		if !slices.Contains(names, u) {
			return fmt.Errorf("search_tools did not find %s among %d results: %v", u, SearchLimit, names)
		}
	}
	return nil
}

func (sc Scenario) direct(ctx context.Context, tok *Tokenizer, servers Connector, tr *Transcript) error {
	d := &DirectCaller{tok: tok, tr: tr, sessions: map[string]*mcp.ClientSession{}}
	defer func() {
		for _, cs := range d.sessions {
			cs.Close()
		}
	}()
	// A host that calls tools directly loads every definition of every
	// server it is connected to before the model sees the task.
	for _, name := range servers.Names() {
		cs, err := servers.Connect(ctx, name)
		if err != nil {
			return err
		}
		d.sessions[name] = cs
		tools, err := listTools(ctx, cs)
		if err != nil {
			return fmt.Errorf("list %s's tools: %w", name, err)
		}
		tr.add(tok, "tools", name, ToolsText(cs.InitializeResult().Instructions, tools))
	}
	return sc.Direct(ctx, d)
}

// DirectCaller calls the scenario servers' tools the way a model calling
// them directly does, recording the transcript.
type DirectCaller struct {
	tok      *Tokenizer
	tr       *Transcript
	sessions map[string]*mcp.ClientSession
}

// Call calls server's tool with args: the call the model writes and the
// result it reads go into the transcript. If out is not nil, the result's
// structured content is decoded into it. A tool error is an error: no
// scenario expects one.
func (d *DirectCaller) Call(ctx context.Context, server, tool string, args map[string]any, out any) error {
	cs := d.sessions[server]
	if cs == nil {
		return fmt.Errorf("no scenario server is named %q", server)
	}
	name := server + "." + tool
	d.tr.add(d.tok, "call", name, callText(name, args))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("call %s: %w", name, err)
	}
	text := ResultText(res)
	d.tr.add(d.tok, "result", name, text)
	if res.IsError {
		return fmt.Errorf("%s: %s", name, text)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		return fmt.Errorf("%s: unexpected result: %w", name, err)
	}
	return nil
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// ToolsText is what the model reads of one MCP server before any task: the
// server's instructions and, of each tool, what a host passes to the model
// API (Anthropic's Messages API takes exactly name, description and
// input_schema; OpenAI's function tools the same three). Titles,
// annotations and output schemas stay with the host.
func ToolsText(instructions string, tools []*mcp.Tool) string {
	type modelTool struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema any    `json:"input_schema"`
	}
	visible := make([]modelTool, len(tools))
	for i, t := range tools {
		visible[i] = modelTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return jsonText(map[string]any{"instructions": instructions, "tools": visible})
}

// ResultText is a tool result as the model reads it: the JSON of its
// structured content when it has one, else its content. A structured
// result's text content is by convention the same JSON or a rendering of
// it, and a host shows the model one or the other; counting the structured
// JSON is the larger choice for codecell, whose text rendering is shorter.
func ResultText(res *mcp.CallToolResult) string {
	if res.StructuredContent != nil {
		return jsonText(res.StructuredContent)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		} else {
			b.WriteString(jsonText(c))
		}
	}
	return b.String()
}

// callText is a tool call as the model writes it.
func callText(name string, args map[string]any) string {
	return jsonText(map[string]any{"name": name, "arguments": args})
}

// jsonText marshals v compactly, without Go's HTML escaping, which no model
// API applies.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// WriteTable writes outcomes as an aligned text table.
func WriteTable(w io.Writer, outs []Outcome) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tdirect tokens\tcode-mode tokens\t(of which codecell's tool list)\treduction\t")
	for _, o := range outs {
		if o.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\tfailed: %s\t\n", o.Name, o.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f%%\t\n", o.Name, o.DirectTokens, o.CodeTokens, o.Code.TokensOf("tools"), 100*o.Reduction)
	}
	return tw.Flush()
}
