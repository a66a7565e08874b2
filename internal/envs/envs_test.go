package envs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/store"
)

// fakeRunner records commands instead of running them; each answers
// result, or success when it is nil.
type fakeRunner struct {
	ran    []sandbox.Command
	result *sandbox.CommandResult
}

func (f *fakeRunner) Run(_ context.Context, c sandbox.Command) (*sandbox.CommandResult, error) {
	f.ran = append(f.ran, c)
	if f.result != nil {
		return f.result, nil
	}
	return &sandbox.CommandResult{}, nil
}
func (f *fakeRunner) PrepareDir(string) error { return nil }

func TestInstallCommand(t *testing.T) {
	venv := Config{Type: Venv, Path: "/data/envs/ns/venv", Python: "/data/envs/ns/venv/bin/python"}
	req, _ := ParseRequirement("demo_pkg==1.0")
	tests := []struct {
		name      string
		opts      Options
		indexURL  string
		want      []string
		egress    []string
		readOnly  []string
		writeable []string
	}{
		{"wheelhouse", Options{Wheelhouse: "/wheels"}, "", []string{"--no-index", "--find-links", "/wheels", "--only-binary"}, nil, []string{"/wheels"}, []string{venv.Path}},
		{"configured index", Options{IndexURL: "https://pkgs.example/simple", IndexHosts: []string{"cdn.example:443"}}, "", []string{"--index-url", "https://pkgs.example/simple", "--proxy", "--only-binary"}, []string{"pkgs.example:443", "cdn.example:443"}, nil, []string{venv.Path}},
		{"the call's index wins", Options{Wheelhouse: "/wheels"}, "http://other.example:8080/simple", []string{"--index-url", "http://other.example:8080/simple", "--proxy"}, []string{"other.example:8080"}, nil, []string{venv.Path}},
		{"default index", Options{}, "", []string{"--proxy", sandbox.ProxyArg}, []string{"pypi.org:443", "files.pythonhosted.org:443"}, nil, []string{venv.Path}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(tt.opts).installCommand(venv, req, tt.indexURL)
			args := strings.Join(c.Args, " ")
			if !strings.HasSuffix(args, " -- demo_pkg==1.0") || !strings.HasPrefix(args, venv.Python+" -m pip install --isolated") {
				t.Errorf("args %q: the requirement must come after --", args)
			}
			for _, w := range tt.want {
				if !slices.Contains(c.Args, w) {
					t.Errorf("args %q lack %q", args, w)
				}
			}
			if !slices.Equal(c.Egress, tt.egress) || !slices.Equal(c.ReadOnly, tt.readOnly) || !slices.Equal(c.Writable, tt.writeable) {
				t.Errorf("egress %v ro %v rw %v", c.Egress, c.ReadOnly, c.Writable)
			}
		})
	}
}

func TestInstallRefusals(t *testing.T) {
	run := &fakeRunner{}
	m := New(Options{DataDir: t.TempDir(), SystemPython: "/usr/bin/python3", Runner: run})
	if _, err := m.Install(context.Background(), "ns", []string{"x"}, ""); err == nil || !strings.Contains(err.Error(), "configure_environment") {
		t.Fatalf("install into the system environment: %v", err)
	}
	own := filepath.Join(m.dir("ns"), Venv)
	if err := m.save(context.Background(), "ns", Config{Type: Venv, Path: own, Python: own + "/bin/python", Managed: true}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"ftp://x", "http://", "https://a b", "file:///etc", "http://127.0.0.1:8080/simple/"} {
		if _, err := m.Install(context.Background(), "ns", []string{"x"}, bad); err == nil || !strings.Contains(err.Error(), "index_url") {
			t.Errorf("index_url %q: %v", bad, err)
		}
	}
	out, err := m.Install(context.Background(), "ns", []string{"ok_pkg", "bad; rm -rf /"}, "")
	if err != nil || !out[0].OK || out[1].OK || len(run.ran) != 1 {
		t.Fatalf("outcomes %+v, %d installer runs, err %v", out, len(run.ran), err)
	}
	if _, err := m.Configure(context.Background(), "ns", UV, "", ""); err == nil || !strings.Contains(err.Error(), "uv is not installed") {
		t.Errorf("uv without uv: %v", err)
	}
	if _, err := m.Configure(context.Background(), "ns", Conda, "", ""); err == nil || !strings.Contains(err.Error(), "conda is not installed") {
		t.Errorf("conda without conda: %v", err)
	}
	if _, err := m.Configure(context.Background(), "ns", Venv, "relative/dir", ""); err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Errorf("relative path: %v", err)
	}
}

