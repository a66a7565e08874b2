package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildCommit(t *testing.T) {
	vcs := func(kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	for _, tc := range []struct {
		name, stamped string
		info          *debug.BuildInfo
		want          string
	}{
		{"stamped by make build", "0123abc+dirty", vcs("vcs.revision", "ffff"), "0123abc+dirty"},
		{"go build in a clone", "", vcs("vcs", "git", "vcs.revision", "89728d8", "vcs.modified", "false"), "89728d8"},
		{"uncommitted changes", "", vcs("vcs.revision", "89728d8", "vcs.modified", "true"), "89728d8+dirty"},
		{"no VCS stamp", "", vcs("-buildmode", "exe"), "unknown (built without VCS information"},
		{"no build info", "", nil, "unknown ("},
	} {
		if got := buildCommit(tc.stamped, tc.info); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionStamped: the binary built with make build's -ldflags says its
// commit.
func TestVersionStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "codecell")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v9.9.9 -X main.commit=0123456789abcdef", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "codecell v9.9.9\ncommit 0123456789abcdef\ngo") {
		t.Fatalf("version: %v\n%s", err, out)
	}
}

// TestUserDocsStandAlone: the help and the repository's documents cite
// nothing a clone lacks (the project's own spec lives outside the repo).
func TestUserDocsStandAlone(t *testing.T) {
	var b strings.Builder
	usage(&b)
	if strings.Contains(b.String(), "SPEC") {
		t.Errorf("the help cites the spec:\n%s", b.String())
	}
	for _, name := range []string{"../../README.md", "../../BENCHMARKS.md", "../../docs/config.md", "../../docs/tools.md"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"../shared", "SPEC"} {
			if strings.Contains(string(data), bad) {
				t.Errorf("%s mentions %q", name, bad)
			}
		}
	}
}
