package envs

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/sandbox"
)

// fakeRunner records commands instead of running them.
type fakeRunner struct{ ran []sandbox.Command }

func (f *fakeRunner) Run(_ context.Context, c sandbox.Command) (*sandbox.CommandResult, error) {
	f.ran = append(f.ran, c)
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
		network   bool
		readOnly  []string
		writeable []string
	}{
		{"wheelhouse", Options{Wheelhouse: "/wheels"}, "", []string{"--no-index", "--find-links", "/wheels"}, false, []string{"/wheels"}, []string{venv.Path}},
		{"configured index", Options{IndexURL: "https://pkgs.example/simple"}, "", []string{"--index-url", "https://pkgs.example/simple"}, true, nil, []string{venv.Path}},
		{"the call's index wins", Options{Wheelhouse: "/wheels"}, "https://other.example/simple", []string{"--index-url", "https://other.example/simple"}, true, nil, []string{venv.Path}},
		{"default index", Options{}, "", nil, true, nil, []string{venv.Path}},
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
			if c.Network != tt.network || !slices.Equal(c.ReadOnly, tt.readOnly) || !slices.Equal(c.Writable, tt.writeable) {
				t.Errorf("network %v ro %v rw %v", c.Network, c.ReadOnly, c.Writable)
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
	if err := m.save("ns", Config{Type: Venv, Path: "/v", Python: "/v/bin/python"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"ftp://x", "http://", "https://a b", "file:///etc"} {
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
