package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/channel"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/upstream"
)

// execCalls answers one execution's calls to the host: upstream tool calls
// (with policy), and tool search. It records the tool calls for the
// execution's result.
type execCalls struct {
	s   *Server
	ns  string               // the namespace whose vault restores arguments
	req *mcp.CallToolRequest // the request of the execution, whose client approves calls; nil for none

	mu          sync.Mutex // guards the fields below
	calls       []ToolCall
	resultBytes int64
	// approvedAll are the tools a person allowed for the rest of the
	// execution.
	approvedAll map[string]bool
}

// toolCallParams is what the generated servers package sends.
type toolCallParams struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// toolReply is a tool's answer as the sandbox's codecell._rpc decodes it.
// Its content items are structs, one type per kind, with the keys a map of
// each kind had: encoding a map sorts its keys through reflection, twice
// the time of the whole reply frame's other fields, on every tool call.
type toolReply struct {
	Structured any   `json:"structured"`
	Content    []any `json:"content"` // of textItem, mediaItem, resourceItem, linkItem
}

type textItem struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type mediaItem struct {
	Type     string `json:"type"` // "image" or "audio"
	Data     string `json:"data"` // base64
	MIMEType string `json:"mimeType"`
}

type resourceItem struct {
	Type     string                `json:"type"` // "resource"
	Resource *mcp.ResourceContents `json:"resource"`
}

type linkItem struct {
	Type string `json:"type"` // "resource_link"
	URI  string `json:"uri"`
	Name string `json:"name"`
}

