package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSkillsEndToEnd: a skill saved over MCP is imported by execute_code in a
// production sandbox; a second save is version 2 and what imports see;
// version 1 still loads; the codecell skills command (another process on the
// same data dir) lists, shows and deletes; a deleted skill no longer
// imports.
func TestSkillsEndToEnd(t *testing.T) {
	requireProduction(t)
	cfgPath, dataDir := testDirs(t, testConfig)
	cs := serveStdio(t, cfgPath, dataDir, nil)
	defer cs.Close()

	tool := func(name string, args map[string]any, out any) *mcp.CallToolResult {
		t.Helper()
		res, _ := callToolInto(t, cs, name, args, out)
		return res
	}
	var saved struct {
		Name    string `json:"name"`
		Version int    `json:"version"`
		Path    string `json:"path"`
	}
	save := func(name, code string, tags ...string) *mcp.CallToolResult {
		t.Helper()
		saved.Version = 0
		args := map[string]any{"name": name, "code": code, "description": "Doubles or triples a number."}
		if len(tags) > 0 {
			args["tags"] = tags
		}
		return tool("save_skill", args, &saved)
	}
	run := func(code string) (bool, any, string) {
		t.Helper()
		_, out := call(t, cs, map[string]any{"code": code})
		msg := ""
		if out.Error != nil {
			msg = out.Error.Type + ": " + out.Error.Message
		}
		return out.OK, out.Result, msg
	}
	const use = "from skills.calc import scale\nscale(21)"

	if res := save("calc", "def scale(x):\n    return 2 * x\n", "math"); res.IsError || saved.Version != 1 || saved.Path != "skills/calc/calc.py" {
		t.Fatalf("first save: %s %+v", textOf(res), saved)
	}
	if ok, r, msg := run(use); !ok || r != float64(42) {
		t.Fatalf("import version 1: %v %v", r, msg)
	}
	if res := save("calc", "def scale(x):\n    return 3 * x\n", "math"); res.IsError || saved.Version != 2 {
		t.Fatalf("second save: %s %+v", textOf(res), saved)
	}
	if ok, r, msg := run(use); !ok || r != float64(63) {
		t.Fatalf("import after the second save: %v %v", r, msg)
	}
	md, err := os.ReadFile(filepath.Join(dataDir, "skills", "default", "calc", "SKILL.md"))
	if err != nil || !strings.Contains(string(md), "version: 2") || !strings.Contains(string(md), `tags: ["math"]`) {
		t.Errorf("SKILL.md: %v\n%s", err, md)
	}

	// Inside the sandbox the package is a read-only mount: each write fails
	// with EROFS, whatever the files' owners and modes would allow, and a
	// "skills" directory in the workspace stands in for neither a saved
	// skill nor a new one.
	if ok, r, msg := run(`
import errno, os, skills
where = skills.__path__[0]
erofs = 0
for attempt in (lambda: open(where + "/calc/calc.py", "w"),
                lambda: open(where + "/evil.py", "w"),
                lambda: os.mkdir(where + "/evil"),
                lambda: os.rename(where + "/calc", where + "/moved"),
                lambda: os.remove(where + "/calc/SKILL.md")):
    try:
        attempt()
    except OSError as e:
        erofs += e.errno == errno.EROFS
result = [where, erofs]`); !ok || fmt.Sprint(r) != "[/codecell/skills 5]" {
		t.Errorf("writes into the skills package: %v (want 5 of 5 refused with EROFS) %s", r, msg)
	}
	if got, err := os.ReadFile(filepath.Join(dataDir, "skills", "default", "calc", "calc.py")); err != nil || !strings.Contains(string(got), "3 * x") {
		t.Errorf("calc.py after the attempts: %q %v", got, err)
	}
	if ok, r, msg := run(`
import os
for name in ("calc", "evil"):
    os.makedirs("skills/" + name, exist_ok=True)
    with open("skills/%s/__init__.py" % name, "w") as f:
        f.write("def scale(x):\n    return 0\n")
from skills.calc import scale
try:
    import skills.evil
    evil = "imported"
except ModuleNotFoundError:
    evil = "not found"
result = [scale(21), evil]`); !ok || fmt.Sprint(r) != "[63 not found]" {
		t.Errorf("a workspace skills directory: %v %s", r, msg)
	}

	// Refusals name the field and the rule; nothing is saved.
	for _, tc := range []struct {
		name, code, want string
	}{
		{"1abc", "x = 1\n", "invalid argument name"},
		{"class", "x = 1\n", "keyword"},
		{"broken", "def f():\n    return (\n", "invalid argument code: does not compile: line 2"},
	} {
		if res := save(tc.name, tc.code); !res.IsError || !strings.Contains(textOf(res), tc.want) {
			t.Errorf("save %s: isError=%v %q, want %q", tc.name, res.IsError, textOf(res), tc.want)
		}
	}

	var loaded struct {
		Version       int    `json:"version"`
		LatestVersion int    `json:"latest_version"`
		Code          string `json:"code"`
	}
	if res := tool("load_skill", map[string]any{"name": "calc", "version": 1}, &loaded); res.IsError ||
		loaded.Version != 1 || loaded.LatestVersion != 2 || !strings.Contains(loaded.Code, "2 * x") {
		t.Fatalf("load version 1: %s %+v", textOf(res), loaded)
	}
	if res := tool("load_skill", map[string]any{"name": "calc", "version": 3}, nil); !res.IsError || !strings.Contains(textOf(res), "versions 1 to 2") {
		t.Errorf("load version 3: %s", textOf(res))
	}

	var listed struct {
		Skills []struct {
			Name    string `json:"name"`
			Version int    `json:"version"`
		} `json:"skills"`
	}
	if res := tool("list_skills", map[string]any{"query": "MATH"}, &listed); res.IsError || len(listed.Skills) != 1 || listed.Skills[0].Version != 2 {
		t.Fatalf("list_skills math: %s %+v", textOf(res), listed)
	}
	if res := tool("list_skills", map[string]any{"query": "nothing like it"}, &listed); res.IsError || len(listed.Skills) != 0 {
		t.Errorf("list_skills with no match: %s", textOf(res))
	}

	// The command line, on the same data dir while the server runs.
	cli := func(args ...string) string {
		t.Helper()
		out, code := runCLI(t, append([]string{"skills"}, append(args, "--config", cfgPath, "--data-dir", dataDir)...)...)
		if code != 0 {
			t.Fatalf("codecell skills %v: exit %d\n%s", args, code, out)
		}
		return out
	}
	if out := cli("list"); !strings.Contains(out, "calc") || !strings.Contains(out, "v2") || !strings.Contains(out, "Doubles or triples") {
		t.Errorf("skills list:\n%s", out)
	}
	if out := cli("list", "--namespace", "team-x"); !strings.Contains(out, "(no skills)") {
		t.Errorf("skills list of another namespace:\n%s", out)
	}
	if out := cli("show", "calc", "--version", "1"); !strings.Contains(out, "calc version 1 of 2") || !strings.Contains(out, "return 2 * x") {
		t.Errorf("skills show --version 1:\n%s", out)
	}
	if out := cli("show", "calc", "--json"); !strings.Contains(out, `"latest_version": 2`) || !strings.Contains(out, "3 * x") {
		t.Errorf("skills show --json:\n%s", out)
	}
	if out, code := runCLI(t, "skills", "show", "nope", "--config", cfgPath, "--data-dir", dataDir); code == 0 || !strings.Contains(out, "no such skill") {
		t.Errorf("skills show of a missing skill: exit %d\n%s", code, out)
	}
	if res := save("spare", "def scale(x):\n    return x\n"); res.IsError {
		t.Fatalf("save spare: %s", textOf(res))
	}
	if out := cli("delete", "spare"); !strings.Contains(out, "deleted skill spare (1 versions)") {
		t.Errorf("skills delete:\n%s", out)
	}
	if ok, _, msg := run("from skills.spare import scale"); ok || !strings.Contains(msg, "ModuleNotFoundError") {
		t.Errorf("import of a skill the command deleted: ok=%v %s", ok, msg)
	}

	// delete_skill: every version and the module go.
	var deleted struct {
		Versions int `json:"versions"`
	}
	if res := tool("delete_skill", map[string]any{"name": "calc"}, &deleted); res.IsError || deleted.Versions != 2 {
		t.Fatalf("delete_skill: %s %+v", textOf(res), deleted)
	}
	if ok, _, msg := run(use); ok || !strings.Contains(msg, "ModuleNotFoundError") || !strings.Contains(msg, "skills.calc") {
		t.Errorf("import after delete_skill: ok=%v %s", ok, msg)
	}
	if res := tool("load_skill", map[string]any{"name": "calc"}, nil); !res.IsError {
		t.Errorf("load after delete_skill: %s", textOf(res))
	}
	if _, err := os.Stat(filepath.Join(dataDir, "skills", "default", "calc")); !os.IsNotExist(err) {
		t.Errorf("files left after delete_skill: %v", err)
	}
}

