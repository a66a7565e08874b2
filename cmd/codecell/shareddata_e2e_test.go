package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// procDirs lists the per-process directories under a data dir.
func procDirs(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "state", "proc"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestOneDataDirManyProcesses: codecell exec, codecell tools list and a
// second codecell serve on the data dir of a running server (as a desktop
// host with several windows, or a user at a terminal, would run them) leave
// its sandboxed code importing every upstream; each process's own directory
// goes with it when it exits, and one killed with SIGKILL is swept by the
// next to start.
func TestOneDataDirManyProcesses(t *testing.T) {
	requireProduction(t)
	everything := npmServer(t, "server-everything")
	cfg := fmt.Sprintf(`{"mcpServers": {"fake": {"command": %q}, "everything": {"command": "node", "args": [%q, "stdio"]}},
		"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 2, "timeout": "60s"}}`, fakeUpstream(t), everything)
	cfgPath, dataDir := testDirs(t, cfg)
	flags := []string{"--config", cfgPath, "--data-dir", dataDir}
	cs := serveStdio(t, cfgPath, dataDir, nil)
	t.Cleanup(func() { cs.Close() })

	const imports = `import os
from servers.fake import echo
from servers.everything import get_sum
result = [echo(text="fake"), get_sum(a=2, b=3), sorted(n for n in os.listdir("/codecell/gen/servers") if not n.endswith(".md") and not n.startswith("_"))]`
	check := func(when string) {
		t.Helper()
		_, out := call(t, cs, map[string]any{"code": imports})
		got, _ := json.Marshal(out.Result)
		if !out.OK || !strings.HasPrefix(string(got), `["fake",`) || !strings.HasSuffix(string(got), `["everything","fake"]]`) || !strings.Contains(string(got), "5") {
			t.Fatalf("%s: the server's code does not import every upstream: %+v %s", when, out.Error, got)
		}
	}
	check("before the other processes")
	server := procDirs(t, dataDir)
	if len(server) != 1 {
		t.Fatalf("process directories with one server running: %q", server)
	}

	if out, code := runCLI(t, append([]string{"exec", "-c", "print(1)"}, flags...)...); code != 0 || out != "1\n" {
		t.Fatalf("exec beside the server: exit %d:\n%s", code, out)
	}
	check("after codecell exec")
	if out, code := runCLI(t, append([]string{"tools", "list"}, flags...)...); code != 0 || !strings.Contains(out, "fake.add_numbers") || !strings.Contains(out, "everything.get_sum") {
		t.Fatalf("tools list beside the server: exit %d:\n%s", code, out)
	}
	check("after codecell tools list")
	// The second server is given all the time it needs to exit cleanly on
	// a loaded machine: killed, it would leave its directory behind.
	secondCmd := exec.Command(binary, append([]string{"serve", "--log-level", "warn"}, flags...)...)
	secondCmd.Stderr = os.Stderr
	second, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.CommandTransport{Command: secondCmd, TerminateDuration: 2 * time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, out := call(t, second, map[string]any{"code": "from servers.fake import echo\necho(text='second')"})
	if !out.OK || out.Result != "second" {
		t.Fatalf("a second server on the data dir: %+v %v", out.Error, out.Result)
	}
	check("with a second server running")
	if err := second.Close(); err != nil {
		t.Fatalf("the second server's exit: %v", err)
	}
	check("after the second server exited")
	if got := procDirs(t, dataDir); !slices.Equal(got, server) {
		t.Errorf("process directories after the others exited: %q, want only the server's %q", got, server)
	}

	// A process killed outright leaves its directory; the next one to
	// start removes it, and not the running server's.
	cmd := exec.Command(binary, append([]string{"exec", "-c", "import time; time.sleep(600)"}, flags...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Killed once its directory has its final name: one killed while
	// making it leaves a ".new-" directory, which a sweep leaves alone
	// for a while (its maker may be alive).
	named := func() int {
		n := 0
		for _, d := range procDirs(t, dataDir) {
			if !strings.HasPrefix(d, ".new-") {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(time.Minute); named() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the exec process never made its directory")
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := procDirs(t, dataDir); len(got) != 2 {
		t.Fatalf("after a SIGKILL: %q, want the killed process's directory left behind", got)
	}
	if out, code := runCLI(t, append([]string{"exec", "-c", "print(2)"}, flags...)...); code != 0 || out != "2\n" {
		t.Fatalf("exec after a killed one: exit %d:\n%s", code, out)
	}
	if got := procDirs(t, dataDir); !slices.Equal(got, server) {
		t.Errorf("process directories after the next start: %q, want only the server's %q", got, server)
	}
	check("after a killed process was swept")
}
