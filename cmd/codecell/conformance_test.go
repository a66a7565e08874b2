package main

import (
	"bytes"
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
)

// The conformance suite drives the built binary with MCP clients other
// people wrote: the official TypeScript SDK clients of both protocol
// generations (@modelcontextprotocol/sdk 1.x, what Claude Desktop, Claude
// Code and Cursor are built on, speaking 2025-11-25 with MCP sessions; and
// @modelcontextprotocol/client 2.x pinned to the stateless 2026-07-28),
// through testdata/npm/conformance.mjs, and the MCP Inspector CLI's
// --strict schema portability check. A Go SDK client would share the
// server's code, and so its mistakes.

// conformanceRunTimeout bounds one client run. Each request has its own
// limit in the script; this only stops a run that hangs.
const conformanceRunTimeout = 15 * time.Minute

// npmDeps are the packages of testdata/npm the suite needs, with the path
// of the entry point each is used by.
var npmDeps = map[string]string{
	"@modelcontextprotocol/sdk":               "package.json",
	"@modelcontextprotocol/client":            "package.json",
	"@modelcontextprotocol/inspector":         "package.json",
	"@modelcontextprotocol/server-everything": "dist/index.js",
}

// conformanceEnv finds node and the pinned npm packages of the suite. When
// they are missing it skips with the reason, except in CI (CI set), where
// make test installs them and their absence is a failure.
func conformanceEnv(t *testing.T) (node, npmDir string) {
	t.Helper()
	return npmEnv(t, npmDeps)
}