// TestInstallSaysWhyTheProxyRefused: pip says only "Tunnel connection
// failed: 403 Forbidden"; the error names the egress proxy's reason
// (issue #30), which was only in the server's log.
func TestInstallSaysWhyTheProxyRefused(t *testing.T) {
	const reason = "refused by codecell's egress proxy: resolve pypi.org: lookup pypi.org: no such host"
	run := &fakeRunner{result: &sandbox.CommandResult{ExitCode: 1,
		Output:  "ERROR: Could not find a version (from versions: none)\nTunnel connection failed: 403 Forbidden",
		Refused: []string{reason}}}
	m := New(Options{DataDir: t.TempDir(), SystemPython: "/usr/bin/python3", Runner: run})
	own := filepath.Join(m.dir("ns"), Venv)
	if err := m.save(context.Background(), "ns", Config{Type: Venv, Path: own, Python: own + "/bin/python", Managed: true}); err != nil {
		t.Fatal(err)
	}
	out, err := m.Install(context.Background(), "ns", []string{"numpy"}, "")
	if err != nil || len(out) != 1 || out[0].OK {
		t.Fatalf("outcomes %+v, err %v", out, err)
	}
	if !strings.Contains(out[0].Error, reason) {
		t.Errorf("error %q does not give the proxy's reason %q", out[0].Error, reason)
	}
}