// TestSkillsCommandWithoutDatabase: on a data dir where no server has run,
// codecell skills answers without creating anything, and its usage errors
// say what it takes.
func TestSkillsCommandWithoutDatabase(t *testing.T) {
	cfgPath, dataDir := testDirs(t, testConfig)
	cli := func(args ...string) (string, int) {
		return runCLI(t, append(append([]string{"skills"}, args...), "--config", cfgPath, "--data-dir", dataDir)...)
	}
	if out, code := cli("list"); code != 0 || !strings.Contains(out, "(no skills)") {
		t.Errorf("skills list: exit %d\n%s", code, out)
	}
	if out, code := cli("list", "--json"); code != 0 || !strings.Contains(out, `"skills": []`) {
		t.Errorf("skills list --json: exit %d\n%s", code, out)
	}
	if out, code := cli("show", "calc"); code == 0 || !strings.Contains(out, "no such skill") {
		t.Errorf("skills show: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the data dir was created: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frob"}, `unknown skills command "frob"`},
		{[]string{"show"}, "usage: codecell skills"},
		{[]string{"delete", "a", "b"}, "usage: codecell skills"},
	} {
		if out, code := cli(tc.args...); code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("skills %v: exit %d\n%s", tc.args, code, out)
		}
	}
	if out, code := runCLI(t, "skills"); code == 0 || !strings.Contains(out, "usage: codecell skills") {
		t.Errorf("skills: exit %d\n%s", code, out)
	}
}