// npmEnv finds node and the pinned npm packages deps (each with the path of
// an entry point), skipping or failing as conformanceEnv does.
func npmEnv(t *testing.T, deps map[string]string) (node, npmDir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missingDep(t, "node is not installed (make npm-deps installs it)")
	}
	npmDir, err = filepath.Abs(filepath.Join("..", "..", "testdata", "npm"))
	if err != nil {
		t.Fatal(err)
	}
	var pinned struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	raw, err := os.ReadFile(filepath.Join(npmDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &pinned); err != nil {
		t.Fatalf("testdata/npm/package.json: %v", err)
	}
	for pkg, entry := range deps {
		dir := filepath.Join(npmDir, "node_modules", filepath.FromSlash(pkg))
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(entry))); err != nil {
			missingDep(t, "%s is not installed in testdata/npm (make npm-deps installs it): %v", pkg, err)
		}
		// A machine installed before the pins changed runs stale clients.
		var installed struct {
			Version string `json:"version"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			err = json.Unmarshal(raw, &installed)
		}
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		if want := pinned.Dependencies[pkg]; installed.Version != want {
			missingDep(t, "%s %s is installed in testdata/npm, but package.json pins %q (make npm-deps installs it)", pkg, installed.Version, want)
		}
	}
	return node, npmDir
}

// missingDep skips the test because the host lacks what it needs, or fails
// it in CI (CI set), whose host make test sets up.
func missingDep(t *testing.T, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI is set, and there this is a failure", reason)
	}
	t.Skip(reason)
}

// nodeMajor is the major version of node.
func nodeMajor(t *testing.T, node string) int {
	t.Helper()
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("%s -p process.versions.node: %v", node, err)
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "%d.", &major); err != nil {
		t.Fatalf("node version %q: %v", out, err)
	}
	return major
}

// conformanceConfig is codecell's config for the suite: every toolset, so
// that every tool is listed and called, one real upstream for discovery to
// find, and a wheelhouse for install_dependencies.
func conformanceConfig(t *testing.T, node, npmDir, wheelhouse string) string {
	t.Helper()
	everything := filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	sb := map[string]any{"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "60s"}
	if wheelhouse != "" {
		sb["wheelhouse"] = wheelhouse
	}
	raw, err := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"everything": map[string]any{"command": node, "args": []string{everything, "stdio"}}},
		"sandbox":    sb,
		"toolsets":   []string{"all"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// nodeCommand is node running args in dir as a process group of its own,
// which ends with the test, or when ctx is done. The clients start codecell
// (which starts sandboxes and an upstream server); the group takes them all.
func nodeCommand(ctx context.Context, node, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// TestConformance runs the TypeScript SDK client script and the Inspector's
// --strict check against codecell serve over stdio and over Streamable HTTP.
func TestConformance(t *testing.T) {
	requireProduction(t)
	node, npmDir := conformanceEnv(t)

	// install_dependencies installs from a local wheelhouse when venvs can
	// be made here; otherwise only its refusal in the system environment is
	// checked.
	var wheelhouse string
	var install []string
	if exec.Command("/usr/bin/python3", "-I", "-c", "import ensurepip, venv").Run() == nil {
		wheelhouse = filepath.Join(reachableDir(t), "wheels")
		if err := os.Mkdir(wheelhouse, 0o755); err != nil {
			t.Fatal(err)
		}
		buildWheel(t, wheelhouse, "conformance_pkg", "1.0", map[string]string{"conformance_pkg/__init__.py": "VALUE = 1\n"})
		install = []string{"--install", "conformance_pkg==1.0"}
	} else {
		t.Log("python3-venv is not installed: install_dependencies is checked only in the system environment")
	}
	cfg := conformanceConfig(t, node, npmDir, wheelhouse)
	script := filepath.Join(npmDir, "conformance.mjs")

	// runScript runs the TypeScript SDK client script against one transport.
	runScript := func(t *testing.T, transport ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), conformanceRunTimeout)
		defer cancel()
		cmd := nodeCommand(ctx, node, npmDir, slices.Concat([]string{script}, install, transport)...)
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			err = fmt.Errorf("still running after %v: %w", conformanceRunTimeout, err)
		}
		if err != nil {
			t.Fatalf("the TypeScript SDK client found problems (%v):\n%s", err, out)
		}
		t.Log(lastLines(string(out), 1))
	}
	for _, sdk := range []string{"v1", "v2"} {
		t.Run("typescript-sdk-"+sdk+"/stdio", func(t *testing.T) {
			cfgPath, dataDir := testDirs(t, cfg)
			runScript(t, "--sdk", sdk, "--stdio", binary, "--", "serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "warn")
		})
	}
	// Both generations on one running server, side by side: each in a
	// namespace of its own (the script's files and sessions have fixed
	// names).
	t.Run("typescript-sdk-v1-and-v2/http", func(t *testing.T) {
		var withTokens map[string]any
		if err := json.Unmarshal([]byte(cfg), &withTokens); err != nil {
			t.Fatal(err)
		}
		withTokens["http"] = map[string]any{"tokens": map[string]string{"conformance-token-v1": "gen2025", "conformance-token-v2": "gen2026"}}
		raw, err := json.Marshal(withTokens)
		if err != nil {
			t.Fatal(err)
		}
		url := startHTTP(t, string(raw), nil) + "/mcp"
		for _, sdk := range []string{"v1", "v2"} {
			t.Run(sdk, func(t *testing.T) {
				t.Parallel()
				runScript(t, "--sdk", sdk, "--token", "conformance-token-"+sdk, "--http", url)
			})
		}
	})

	// The Inspector's package asks for Node 22.19; its CLI runs on 20
	// (checked with 20.20) but not on 18, Debian 12's own nodejs
	// ("CustomEvent is not defined").
	if major := nodeMajor(t, node); major < 20 {
		missingDep(t, "node %d is too old for the MCP Inspector CLI: install Node 20 or later", major)
	}
	t.Run("inspector/stdio", func(t *testing.T) {
		cfgPath, dataDir := testDirs(t, cfg)
		inspectStrict(t, node, npmDir, map[string]any{
			"command": binary,
			"args":    []string{"serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "warn"},
		})
	})
	t.Run("inspector/http", func(t *testing.T) {
		inspectStrict(t, node, npmDir, map[string]any{"type": "streamable-http", "url": startHTTP(t, cfg, nil) + "/mcp"})
	})
}

// inspectorReport is what the Inspector CLI prints with --format json for
// tools/list --strict.
type inspectorReport struct {
	Result struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"result"`
	SchemaFindings []struct {
		ToolName string `json:"toolName"`
		Findings []struct {
			Rule     string `json:"rule"`
			Severity string `json:"severity"`
			Schema   string `json:"schema"`
			Path     string `json:"path"`
			Issue    string `json:"issue"`
		} `json:"findings"`
	} `json:"schemaFindings"`
}

