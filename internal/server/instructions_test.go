package server

import (
	"strings"
	"testing"
)

// TestInstructions: the instructions say what a model would learn by
// failing, and name the packages the host has, not a list written once.
func TestInstructions(t *testing.T) {
	got := Instructions([]string{"numpy", "scipy"})
	for _, want := range []string{"execute_code", "No network", "/workspace persists", "Has numpy, scipy."} {
		if !strings.Contains(got, want) {
			t.Errorf("Instructions = %q, without %q", got, want)
		}
	}
	if got := Instructions(nil); strings.Contains(got, "Has") {
		t.Errorf("Instructions without packages = %q, names some", got)
	}
}
