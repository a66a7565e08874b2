package upstream

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDestructive: a tool is destructive when its server says so, and
// only then (no annotations, or a read-only tool, is not).
func TestDestructive(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		a    *mcp.ToolAnnotations
		want bool
	}{
		{nil, false},
		{&mcp.ToolAnnotations{}, false},
		{&mcp.ToolAnnotations{DestructiveHint: &yes}, true},
		{&mcp.ToolAnnotations{DestructiveHint: &no}, false},
		{&mcp.ToolAnnotations{DestructiveHint: &yes, ReadOnlyHint: true}, false},
	} {
		if got := destructive(&mcp.Tool{Name: "t", Annotations: tc.a}); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.a, got, tc.want)
		}
	}
}
