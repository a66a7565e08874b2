package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSkillsMount reads the skills mount as data: read-only at SkillsMount,
// announced to the runner, and absent without a directory.
func TestSkillsMount(t *testing.T) {
	spec := bwrapSpec{Python: python, CtlFD: 3, Runtime: "/data/rt", Workspace: "/data/ws/a", Skills: "/data/skills/a", TmpSize: 1 << 20}
	joined := " " + strings.Join(bwrapArgs(spec), " ") + " "
	for _, want := range []string{" --ro-bind /data/skills/a /codecell/skills ", " --skills /codecell/skills "} {
		if !strings.Contains(joined, want) {
			t.Errorf("bubblewrap: missing %q in %s", want, joined)
		}
	}
	spec.Skills = ""
	if joined := strings.Join(bwrapArgs(spec), " "); strings.Contains(joined, "skills") {
		t.Errorf("bubblewrap: skills without a directory: %s", joined)
	}

	oci := ociConfig(gvisorSpec{Python: python, Runtime: "/data/rt", Workspace: "/data/ws/a", Skills: "/data/skills/a", TmpSize: 1 << 20})
	i := slices.IndexFunc(oci.Mounts, func(m ociMount) bool { return m.Destination == SkillsMount })
	if i < 0 || oci.Mounts[i].Source != "/data/skills/a" || !slices.Contains(oci.Mounts[i].Options, "ro") {
		t.Errorf("gVisor: skills mount %+v", oci.Mounts)
	}
	if args := strings.Join(oci.Process.Args, " "); !strings.Contains(args, "--skills /codecell/skills") {
		t.Errorf("gVisor: runner arguments %s", args)
	}
}

// writeSkill writes a skill as package skills lays it out, readable by the
// sandbox user.
func writeSkill(t *testing.T, dir, name, code string) {
	t.Helper()
	sd := filepath.Join(dir, name)
	if err := os.MkdirAll(sd, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	os.Chmod(sd, 0o755)
	for file, data := range map[string]string{name + ".py": code, "__init__.py": "from ." + name + " import *\n"} {
		if err := os.WriteFile(filepath.Join(sd, file), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(sd, file), 0o644)
	}
}

func TestSkillsImport(t *testing.T) {
	for _, level := range []Level{Development, Production, Hardened} {
		t.Run(string(level), func(t *testing.T) {
			m, ws := newTestManager(t, level, Limits{}, 1)
			root := reachableTempDir(t)
			a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
			writeSkill(t, a, "calc", "def f():\n    return 'a1'\n")
			writeSkill(t, b, "calc", "def f():\n    return 'b1'\n")
			run := func(skills, code string) *Result {
				return m.Exec(context.Background(), Request{Workspace: ws, Skills: skills, Code: code, Timeout: slack})
			}
			const imp = "from skills.calc import f\nf()"

			if r := run(a, imp); !r.OK || r.Result != "a1" {
				t.Fatalf("import: %+v %+v", r.Result, r.Error)
			}
			// Another namespace's directory, same workspace: never the
			// first one's sandbox.
			if r := run(b, imp); !r.OK || r.Result != "b1" {
				t.Fatalf("import from the other directory: %+v %+v", r.Result, r.Error)
			}
			// A new version is seen by the next execution, warm sandbox
			// or not.
			writeSkill(t, a, "calc", "def f():\n    return 'a2'\n")
			if r := run(a, imp); !r.OK || r.Result != "a2" {
				t.Fatalf("import after a change: %+v %+v", r.Result, r.Error)
			}
			if r := run("", imp); r.OK || r.Error.Type != "ModuleNotFoundError" {
				t.Fatalf("import without skills: %+v %+v", r.Result, r.Error)
			}
			// A "skills" directory in the workspace does not stand in for
			// the real one.
			if r := run(a, "import os\nos.makedirs('skills/calc', exist_ok=True)\nopen('skills/calc/__init__.py', 'w').write('def f(): return 0')\n"+imp); !r.OK || r.Result != "a2" {
				t.Fatalf("workspace shadowing: %+v %+v", r.Result, r.Error)
			}
			if level == Development {
				return // the host's directory, as it is: not read-only
			}
			r := run(a, `
import os, skills
where = skills.__path__[0]
denied = []
for attempt in (lambda: open(where + "/calc/calc.py", "w"),
                lambda: open(where + "/evil.py", "w"),
                lambda: os.mkdir(where + "/evil"),
                lambda: os.remove(where + "/calc/calc.py")):
    try:
        attempt()
    except OSError as e:
        denied.append(e.errno)
import errno
result = [where, len(denied), denied.count(errno.EROFS)]
`)
			// Under bubblewrap every refusal is EROFS: the mount refuses, not
			// merely the files' modes. gVisor checks the modes first (EACCES);
			// its mount's "ro" is checked as data in TestSkillsMount.
			if !r.OK {
				t.Fatalf("read-only: %+v", r.Error)
			}
			want := `["/codecell/skills",4,4]`
			if got, ok := r.Result.([]any); level == Hardened && ok && len(got) == 3 {
				want = fmt.Sprintf(`["/codecell/skills",4,%v]`, got[2])
			}
			if toJSON(r.Result) != want {
				t.Fatalf("read-only: %+v %+v", r.Result, r.Error)
			}
			if got, _ := os.ReadFile(filepath.Join(a, "calc", "calc.py")); !strings.Contains(string(got), "a2") {
				t.Fatalf("the skill changed: %q", got)
			}
		})
	}
}

// TestSkillsDirRecreated: a skills directory removed and made again (as the
// skills package repairs it) is another target: warm sandboxes that mount
// the old one are not used, and are dropped.
func TestSkillsDirRecreated(t *testing.T) {
	m, ws := newTestManager(t, Production, Limits{}, 1)
	dir := filepath.Join(reachableTempDir(t), "skills")
	writeSkill(t, dir, "calc", "def f():\n    return 1\n")
	run := func() *Result {
		return m.Exec(context.Background(), Request{Workspace: ws, Skills: dir, Code: "from skills.calc import f\nf()", Timeout: slack})
	}
	if r := run(); !r.OK {
		t.Fatalf("first: %+v", r.Error)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, dir, "calc", "def f():\n    return 2\n")
	for i := 0; i < 2; i++ {
		if r := run(); !r.OK || r.Result != 2.0 {
			t.Fatalf("after the directory was made again (%d): %+v %+v", i, r.Result, r.Error)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for tg, list := range m.idle {
		if tg.skillsDir != dirID(dir) && len(list) > 0 {
			t.Errorf("%d idle sandboxes still mount the removed directory", len(list))
		}
	}
}