// HandleCall implements sandbox.CallHandler.
func (e *execCalls) HandleCall(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case channel.MethodTool:
		var p toolCallParams
		if err := json.Unmarshal(params, &p); err != nil || p.Server == "" || p.Tool == "" {
			return nil, &sandbox.CallError{Kind: "ValueError", Message: "a tool call needs a server and a tool"}
		}
		return e.callTool(ctx, p)
	case channel.MethodCodecell:
		return e.callBuiltin(ctx, params)
	case channel.MethodSearchTools:
		var in SearchToolsInput
		if err := json.Unmarshal(params, &in); err != nil {
			return nil, &sandbox.CallError{Kind: "ValueError", Message: "search_tools: " + err.Error()}
		}
		out, err := e.s.searchTools(in)
		if err != nil {
			return nil, &sandbox.CallError{Kind: "ValueError", Message: err.Error()}
		}
		out.Skills = e.s.searchSkills(ctx, e.ns, in.Query)
		return out, nil
	case channel.MethodGetToolDefinition:
		var in GetToolDefinitionInput
		if err := json.Unmarshal(params, &in); err != nil {
			return nil, &sandbox.CallError{Kind: "ValueError", Message: "get_tool_definition: " + err.Error()}
		}
		entry, err := e.s.toolDefinition(in.Name)
		if err != nil {
			return nil, &sandbox.CallError{Kind: "LookupError", Message: err.Error()}
		}
		return entry, nil
	case channel.MethodServerReady:
		// The stand-in package of a server that was not connected yet
		// (see toolIndex.rebuild) asks this while the code imports it.
		var p struct {
			Server string `json:"server"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.Server == "" {
			return nil, &sandbox.CallError{Kind: "ValueError", Message: "server_ready needs a server"}
		}
		if err := e.s.waitServer(ctx, p.Server); err != nil {
			return nil, &sandbox.CallError{Kind: "ImportError", Message: err.Error()}
		}
		return map[string]string{"state": string(upstream.Connected)}, nil
	}
	return nil, &sandbox.CallError{Kind: "ValueError", Message: fmt.Sprintf("unknown host call %q", method)}
}

// waitServer waits for an upstream server until it is connected and its
// tools published, or until a little before the execution's deadline: the
// code then fails with an ImportError that says the server is still
// starting, rather than with a bare Timeout that says nothing of why.
func (s *Server) waitServer(ctx context.Context, name string) error {
	if deadline, ok := sandbox.Deadline(ctx); ok {
		margin := min(time.Until(deadline)/5, 2*time.Second)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-margin))
		defer cancel()
	}
	err := s.up.Wait(ctx, name)
	if errors.Is(err, upstream.ErrStarting) {
		return fmt.Errorf("%w; run the code again once list_tool_categories shows it connected", err)
	}
	return err
}

func (e *execCalls) callTool(ctx context.Context, p toolCallParams) (_ any, err error) {
	start := time.Now()
	name := p.Server + "." + p.Tool
	toolErr := func(msg string) error {
		return &sandbox.CallError{Kind: "ToolError", Message: msg, Data: map[string]string{"server": p.Server, "tool": p.Tool}}
	}
	t, ok := e.s.tools.catalog().Lookup(name)
	defer func() { e.s.countToolCall(t, ok, err) }()
	if ok {
		name = t.QualifiedName()
	}
	approval := ""
	record := func(ok bool, bytes int) {
		e.mu.Lock()
		e.calls = append(e.calls, ToolCall{Name: name, OK: ok, DurationMS: ms(time.Since(start)), Approval: approval})
		e.resultBytes += int64(bytes)
		e.mu.Unlock()
	}
	if !ok || t.Builtin {
		record(false, 0)
		return nil, toolErr(fmt.Sprintf("no tool %s is known (search_tools lists them)", name))
	}
	if !e.s.policy.allows(t) {
		record(false, 0)
		return nil, &sandbox.CallError{Kind: "PermissionError", Message: fmt.Sprintf("policy denies calling %s", name)}
	}
	if e.s.needsApproval(t) {
		var err error
		approval, err = e.approve(ctx, t, name, p.Arguments)
		if err != nil {
			record(false, 0)
			return nil, err
		}
	}
	// Tokens the model wrote into the code become the real values again,
	// host-side, on their way to the tool.
	args, err := e.s.arguments(ctx, e.ns, p.Arguments)
	if err != nil {
		record(false, 0)
		return nil, &sandbox.CallError{Kind: "ValueError", Message: "arguments: " + err.Error()}
	}
	res, err := e.s.up.Call(ctx, t.Server, t.Name, args)
	if err != nil {
		record(false, 0)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &sandbox.CallError{Kind: "TimeoutError", Message: err.Error()}
		}
		return nil, toolErr(err.Error())
	}
	reply := replyOf(res)
	size := reply.size()
	if res.IsError {
		record(false, size)
		msg := ""
		for _, c := range reply.Content {
			if t, ok := c.(*textItem); ok {
				msg += t.Text
			}
		}
		if msg == "" {
			msg = "the tool reported an error"
		}
		return nil, toolErr(msg)
	}
	record(true, size)
	return reply, nil
}

// replyOf turns an MCP tool result into what the sandbox decodes.
func replyOf(res *mcp.CallToolResult) toolReply {
	r := toolReply{Structured: res.StructuredContent, Content: make([]any, 0, len(res.Content))}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			r.Content = append(r.Content, &textItem{Type: "text", Text: c.Text})
		case *mcp.ImageContent:
			r.Content = append(r.Content, &mediaItem{Type: "image", Data: base64.StdEncoding.EncodeToString(c.Data), MIMEType: c.MIMEType})
		case *mcp.AudioContent:
			r.Content = append(r.Content, &mediaItem{Type: "audio", Data: base64.StdEncoding.EncodeToString(c.Data), MIMEType: c.MIMEType})
		case *mcp.EmbeddedResource:
			r.Content = append(r.Content, &resourceItem{Type: "resource", Resource: c.Resource})
		case *mcp.ResourceLink:
			r.Content = append(r.Content, &linkItem{Type: "resource_link", URI: c.URI, Name: c.Name})
		}
	}
	return r
}

// size is about how many bytes of the reply the code received: the text
// and encoded data of the content, plus the structured content's JSON.
// Counting it must not cost a second encoding of every reply.
func (r toolReply) size() int {
	n := 0
	for _, c := range r.Content {
		switch c := c.(type) {
		case *textItem:
			n += len(c.Text)
		case *mediaItem:
			n += len(c.Data)
		}
	}
	if r.Structured != nil {
		if raw, ok := r.Structured.(json.RawMessage); ok {
			n += len(raw)
		} else if b, err := json.Marshal(r.Structured); err == nil {
			n += len(b)
		}
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// record returns the calls made so far and the bytes of their results.
func (e *execCalls) record() ([]ToolCall, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ToolCall{}, e.calls...), e.resultBytes
}
