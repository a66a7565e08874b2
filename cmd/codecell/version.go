package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are set at build time by make build, with -ldflags
// "-X main.version=... -X main.commit=...". Without commit, the VCS stamp
// that go build writes in a git checkout is read instead; go build writes
// none in a git worktree, with -buildvcs=false, or outside a checkout.
var (
	version = "dev"
	commit  = ""
)

func runVersion(_ context.Context, g *globals, args []string) error {
	fs := g.flags()
	if err := fs.Parse(args); err != nil {
		return err
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintf(g.stdout, "codecell %s\ncommit %s\n%s %s/%s\n", version, buildCommit(commit, info), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// buildCommit is the commit the binary was built from: stamped, else from
// info's VCS settings (with +dirty for uncommitted changes), else a sentence
// saying how to get one.
func buildCommit(stamped string, info *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	rev, modified := "", false
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	switch {
	case rev == "":
		return "unknown (built without VCS information: use make build, or go build in a git clone)"
	case modified:
		return rev + "+dirty"
	}
	return rev
}
