package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestCheckSaysWhatToInstall: a level whose tool is missing refuses with a
// message naming what to install. Not parallel: it swaps the tool paths.
func TestCheckSaysWhatToInstall(t *testing.T) {
	bwrap, runsc := BwrapPath, RunscPath
	t.Cleanup(func() { BwrapPath, RunscPath = bwrap, runsc })
	BwrapPath, RunscPath = "/nonexistent/bwrap", "/nonexistent/runsc"
	tests := []struct {
		level  Level
		python string
		want   string
	}{
		{Production, python, "apt-get install bubblewrap"},
		{Hardened, python, "apt-get install runsc"},
		{Development, "/nonexistent/python3", "apt-get install python3"},
	}
	for _, tt := range tests {
		err := Check(context.Background(), tt.level, tt.python)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(%s) = %v, want ErrUnavailable saying %q", tt.level, err, tt.want)
		}
	}
	if _, err := ParseLevel("paranoid"); err == nil {
		t.Error("ParseLevel accepted an unknown level")
	}
}
