package sandbox

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBwrapUnbound reads an unbound sandbox's command line as data: an
// empty workspace directory and no skills bound, the runner told of the
// skills it will have, and nothing else of the policy changed.
func TestBwrapUnbound(t *testing.T) {
	bound := bwrapSpec{Python: python, CtlFD: 3, SeccompFD: 4, RuntimeFiles: []bwrapFile{{"codecell_runner.py", 7}},
		Workspace: "/data/ws/a", Skills: "/data/skills/a", TmpSize: 1 << 20}
	unbound := bound
	unbound.Workspace, unbound.Skills, unbound.Unbound = "", SkillsMount, true
	got := " " + strings.Join(bwrapArgs(unbound), " ") + " "
	for _, want := range []string{" --perms 0700 --dir /workspace --chdir /workspace ", " --skills /codecell/skills"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
	for _, not := range []string{"--bind", "/data/"} {
		if strings.Contains(got, not) {
			t.Errorf("%q in %s", not, got)
		}
	}
	// Every other argument is the bound sandbox's.
	strip := func(args []string) []string {
		var out []string
		for i := 0; i < len(args); i++ {
			switch {
			case args[i] == "--bind" || args[i] == "--ro-bind" && strings.HasPrefix(args[i+1], "/data/"):
				i += 2
			case args[i] == "--perms" && args[i+3] == WorkspaceMount:
				i += 3
			default:
				out = append(out, args[i])
			}
		}
		return out
	}
	if a, b := strip(bwrapArgs(bound)), strip(bwrapArgs(unbound)); !slices.Equal(a, b) {
		t.Errorf("the policies differ:\nbound   %s\nunbound %s", strings.Join(a, " "), strings.Join(b, " "))
	}
}

// newUnboundManager is a production Manager that keeps one sandbox
// started for no namespace.
func newUnboundManager(t *testing.T) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sandboxes started ahead of namespaces need root (CAP_SYS_ADMIN over a sandbox's user namespace)")
	}
	m, _ := newTestManager(t, Production, Limits{}, 1)
	m.KeepUnbound(1)
	return m
}

// claimedManager is levelManager's production Manager, but the
// workspace's sandbox was started before it, for no namespace, and its
// first execution claimed it.
func claimedManager(t *testing.T) (*Manager, string) {
	t.Helper()
	m := newUnboundManager(t)
	// An execution elsewhere shows the shape the unbound sandboxes need.
	if r := exec1(t, m, filepath.Join(reachableTempDir(t), "other"), "1", slack); !r.OK {
		t.Fatal(r.Error)
	}
	z := unboundReady(t, m)
	ws := filepath.Join(reachableTempDir(t), "ws")
	if r := exec1(t, m, ws, "print(1)", slack); !r.OK || r.Stdout != "1\n" {
		t.Fatalf("the first execution: %+v", r.Error)
	}
	waitBack(t, m)
	if z.boundTo != ws {
		t.Fatal("the workspace's sandbox is not the one started ahead")
	}
	return m, ws
}

// unboundReady waits until m holds an unbound sandbox ready, and returns
// it.
func unboundReady(t *testing.T, m *Manager) *zygote {
	t.Helper()
	for deadline := time.Now().Add(slack); ; time.Sleep(20 * time.Millisecond) {
		m.mu.Lock()
		var z *zygote
		if len(m.unbound.idle) > 0 {
			z = m.unbound.idle[0]
		}
		m.mu.Unlock()
		if z != nil {
			return z
		}
		if time.Now().After(deadline) {
			t.Fatalf("no unbound sandbox ready: %+v", m.PoolStats())
		}
	}
}

// holds says whether the sandbox z is among m's warm sandboxes of
// workspace.
func holds(m *Manager, workspace string, z *zygote) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for tg, list := range m.idle {
		if tg.workspace == workspace && slices.Contains(list, sandbox(z)) {
			return true
		}
	}
	return false
}

// namespaceDirs makes a workspace holding a file of its name and a skills
// directory with a skill that returns it, for a namespace called name.
func namespaceDirs(t *testing.T, m *Manager, root, name string) (ws, skills string) {
	t.Helper()
	ws, skills = filepath.Join(root, name, "ws"), filepath.Join(root, name, "skills")
	if err := m.PrepareDir(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, name+".txt"), []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(root, name), 0o711)
	writeSkill(t, skills, "who", "def f():\n    return '"+name+"'\n")
	return ws, skills
}

