package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tasks and approvals suite drives the built binary with the official
// TypeScript clients through testdata/npm/tasks.mjs, written from the
// specifications (SEP-2663, the tasks extension of 2026-07-28; SEP-2322,
// multi round-trip requests; the experimental tasks of 2025-11-25), not
// from codecell's code:
//
//   - v2: @modelcontextprotocol/client 2.x pinned to 2026-07-28, with
//     @modelcontextprotocol/ext-tasks (the tasks extension in its
//     per-request capabilities; input_required answered through the
//     client's elicitation handler or, inside a task, with tasks/update);
//   - v1: @modelcontextprotocol/sdk 1.x (2025-11-25) and its experimental
//     tasks API, elicitation/create for approvals;
//   - v1ext: ext-tasks on a 2.x client in the 2025-11-25 era.
//
// The script prints one JSON line per check; a test here fails on every
// check that failed, with the script's own explanation, and on a scenario
// that did not run to its end. Nothing here measures time: the only limits
// are guards against a hang.

// tasksSeconds is how long the long execution of TestTasks runs: a few
// seconds by default; -tasks-seconds 600 runs the ten-minute task by hand
// (go test ./cmd/codecell -run 'TestTasks/v2/http' -v -args -tasks-seconds 600).
var tasksSeconds = flag.Int("tasks-seconds", 6, "TestTasks: seconds the long execution prints a line every half second")

// tasksRunTimeout, with three times -tasks-seconds, bounds one run of the
// script; its requests have their own limits, this only stops a run that
// hangs.
const tasksRunTimeout = 10 * time.Minute

// The server's limits in the suite's config: a call may ask for up to
// tasksMaxTimeout seconds, and a tasks client of 2026-07-28 for more.
const (
	tasksMaxTimeout = 100
	tasksTokenA     = "tasks-token-a-0123456789"
	tasksTokenB     = "tasks-token-b-0123456789"
)

// tasksDeps are the npm packages the suite uses, with an entry point each.
var tasksDeps = map[string]string{
	"@modelcontextprotocol/sdk":           "package.json",
	"@modelcontextprotocol/client":        "package.json",
	"@modelcontextprotocol/ext-tasks":     "dist/client/index.js",
	"@modelcontextprotocol/server-memory": "dist/index.js",
}

// tasksEnv finds node and the pinned npm packages of the suite, as the
// conformance suite does (npmEnv), and a node new enough for the 2.x client.
func tasksEnv(t *testing.T) (node, npmDir string) {
	t.Helper()
	node, npmDir = npmEnv(t, tasksDeps)
	if major := nodeMajor(t, node); major < 20 {
		t.Fatalf("node %d is too old for @modelcontextprotocol/client 2.x: install Node 20 or later", major)
	}
	return node, npmDir
}

// tasksConfig is codecell's config for the suite: tasks after a second,
// a maxTimeout a tasks client may go beyond, and, with policy, the memory
// server as an upstream (its store in a file of its own) under that policy.
func tasksConfig(t *testing.T, npmDir string, policy map[string]any, tokens bool) string {
	t.Helper()
	cfg := map[string]any{
		"sandbox": map[string]any{
			"isolation": "production", "python": "/usr/bin/python3", "pool": 2,
			"timeout": "20s", "maxTimeout": fmt.Sprintf("%ds", tasksMaxTimeout),
			"taskAfter": "1s", "taskTimeout": "1h",
		},
		"toolsets": []string{"default"},
	}
	if policy != nil {
		memEntry := filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")
		memDir := t.TempDir()
		os.Chmod(memDir, 0o755)
		cfg["mcpServers"] = map[string]any{"memory": map[string]any{
			"command": "node", "args": []string{memEntry},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(memDir, "memory.jsonl")},
		}}
		cfg["policy"] = policy
	}
	if tokens {
		cfg["http"] = map[string]any{"tokens": map[string]string{tasksTokenA: "tasks-a", tasksTokenB: "tasks-b"}}
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// taskFinding is one line of tasks.mjs's output.
type taskFinding struct {
	Scenario  string         `json:"scenario"`
	Client    string         `json:"client"`
	Transport string         `json:"transport"`
	Check     string         `json:"check"`
	OK        bool           `json:"ok"`
	Detail    string         `json:"detail"`
	Data      map[string]any `json:"data"`
}

// runTasksScript runs tasks.mjs with args (the scenarios first), fails the
// test on each failed check and on each scenario that did not run to its
// end, and returns the findings.
func runTasksScript(t *testing.T, node, npmDir, scenarios string, args ...string) []taskFinding {
	t.Helper()
	limit := tasksRunTimeout + 3*time.Duration(*tasksSeconds)*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := nodeCommand(ctx, node, npmDir, slices.Concat([]string{filepath.Join(npmDir, "tasks.mjs"), scenarios}, args)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("tasks.mjs %s still running after %v (a hang): %v", scenarios, limit, runErr)
	}
	var findings []taskFinding
	for line := range strings.Lines(stdout.String()) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var f taskFinding
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Errorf("tasks.mjs printed a line that is not a finding (%v): %s", err, line)
			continue
		}
		findings = append(findings, f)
	}
	failed := 0
	for _, f := range findings {
		if !f.OK {
			failed++
			t.Errorf("[%s %s/%s] %s: %s", f.Scenario, f.Client, f.Transport, f.Check, f.Detail)
		}
	}
	for _, s := range strings.Split(scenarios, ",") {
		if !slices.ContainsFunc(findings, func(f taskFinding) bool { return f.Scenario == s && f.Check == "scenario ran to the end" }) && failed == 0 {
			t.Errorf("tasks.mjs: the scenario %s did not run to its end", s)
		}
	}
	if runErr != nil && failed == 0 {
		t.Errorf("tasks.mjs %s: %v", scenarios, runErr)
	}
	if t.Failed() {
		t.Logf("tasks.mjs %s, the server's and the script's stderr:\n%s", scenarios, lastLines(stderr.String(), 60))
	} else {
		t.Logf("tasks.mjs %s: %d checks passed", scenarios, len(findings))
	}
	return findings
}