// The store is the real one: it is what Options.Store is for.
var _ Store = (*store.Store)(nil)

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fakeVenv makes a directory that passes for a virtual environment.
func fakeVenv(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pyvenv.cfg", "bin/python"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestChoicesPersistInStore: a choice outlives the Manager (the process)
// that made it, per namespace.
func TestChoicesPersistInStore(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	st := openStore(t, data)
	venv := fakeVenv(t)
	opts := Options{DataDir: data, SystemPython: "/usr/bin/python3", Runner: &fakeRunner{}, Store: st, ExternalRoots: []string{venv}}
	c, err := New(opts).Configure(ctx, "a", Venv, venv, "")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Type: Venv, Path: venv, Python: filepath.Join(venv, "bin", "python")}
	if c != want {
		t.Fatalf("configured %+v", c)
	}
	m := New(opts)
	if got, err := m.Get("a"); err != nil || got != want {
		t.Errorf("after a restart: %+v, %v", got, err)
	}
	if got, err := m.Get("b"); err != nil || got != (Config{Type: System, Python: "/usr/bin/python3"}) {
		t.Errorf("namespace b: %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(data, "envs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the choice went to a file too: %v", err)
	}
	// Back to system, and that persists as well.
	if _, err := m.Configure(ctx, "a", System, "", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := New(opts).Get("a"); got.Type != System {
		t.Errorf("after choosing system: %+v", got)
	}
}

// TestLegacyFileMigrates: a choice an earlier codecell kept in
// envs/<ns>.json moves into the store on first read and the file goes; when
// both exist the store wins.
func TestLegacyFileMigrates(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	st := openStore(t, data)
	env := fakeVenv(t)
	opts := Options{DataDir: data, SystemPython: "/usr/bin/python3", Runner: &fakeRunner{}, Store: st, ExternalRoots: []string{env}}
	legacy := Config{Type: Conda, Path: env, Name: "ds", Python: env + "/bin/python"}
	writeLegacy := func(ns string, c Config) string {
		t.Helper()
		b, _ := json.MarshalIndent(c, "", "  ")
		if err := os.MkdirAll(filepath.Join(data, "envs"), 0o711); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(data, "envs", ns+".json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("moved", func(t *testing.T) {
		file := writeLegacy("old", legacy)
		// Many first reads at once agree and migrate once.
		var wg sync.WaitGroup
		got := make([]Config, 8)
		errs := make([]error, 8)
		m := New(opts)
		for i := range got {
			wg.Add(1)
			go func() { defer wg.Done(); got[i], errs[i] = m.Get("old") }()
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil || got[i] != legacy {
				t.Fatalf("Get #%d: %+v, %v", i, got[i], errs[i])
			}
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the file is still there: %v", err)
		}
		raw, ok, err := st.Environment(ctx, "old")
		var stored Config
		if err != nil || !ok || json.Unmarshal(raw, &stored) != nil || stored != legacy {
			t.Errorf("store holds %s (%v, %v)", raw, ok, err)
		}
		if c, err := New(opts).Get("old"); err != nil || c != legacy {
			t.Errorf("after a restart: %+v, %v", c, err)
		}
	})
	t.Run("store wins", func(t *testing.T) {
		if _, err := New(opts).Configure(ctx, "both", System, "", ""); err != nil {
			t.Fatal(err)
		}
		file := writeLegacy("both", legacy)
		if c, err := New(opts).Get("both"); err != nil || c.Type != System {
			t.Errorf("got %+v, %v; want the store's system", c, err)
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stale file is still there: %v", err)
		}
	})
	t.Run("unreadable file", func(t *testing.T) {
		path := filepath.Join(data, "envs", "bad.json")
		if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := New(opts).Get("bad"); err == nil {
			t.Error("a corrupt file was ignored")
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("a file that could not be migrated was removed: %v", err)
		}
	})
	t.Run("no store", func(t *testing.T) {
		file := writeLegacy("kept", legacy)
		m := New(Options{DataDir: data, SystemPython: "/usr/bin/python3", Runner: &fakeRunner{}})
		if c, err := m.Get("kept"); err != nil || c.Type != System {
			t.Errorf("without a store: %+v, %v", c, err)
		}
		if _, err := os.Stat(file); err != nil {
			t.Errorf("without a store the file must stay: %v", err)
		}
		if _, err := m.Configure(ctx, "kept", Conda, "", ""); err == nil {
			t.Error("conda without conda was accepted")
		}
		if err := m.save(ctx, "mem", legacy); err != nil {
			t.Fatal(err)
		}
		if c, _ := m.Get("mem"); c != legacy {
			t.Errorf("in memory: %+v", c)
		}
	})
}

// failingStore fails every call.
type failingStore struct{}

func (failingStore) SetEnvironment(context.Context, string, json.RawMessage) error {
	return errors.New("disk full")
}
func (failingStore) Environment(context.Context, string) (json.RawMessage, bool, error) {
	return nil, false, errors.New("disk full")
}

// TestStoreFailures: a choice that could not be saved is not in force, and
// a choice that cannot be read is an error, not a silent system default.
func TestStoreFailures(t *testing.T) {
	m := New(Options{DataDir: t.TempDir(), SystemPython: "/usr/bin/python3", Runner: &fakeRunner{}, Store: failingStore{}})
	if _, err := m.Configure(context.Background(), "a", System, "", ""); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Configure: %v", err)
	}
	if _, err := m.Get("a"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Get: %v", err)
	}
}

// countingStore counts the reads of a Store.
type countingStore struct {
	Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingStore) Environment(ctx context.Context, ns string) (json.RawMessage, bool, error) {
	c.mu.Lock()
	c.reads[ns]++
	c.mu.Unlock()
	return c.Store.Environment(ctx, ns)
}

// TestGetReadsStoreOnce: every execution calls Get, so only a namespace's
// first Get may reach the database, whether it has a choice or not, and a
// choice made after it is what later Gets return.
func TestGetReadsStoreOnce(t *testing.T) {
	data := t.TempDir()
	st := &countingStore{Store: openStore(t, data), reads: map[string]int{}}
	venv := fakeVenv(t)
	if _, err := New(Options{DataDir: data, Runner: &fakeRunner{}, Store: st, ExternalRoots: []string{venv}}).Configure(context.Background(), "chose", Venv, venv, ""); err != nil {
		t.Fatal(err)
	}
	m := New(Options{DataDir: data, SystemPython: "/usr/bin/python3", Runner: &fakeRunner{}, Store: st, ExternalRoots: []string{venv}})
	var wg sync.WaitGroup
	for range 20 {
		for _, ns := range []string{"chose", "default"} {
			wg.Go(func() {
				if _, err := m.Get(ns); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if st.reads["chose"] != 1 || st.reads["default"] != 1 {
		t.Errorf("store reads %v, want one per namespace", st.reads)
	}
	if _, err := m.Configure(context.Background(), "default", Venv, venv, ""); err != nil {
		t.Fatal(err)
	}
	if c, err := m.Get("default"); err != nil || c.Type != Venv || st.reads["default"] != 1 {
		t.Errorf("after Configure: %+v, %v; %d reads", c, err, st.reads["default"])
	}
}

// TestConfigureConfines: an environment chosen by path never reaches
// another namespace's files, the data dir or an interpreter the caller
// placed (a red team's attack: namespace B pointed configure_environment at
// team-a's managed venv, and at a venv whose python was a shim in its own
// workspace).
func TestConfigureConfines(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	shared := t.TempDir() // the operator's allowed directory
	m := New(Options{DataDir: data, SystemPython: "/usr/bin/python3", Runner: &fakeRunner{}, ExternalRoots: []string{shared, data}})
	mkVenv := func(dir, python string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "pyvenv.cfg"), nil, 0o644)
		if python == "" {
			os.WriteFile(filepath.Join(dir, "bin", "python"), nil, 0o755)
		} else if err := os.Symlink(python, filepath.Join(dir, "bin", "python")); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	teamA := mkVenv(filepath.Join(data, "envs", "team-a", "venv"), "/usr/bin/python3")
	shim := filepath.Join(data, "workspaces", "team-b", "python")
	os.MkdirAll(filepath.Dir(shim), 0o755)
	os.WriteFile(shim, []byte("#!/bin/sh\n"), 0o755)
	good := mkVenv(filepath.Join(shared, "good"), "/usr/bin/python3")
	viaShim := mkVenv(filepath.Join(shared, "shim"), shim)
	linkToA := filepath.Join(shared, "link-to-a")
	os.Symlink(teamA, linkToA)

	for _, tc := range []struct{ name, path, want string }{
		{"another namespace's managed venv", teamA, "not under a directory the operator allows"},
		{"a link to it from an allowed dir", linkToA, "not under a directory the operator allows"},
		{"an interpreter in a workspace", viaShim, "outside the environment"},
		{"a directory nobody allowed", t.TempDir(), "not under a directory the operator allows"},
		{"a missing one", filepath.Join(shared, "nope"), "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := m.Configure(ctx, "team-b", Venv, tc.path, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Configure(%s) = %+v, %v; want an error saying %q", tc.path, c, err, tc.want)
			}
		})
	}
	c, err := m.Configure(ctx, "team-b", Venv, good, "")
	if err != nil || c.Managed {
		t.Fatalf("an allowed environment: %+v, %v", c, err)
	}
	if _, err := m.Install(ctx, "team-b", []string{"x"}, ""); err == nil || !strings.Contains(err.Error(), "shared and read-only") {
		t.Errorf("install into a shared environment: %v", err)
	}
	if _, err := New(Options{DataDir: data, Runner: &fakeRunner{}}).Configure(ctx, "team-b", Venv, good, ""); err == nil || !strings.Contains(err.Error(), "externalEnvironments") {
		t.Errorf("with no allowed directories: %v", err)
	}
	// A choice in the store that breaks the rules (made before them) is
	// refused when read, not run.
	st := openStore(t, t.TempDir())
	raw, _ := json.Marshal(Config{Type: Venv, Path: teamA, Python: teamA + "/bin/python", Managed: true})
	if err := st.SetEnvironment(ctx, "team-b", raw); err != nil {
		t.Fatal(err)
	}
	if c, err := New(Options{DataDir: data, Runner: &fakeRunner{}, Store: st}).Get("team-b"); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("a stored choice of team-a's venv: %+v, %v", c, err)
	}
}

// TestReplicasSeeChoices: two Managers on one store are two replicas; with
// Fresh, a choice one makes reaches the other once its cached read is
// older than Fresh, and not before.
func TestReplicasSeeChoices(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	st := openStore(t, data)
	venv := fakeVenv(t)
	opts := Options{DataDir: data, SystemPython: "/usr/bin/python3", Runner: &fakeRunner{}, Store: st, ExternalRoots: []string{venv},
		Fresh: time.Hour}
	a, b := New(opts), New(opts)
	if got, _ := b.Get("ns"); got.Type != System {
		t.Fatalf("before: %+v", got)
	}
	if _, err := a.Configure(ctx, "ns", Venv, venv, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Get("ns"); got.Type != System {
		t.Errorf("within Fresh, b read the store again: %+v", got)
	}
	b.mu.Lock()
	k := b.known["ns"]
	k.read = time.Now().Add(-2 * time.Hour)
	b.known["ns"] = k
	b.mu.Unlock()
	if got, _ := b.Get("ns"); got.Type != Venv || got.Path != venv {
		t.Errorf("after Fresh, b still has %+v", got)
	}
}
