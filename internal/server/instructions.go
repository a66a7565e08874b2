package server

import (
	"fmt"
	"strings"
)

// Instructions are the server instructions a client gets at initialize:
// instructions.md, then what a model cannot guess about the sandbox and
// would otherwise learn by failing (no network, a workspace that lasts,
// what it may import: packages, the notable packages the configured Python
// has, sandbox.Importable; nil says nothing of them). The time limits are
// in execute_code's timeout_seconds, from the config. Every word is paid in
// every conversation (TestLeanDefaultToolList), so they are few.
func Instructions(packages []string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(instructions))
	b.WriteString("\nNo network; /workspace persists.")
	if len(packages) > 0 {
		fmt.Fprintf(&b, " Has %s.", strings.Join(packages, ", "))
	}
	return b.String()
}