// TestUnboundClaim: a namespace whose pool is empty gets a sandbox started
// before it, with its own workspace (read-write, the working directory)
// and skills (read-only) mounted as bubblewrap would have; the sandbox is
// then that namespace's alone, and gone when the namespace gives its
// sandboxes back.
func TestUnboundClaim(t *testing.T) {
	m := newUnboundManager(t)
	root := reachableTempDir(t)
	wsA, skA := namespaceDirs(t, m, root, "a")
	wsB, skB := namespaceDirs(t, m, root, "b")
	wsC, skC := namespaceDirs(t, m, root, "c")
	run := func(ws, skills, code string) *Result {
		t.Helper()
		r := m.Exec(context.Background(), Request{Workspace: ws, Skills: skills, Code: code, Timeout: slack})
		if !r.OK {
			t.Fatalf("%s: %+v", ws, r.Error)
		}
		return r
	}
	// The first execution shows the shape unbound sandboxes need (skills):
	// it starts its own, and the unbound one starts.
	run(wsA, skA, "1")
	z := unboundReady(t, m)
	if holds(m, wsA, z) {
		t.Fatal("the unbound sandbox is a's")
	}

	r := run(wsB, skB, `
import os
from skills.who import f
open("made.txt", "w").write("b")
denied = []
try:
    open("/codecell/skills/evil.py", "w")
except OSError as e:
    denied.append(e.errno)
opts = {}
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    if fields[4] in ("/workspace", "/codecell/skills"):
        opts[fields[4]] = fields[5]
[os.getcwd(), sorted(os.listdir(".")), f(), denied, opts]
`)
	got := r.Result.([]any)
	if got[0] != WorkspaceMount || toJSON(got[1]) != `["b.txt","made.txt"]` || got[2] != "b" || toJSON(got[3]) != "[30]" {
		t.Fatalf("b's execution in the claimed sandbox: %s", toJSON(got))
	}
	opts := got[4].(map[string]any)
	for mnt, want := range map[string][]string{WorkspaceMount: {"rw", "nosuid", "nodev"}, SkillsMount: {"ro", "nosuid", "nodev"}} {
		have, _ := opts[mnt].(string)
		for _, o := range want {
			if !slices.Contains(strings.Split(have, ","), o) {
				t.Errorf("%s mounted %q, without %s", mnt, have, o)
			}
		}
	}
	if data, err := os.ReadFile(filepath.Join(wsB, "made.txt")); err != nil || string(data) != "b" {
		t.Fatalf("the file b wrote: %q %v", data, err)
	}
	waitBack(t, m)
	if z.boundTo != wsB {
		t.Fatal("the claimed sandbox is not b's")
	}
	// b's next execution runs in it again, in its workspace.
	if r := run(wsB, skB, "import os\nos.getcwd(), sorted(os.listdir('.'))"); toJSON(r.Result) != `["/workspace",["b.txt","made.txt"]]` {
		t.Fatalf("b's second execution: %s", toJSON(r.Result))
	}

	// Another unbound sandbox was started for the next namespace; c's
	// sandbox is that one, never b's.
	z2 := unboundReady(t, m)
	if z2 == z {
		t.Fatal("b's sandbox went back to the unbound ones")
	}
	if r := run(wsC, skC, "from skills.who import f\nimport os\nf(), sorted(os.listdir('.'))"); toJSON(r.Result) != `["c",["c.txt"]]` {
		t.Fatalf("c's execution: %s", toJSON(r.Result))
	}
	waitBack(t, m)
	if z2.boundTo != wsC || holds(m, wsB, z2) || holds(m, wsC, z) {
		t.Fatal("a sandbox serves two namespaces")
	}

	// b gives its sandboxes back: the one it claimed is killed.
	m.Release(wsB)
	if z.alive() || holds(m, wsB, z) {
		t.Fatal("b's claimed sandbox outlived its release")
	}
	m.mu.Lock()
	for _, u := range m.unbound.idle {
		if u == z || u == z2 {
			t.Error("a claimed sandbox is unbound again")
		}
	}
	m.mu.Unlock()
	// b's next execution claims a fresh one.
	if r := run(wsB, skB, "from skills.who import f\nf()"); r.Result != "b" {
		t.Fatalf("b after its release: %s", toJSON(r.Result))
	}
}

// waitBack waits until no sandbox of m is busy.
func waitBack(t *testing.T, m *Manager) {
	t.Helper()
	for deadline := time.Now().Add(slack); m.PoolStats().Busy > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a sandbox still busy: %+v", m.PoolStats())
		}
	}
}

