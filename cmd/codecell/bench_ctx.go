package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/bench"
)

// contextEfficiency runs the bundled scenarios both ways, counting what the
// model sees with a real BPE tokenizer (cl100k_base): direct tool calling
// against code mode through codecell, whose upstreams include the scenario
// servers, and the npm servers of the fourth scenario unless npm is nil.
func contextEfficiency(ctx context.Context, cs *mcp.ClientSession, servers *bench.Servers, npm *bench.NPMServers) ([]benchFigure, error) {
	names := servers.Names()
	if npm != nil {
		names = append(names, npm.Names()...)
	}
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := bench.WaitForUpstreams(wait, cs, names)
	cancel()
	if err != nil {
		return nil, err
	}
	outs, err := bench.Run(ctx, bench.SessionRunner{Session: cs}, servers)
	if npm != nil {
		o, nerr := bench.RunNPM(ctx, bench.SessionRunner{Session: cs}, npm)
		outs = append(outs, o)
		err = errors.Join(err, nerr)
	}
	var figs []benchFigure
	for _, o := range outs {
		f := benchFigure{
			Name:   "context tokens saved: " + o.Name,
			Value:  100 * o.Reduction,
			Unit:   "%",
			Target: fmt.Sprintf(">= %g%%", 100*o.Target),
			Note:   fmt.Sprintf("%d tokens direct, %d in code mode, %d of them codecell's tool list", o.DirectTokens, o.CodeTokens, o.Code.TokensOf("tools")),
		}
		f.check(o.Reduction >= o.Target && o.Error == "")
		if o.Error != "" {
			f.Note += "; " + strings.TrimSpace(o.Error)
		}
		figs = append(figs, f)
	}
	return figs, err
}