// inspectStrict runs the MCP Inspector CLI's tools/list with --strict on
// the server that entry describes (an entry of its mcpServers config), and
// fails on any error or warning it reports.
func inspectStrict(t *testing.T, node, npmDir string, entry map[string]any) {
	t.Helper()
	dir := t.TempDir()
	// Its --config is a read-only session config, and passing the server
	// that way keeps codecell's own --config flag out of the Inspector's.
	cfgPath := filepath.Join(dir, "mcp.json")
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"codecell": entry}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	launcher := inspectorBin(t, npmDir)
	ctx, cancel := context.WithTimeout(context.Background(), conformanceRunTimeout)
	defer cancel()
	cmd := nodeCommand(ctx, node, dir, launcher, "--cli", "--config", cfgPath, "--server", "codecell",
		"--method", "tools/list", "--strict", "--format", "json")
	// Its own state goes to a home of its own, its secrets nowhere.
	home := filepath.Join(dir, "home")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "MCP_INSPECTOR_SECRET_STORE=memory", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		runErr = fmt.Errorf("still running after %v: %w", conformanceRunTimeout, runErr)
	}

	var report inspectorReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("the Inspector's output is not its JSON report (%v; exit %v):\nstdout:\n%s\nstderr:\n%s", err, runErr, stdout.String(), stderr.String())
	}
	var errs, warns []string
	for _, tool := range report.SchemaFindings {
		for _, f := range tool.Findings {
			line := fmt.Sprintf("%s: tool %s: %s.%s (%s): %s", f.Severity, tool.ToolName, f.Schema, f.Path, f.Rule, firstSentence(f.Issue))
			if f.Severity == "error" {
				errs = append(errs, line)
			} else {
				warns = append(warns, line)
			}
		}
	}
	problems := slices.Concat(errs, warns)
	if len(problems) > 0 {
		t.Errorf("the MCP Inspector's --strict check reports %d errors and %d warnings; codecell allows none:\n%s",
			len(errs), len(warns), strings.Join(problems, "\n"))
	}
	switch {
	case runErr != nil && len(problems) > 0:
		// Its stderr repeats the findings at length; the last line says how
		// it ended.
		t.Errorf("the Inspector CLI failed: %v: %s", runErr, lastLines(stderr.String(), 1))
	case runErr != nil:
		t.Errorf("the Inspector CLI failed: %v\nstderr:\n%s", runErr, stderr.String())
	}
	seen := map[string]bool{}
	for _, tool := range report.Result.Tools {
		seen[tool.Name] = true
	}
	for _, name := range specTools {
		if !seen[name] {
			t.Errorf("the Inspector did not see the tool %s (%d tools listed)", name, len(report.Result.Tools))
		}
	}
}

// specTools are the tools docs/tools.md lists with every toolset (restore_pii
// aside: it is listed only when the config allows restoring).
var specTools = []string{
	"execute_code", "execute_code_file", "initialize_code_file", "append_to_code_file", "read_code_file",
	"list_sessions", "close_session", "search_tools", "get_tool_definition", "list_tool_categories",
	"write_workspace_file", "read_workspace_file", "list_workspace_files", "delete_workspace_file",
	"save_skill", "load_skill", "list_skills", "delete_skill",
	"install_dependencies", "check_installed_packages", "configure_environment", "get_environment_config",
	"sanitize_pii", "execute_analysis", "get_execution_stats",
}

// inspectorBin is the Inspector's "inspector" bin, as its package.json
// names it: the launcher, which runs the CLI with --cli.
func inspectorBin(t *testing.T, npmDir string) string {
	t.Helper()
	dir := filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "inspector")
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Bin["inspector"] == "" {
		t.Fatalf("@modelcontextprotocol/inspector's package.json has no inspector bin: %s", raw)
	}
	return filepath.Join(dir, filepath.FromSlash(pkg.Bin["inspector"]))
}

// firstSentence is the Inspector's explanation of a finding, cut short.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
