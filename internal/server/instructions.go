package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/codecell/codecell/internal/config"
)

// Instructions are the server instructions a client gets at initialize:
// instructions.md, then what a model cannot guess about the sandbox and
// would otherwise learn by failing (no network, a workspace that lasts,
// the time limits, what it may import), from cfg and packages (the notable
// packages the configured Python has, sandbox.Importable; nil says
// nothing of them). Every word is paid in every conversation
// (TestLeanDefaultToolList), so they are few.
func Instructions(cfg *config.Config, packages []string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(instructions))
	fmt.Fprintf(&b, "\nNo network; /workspace persists. Timeout %s, max %s.",
		seconds(cfg.Sandbox.Timeout), seconds(cfg.Sandbox.MaxTimeout))
	if len(packages) > 0 {
		fmt.Fprintf(&b, " Has %s.", strings.Join(packages, ", "))
	}
	return b.String()
}

// seconds writes d as whole seconds, as timeout_seconds takes it: "30s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%gs", d.Seconds())
}
