package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/codecell/codecell/internal/server"
)

func runTools(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: codecell tools list | search QUERY | show NAME [--json]")
	}
	sub, args := args[0], args[1:]
	fs := g.flags()
	asJSON := fs.Bool("json", false, "print JSON")
	server_ := fs.String("server", "", "only tools of this server")
	limit := fs.Int("limit", 20, "how many results (search)")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	g.quiet()
	a, err := g.newApp(ctx, nil)
	if err != nil {
		return err
	}
	defer a.close()
	// Give the upstreams their start, each bounded by its startupTimeout
	// (a shorter bound here would report as failed a server that serve
	// would have waited for).
	a.upstreams.WaitStarted(ctx)
	a.server.RefreshTools()

	print := printer(g.stdout, *asJSON)
	switch sub {
	case "list":
		var b strings.Builder
		for _, st := range a.server.Statuses() {
			fmt.Fprintf(&b, "%s (%s, %d tools)", st.Name, st.State, st.Tools)
			if st.Error != "" {
				fmt.Fprintf(&b, ": %s", st.Error)
			}
			b.WriteString("\n")
		}
		var all []server.ToolEntry
		for offset := 0; ; offset += 100 {
			page, err := a.server.SearchTools(server.SearchToolsInput{Server: *server_, DetailLevel: "summary", Limit: 100, Offset: offset})
			if err != nil {
				return err
			}
			all = append(all, page.Tools...)
			if len(page.Tools) == 0 || offset+len(page.Tools) >= page.Total {
				break
			}
		}
		for _, e := range all {
			fmt.Fprintf(&b, "  %-40s %s\n", e.Name, e.Summary)
		}
		// An empty list would not say whether the config was the one meant.
		if len(a.server.Statuses()) == 0 {
			b.WriteString("no upstream MCP servers are configured (add them under mcpServers)\n")
		}
		fmt.Fprintf(&b, "config: %s\n", a.cfg.Source())
		return print(all, b.String())
	case "search":
		if len(positional) == 0 {
			return fmt.Errorf("usage: codecell tools search QUERY")
		}
		out, err := a.server.SearchTools(server.SearchToolsInput{Query: strings.Join(positional, " "), Server: *server_, Limit: *limit})
		if err != nil {
			return err
		}
		var b strings.Builder
		for _, e := range out.Tools {
			fmt.Fprintf(&b, "%s\n    %s\n    %s\n", e.Name, e.Signature, e.Summary)
		}
		fmt.Fprintf(&b, "(%d of %d)\n", len(out.Tools), out.Total)
		if out.Note != "" {
			b.WriteString(out.Note + "\n")
		}
		return print(out, b.String())
	case "show":
		if len(positional) != 1 {
			return fmt.Errorf("usage: codecell tools show SERVER.TOOL")
		}
		e, err := a.server.ToolDefinition(positional[0])
		if err != nil {
			return err
		}
		return print(e, fmt.Sprintf("%s (%s on %s)\n\n%s\n\n%s", e.Name, e.OriginalName, e.Server, e.Description, e.Source))
	}
	return fmt.Errorf("unknown tools command %q: want list, search or show", sub)
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
