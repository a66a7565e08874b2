package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestRedTeam28 runs the held-out attacks of testdata/redteam28 (written by
// someone who had not read the gate or the detectors) against the built
// binary at the production level: none may get a planted value past the
// gate on a path the README claims.
func TestRedTeam28(t *testing.T) {
	requireProduction(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "redteam28", "run_attacks.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/python3", script, "--bin", binary, "--isolation", "production").CombinedOutput()
	if err != nil {
		t.Fatalf("the attacks found leaks (%v):\n%s", err, out)
	}
	t.Log(lastLines(string(out), 1))
}
