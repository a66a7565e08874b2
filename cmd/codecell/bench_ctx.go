package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/bench"
)

// contextEfficiency runs the bundled scenarios both ways, counting what the
// model sees with a real BPE tokenizer (cl100k_base): direct tool calling
// against code mode through codecell, whose upstreams include the scenario
// servers.
func contextEfficiency(ctx context.Context, cs *mcp.ClientSession, servers *bench.Servers) ([]benchFigure, error) {
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	err := bench.WaitForUpstreams(wait, cs, servers.Names())
	cancel()
	if err != nil {
		return nil, err
	}
	outs, err := bench.Run(ctx, bench.SessionRunner{Session: cs}, servers)
	var figs []benchFigure
	for _, o := range outs {
		f := benchFigure{
			Name:   "context tokens saved: " + o.Name,
			Value:  100 * o.Reduction,
			Unit:   "%",
			Target: ">= 99%",
			Note:   fmt.Sprintf("%d tokens direct, %d in code mode, %d of them codecell's tool list", o.DirectTokens, o.CodeTokens, o.Code.TokensOf("tools")),
		}
		f.check(o.Reduction >= 0.99 && o.Error == "")
		if o.Error != "" {
			f.Note += "; " + strings.TrimSpace(o.Error)
		}
		figs = append(figs, f)
	}
	return figs, err
}
