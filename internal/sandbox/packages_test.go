package sandbox

import (
	"context"
	"os/exec"
	"slices"
	"testing"
)

func TestImportable(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on this host")
	}
	got := Importable(context.Background(), python, []string{"json", "no_such_module_xyz", "sqlite3"})
	if want := []string{"json", "sqlite3"}; !slices.Equal(got, want) {
		t.Errorf("Importable = %q, want %q", got, want)
	}
	if got := Importable(context.Background(), "/nonexistent/python", []string{"json"}); got != nil {
		t.Errorf("Importable with no python = %q, want nil", got)
	}
}
