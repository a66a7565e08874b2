package config

import (
	"os"
	"strings"
	"testing"
)

// TestDocsExample parses the complete example of docs/config.md, so that the
// documentation cannot drift from what codecell accepts, and checks that the
// defaults it states are Default's.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/config.md has no json block")
	}
	env := envOf(map[string]string{"REMOTE_TOKEN": "remote-secret", "CODECELL_TOKEN_A": "0123456789abcdef-team-a"})
	c, err := Parse("docs/config.md", []byte(block), env)
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if c.Sandbox.Pids != d.Sandbox.Pids || c.Sandbox.Memory != d.Sandbox.Memory || c.Sandbox.Timeout != d.Sandbox.Timeout {
		t.Errorf("the example's sandbox limits are not the defaults it documents: %+v", c.Sandbox)
	}
	for _, row := range []string{"| `pids` | `128` |", "| `memory` | `512MiB` |", "| `timeout` | `30s` |", "| `maxToolCalls` | `1000` |", "| `pool` | `4` |"} {
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/config.md lacks the row %q", row)
		}
	}
}
