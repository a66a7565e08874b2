package server

import (
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/config"
)

// TestInstructions: the instructions say what the config and the host
// make true, not what was written once.
func TestInstructions(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox.Timeout, cfg.Sandbox.MaxTimeout = 45*time.Second, 90*time.Second
	got := Instructions(cfg, []string{"numpy", "scipy"})
	for _, want := range []string{"execute_code", "No network", "/workspace persists", "Timeout 45s, max 90s.", "Has numpy, scipy."} {
		if !strings.Contains(got, want) {
			t.Errorf("Instructions = %q, without %q", got, want)
		}
	}
	if got := Instructions(cfg, nil); strings.Contains(got, "Has") {
		t.Errorf("Instructions without packages = %q, names some", got)
	}
}
