package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/server"
)

// TestExecUsesUpstreams: codecell exec connects the configured upstreams, so
// code run right after start imports and calls them; a server still
// starting is waited for; one that failed is an ImportError that quotes the
// start and the end of what it printed.
func TestExecUsesUpstreams(t *testing.T) {
	requireProduction(t)
	everything := npmServer(t, "server-everything")
	gate := filepath.Join(t.TempDir(), "gate")
	// A server that dies at start after a long install log, its cause in
	// the first line, as a failed "npx -y" does.
	broken := `echo "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod'" >&2; i=0; while [ $i -lt 3000 ]; do echo "npm http fetch $i" >&2; i=$((i+1)); done; echo "Node.js v20" >&2; exit 1`
	cfg := fmt.Sprintf(`{"mcpServers": {
		"everything": {"command": "node", "args": [%q, "stdio"]},
		"slow": {"command": %q, "args": ["-wait-for", %q]},
		"broken": {"command": "/bin/sh", "args": ["-c", %q]}},
		"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "100s"}}`, everything, fakeUpstream(t), gate, broken)
	cfgPath, dataDir := testDirs(t, cfg)
	flags := []string{"--config", cfgPath, "--data-dir", dataDir}

	t.Run("right after start", func(t *testing.T) {
		out, code := runCLI(t, append([]string{"exec", "-c", "from servers.everything import get_sum\nprint(get_sum(a=2, b=3))"}, flags...)...)
		if code != 0 || !strings.Contains(out, "5") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("a server still starting", func(t *testing.T) {
		marker := filepath.Join(server.WorkspaceDir(dataDir, server.DefaultNamespace), "importing")
		cmd := exec.Command(binary, append([]string{"exec", "-c", "open('importing', 'w').close()\nfrom servers.slow import echo\nprint(echo(text='it came'))"}, flags...)...)
		// Stderr has the code's, and a warning about "broken".
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		// The code is about to import the server, which cannot have
		// answered: only now may it.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the code never ran")
			}
		}
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil || out.String() != "it came\n" {
			t.Fatalf("%v:\n%s\n%s", err, out.String(), stderr.String())
		}
	})

	t.Run("a server that failed", func(t *testing.T) {
		out, code := runCLI(t, append([]string{"exec", "-c", "import servers.broken"}, flags...)...)
		for _, want := range []string{"ImportError: cannot import servers.broken", "Cannot find package 'zod'", "bytes cut ...]", "Node.js v20"} {
			if code != 1 || !strings.Contains(out, want) {
				t.Errorf("exit %d, want 1 and %q in:\n%s", code, want, out)
			}
		}
	})
}