// TestTasks: a long execution completes as a task while the client polls
// and gives what a synchronous run gives; a task cancelled mid-run ends
// cancelled and the next execution works; over HTTP, a new connection and a
// new process fetch a task by id, and another token's namespace cannot see
// or cancel it. Each generation of client, over stdio and HTTP.
func TestTasks(t *testing.T) {
	requireProduction(t)
	node, npmDir := tasksEnv(t)
	seconds := strconv.Itoa(*tasksSeconds)
	for _, client := range []string{"v2", "v1", "v1ext"} {
		t.Run(client, func(t *testing.T) {
			// A client that takes tasks (a 2026-07-28 one declaring the
			// extension, a 2025 one asking for a task) may ask for more
			// than sandbox.maxTimeout, up to sandbox.taskTimeout.
			timeoutSeconds := max(*tasksSeconds+60, tasksMaxTimeout+50)
			common := []string{"--client", client, "--seconds", seconds,
				"--timeout-seconds", strconv.Itoa(timeoutSeconds), "--max-timeout", strconv.Itoa(tasksMaxTimeout)}
			t.Run("stdio", func(t *testing.T) {
				cfgPath, dataDir := testDirs(t, tasksConfig(t, npmDir, nil, false))
				runTasksScript(t, node, npmDir, "long,compare,cancel", slices.Concat(common,
					[]string{"--stdio", binary, "--", "serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "warn"})...)
			})
			t.Run("http", func(t *testing.T) {
				url := startHTTP(t, tasksConfig(t, npmDir, nil, true), nil) + "/mcp"
				conn := []string{"--http", url, "--token", tasksTokenA, "--token2", tasksTokenB}
				runTasksScript(t, node, npmDir, "long,compare,cancel,reconnect,namespaces", slices.Concat(common, conn)...)

				// One process starts a task and ends; another fetches it.
				short := []string{"--client", client, "--seconds", "3"}
				started := runTasksScript(t, node, npmDir, "start", slices.Concat(short, conn)...)
				var id string
				for _, f := range started {
					if f.Check == "task id" {
						id, _ = f.Data["taskId"].(string)
					}
				}
				if id == "" {
					t.Fatal("the start scenario printed no task id")
				}
				runTasksScript(t, node, npmDir, "resume", slices.Concat(short, conn, []string{"--task-id", id})...)
			})
		})
	}
}

// TestApprovals: a call of an upstream tool that policy.approve gates asks
// the host (elicitation/create for a 2025 client, input_required for a
// 2026 one, input_required inside a task answered with tasks/update);
// accept with allow_all runs every call of the execution after one
// question, decline and cancel raise servers.ApprovalDenied and run
// nothing, and a client that cannot be asked gets ApprovalDenied saying so.
// policy.approveDestructive asks for destructive tools only.
func TestApprovals(t *testing.T) {
	requireProduction(t)
	node, npmDir := tasksEnv(t)
	gated := map[string]any{"approve": []string{"memory.create_entities"}}
	for _, c := range []struct{ client, scenarios string }{
		{"v1", "approve-all,approve-decline,approve-none"},
		{"v2", "approve-all,approve-decline,approve-none,approve-task"},
	} {
		t.Run(c.client, func(t *testing.T) {
			t.Run("stdio", func(t *testing.T) {
				cfgPath, dataDir := testDirs(t, tasksConfig(t, npmDir, gated, false))
				runTasksScript(t, node, npmDir, c.scenarios, "--client", c.client,
					"--stdio", binary, "--", "serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "warn")
			})
			t.Run("http", func(t *testing.T) {
				url := startHTTP(t, tasksConfig(t, npmDir, gated, true), nil) + "/mcp"
				runTasksScript(t, node, npmDir, c.scenarios, "--client", c.client, "--http", url, "--token", tasksTokenA)
			})
		})
	}
	t.Run("destructive", func(t *testing.T) {
		cfgPath, dataDir := testDirs(t, tasksConfig(t, npmDir, map[string]any{"approveDestructive": true}, false))
		for _, client := range []string{"v1", "v2"} {
			t.Run(client, func(t *testing.T) {
				runTasksScript(t, node, npmDir, "approve-destructive", "--client", client,
					"--stdio", binary, "--", "serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "warn")
			})
		}
	})
}
