// Command fakeupstream is an MCP server for codecell's tests: tools that
// sleep, fail, crash mid-call, return images or JSON text, and add tools at
// run time. It serves stdio, or Streamable HTTP with -http ADDR. With
// -wait-for FILE it answers nothing until FILE exists: a server that takes
// as long to start as a test wants, without the test counting time.
package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type textArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addArgs struct {
	A float64 `json:"a" jsonschema:"first number"`
	B float64 `json:"b" jsonschema:"second number"`
}

type sumOut struct {
	Sum float64 `json:"sum"`
}

type sleepArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to sleep"`
}

type nameArgs struct {
	Name string `json:"name" jsonschema:"name of the tool to add"`
}

type envArgs struct {
	Name string `json:"name" jsonschema:"environment variable"`
}

// A 1x1 PNG.
const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"},
		&mcp.ServerOptions{Instructions: "A fake server for tests.\nSecond line.", PageSize: 3})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."}, func(ctx context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "add-numbers", Description: "Add two numbers; structured result."}, func(ctx context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, sumOut, error) {
		return nil, sumOut{Sum: in.A + in.B}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep, then answer."}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepArgs) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
			return text("slept"), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Report a tool error."}, func(ctx context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("failed: %s", in.Text)
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server in the middle of the call."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Return a PNG image."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		data, _ := base64.StdEncoding.DecodeString(pixel)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: data, MIMEType: "image/png"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "json_text", Description: "Return JSON as text."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return text(`{"items": [1, 2, 3]}`), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Read an environment variable of the server."}, func(ctx context.Context, _ *mcp.CallToolRequest, in envArgs) (*mcp.CallToolResult, any, error) {
		return text(os.Getenv(in.Name)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Add a tool at run time (sends tools/list_changed)."}, func(ctx context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: in.Name, Description: "Added at run time."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return text("new tool"), nil, nil
		})
		return text("added"), nil, nil
	})
	return s
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at ADDR and print the address")
	waitFor := flag.String("wait-for", "", "start serving only once this file exists")
	flag.Parse()
	if *waitFor != "" {
		fmt.Fprintf(os.Stderr, "fakeupstream: waiting for %s\n", *waitFor)
		for {
			if _, err := os.Stat(*waitFor); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if *addr == "" {
		if err := newServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	s := newServer()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	log.Fatal(http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
}