// TestUnboundShape: only targets an unbound sandbox can serve claim one
// (the Manager's interpreter, no preload), and a change of shape (skills
// or none) replaces the unbound sandboxes rather than mount skills where
// the runner was told of none.
func TestUnboundShape(t *testing.T) {
	m := &Manager{opts: Options{Level: Production, Python: python}}
	tg := target{workspace: "/ws/a", dir: 1, python: python, skills: "/skills/a", skillsDir: 2, epoch: 3}
	key, ok := m.unboundKey(tg)
	if !ok || key != (target{python: python, skills: SkillsMount}) {
		t.Fatalf("key %+v %v", key, ok)
	}
	other := tg
	other.workspace, other.dir, other.skills, other.skillsDir = "/ws/b", 4, "/skills/b", 5
	if k, _ := m.unboundKey(other); k != key {
		t.Errorf("another namespace's key %+v", k)
	}
	noSkills := tg
	noSkills.skills = ""
	if k, _ := m.unboundKey(noSkills); k == key {
		t.Error("a target without skills has the key of one with")
	}
	for name, change := range map[string]func(*target){
		"preload":     func(tg *target) { tg.preload = true },
		"environment": func(tg *target) { tg.python, tg.readOnly = "/envs/a/bin/python", "/envs/a" },
		"unbound":     func(tg *target) { *tg = key },
	} {
		c := tg
		change(&c)
		if _, ok := m.unboundKey(c); ok {
			t.Errorf("%s: served by an unbound sandbox", name)
		}
	}
	for _, level := range []Level{Development, Hardened} {
		m := &Manager{opts: Options{Level: level, Python: python}}
		if _, ok := m.unboundKey(tg); ok {
			t.Errorf("%s: served by an unbound sandbox", level)
		}
	}
}

// TestUnboundShapeChange: executions without skills after ones with them
// replace the unbound sandbox, whose runner was told of skills.
func TestUnboundShapeChange(t *testing.T) {
	m := newUnboundManager(t)
	root := reachableTempDir(t)
	wsA, skA := namespaceDirs(t, m, root, "a")
	wsB, _ := namespaceDirs(t, m, root, "b")
	wsC, _ := namespaceDirs(t, m, root, "c")
	if r := m.Exec(context.Background(), Request{Workspace: wsA, Skills: skA, Code: "1", Timeout: slack}); !r.OK {
		t.Fatal(r.Error)
	}
	z := unboundReady(t, m)
	// Without skills: not that one, which is replaced.
	r := m.Exec(context.Background(), Request{Workspace: wsB, Code: "import sys\n'skills' in sys.modules", Timeout: slack})
	if !r.OK || r.Result != false {
		t.Fatalf("b: %+v %+v", r.Result, r.Error)
	}
	if holds(m, wsB, z) {
		t.Fatal("b got a sandbox shaped for skills")
	}
	z2 := unboundReady(t, m)
	if z2 == z || z.alive() {
		t.Fatal("the unbound sandbox of the old shape stayed")
	}
	r = m.Exec(context.Background(), Request{Workspace: wsC, Code: "import os, sys\n'skills' in sys.modules, os.listdir('.')", Timeout: slack})
	if !r.OK || toJSON(r.Result) != `[false,["c.txt"]]` {
		t.Fatalf("c: %+v %+v", r.Result, r.Error)
	}
	// Claimed (bound to c's workspace) is what counts: whether it is back
	// in c's pool after the execution depends on timing (a refill for c's
	// pool of one may come first, and the claimed one is then dropped).
	if z2.boundTo != wsC {
		t.Fatal("c did not claim the sandbox of its shape")
	}
}

// TestUnboundClaimWaits: a claim that finds none ready waits for one
// that is starting only while fewer claims wait than are starting, and
// takes none of another shape, should the shape change while it waits.
func TestUnboundClaimWaits(t *testing.T) {
	tg := target{workspace: "/ws/a", python: python}
	newManager := func(starting int) *Manager {
		m := &Manager{opts: Options{Level: Production, Python: python}, log: slog.New(slog.DiscardHandler)}
		key, _ := m.unboundKey(tg)
		m.unbound = unboundPool{size: 1, key: key, known: true, starting: starting, ready: make(chan struct{})}
		return m
	}
	waiting := func(m *Manager) {
		for deadline := time.Now().Add(slack); ; time.Sleep(time.Millisecond) {
			m.mu.Lock()
			n := m.unbound.waiting
			m.mu.Unlock()
			if n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the claim does not wait")
			}
		}
	}

	if z := newManager(0).claimUnbound(context.Background(), tg); z != nil {
		t.Fatal("claimed with none ready or starting")
	}

	m := newManager(1)
	got := make(chan *zygote)
	go func() { got <- m.claimUnbound(context.Background(), tg) }()
	waiting(m)
	other := &zygote{done: make(chan struct{})}
	m.mu.Lock()
	m.unbound.key.skills = SkillsMount
	m.unbound.starting--
	m.unbound.idle = []*zygote{other}
	close(m.unbound.ready)
	m.unbound.ready = make(chan struct{})
	m.mu.Unlock()
	if z := <-got; z != nil {
		t.Fatal("claimed a sandbox of another shape")
	}
	if len(m.unbound.idle) != 1 || m.unbound.waiting != 0 {
		t.Fatalf("pool after the claim: %+v", m.unbound)
	}

	m = newManager(1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { got <- m.claimUnbound(ctx, tg) }()
	waiting(m)
	cancel()
	if z := <-got; z != nil || m.unbound.waiting != 0 {
		t.Fatalf("a cancelled claim: %v, %+v", z, m.unbound)
	}
}
