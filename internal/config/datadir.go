package config

import (
	"errors"
	"path/filepath"
)

// DataDir resolves the data directory: the --data-dir flag, else
// $XDG_DATA_HOME/codecell, else $HOME/.local/share/codecell, except for root,
// whose default is /var/lib/codecell: a root-run sandbox runs as nobody, who
// must be able to reach the workspaces, and /root is private. The result is
// absolute.
func DataDir(flag string, env func(string) string, root bool) (string, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	dir := flag
	if dir == "" {
		if x := env("XDG_DATA_HOME"); filepath.IsAbs(x) {
			dir = filepath.Join(x, "codecell")
		} else if root {
			dir = "/var/lib/codecell"
		} else if home := env("HOME"); home != "" {
			dir = filepath.Join(home, ".local", "share", "codecell")
		} else {
			return "", errors.New("no data dir: set --data-dir, XDG_DATA_HOME or HOME")
		}
	}
	return filepath.Abs(dir)
}

// BaseEnv is the environment a stdio upstream server starts from: PATH and
// HOME from codecell's own environment and nothing else, so codecell's
// secrets never reach a server that was not given them.
func BaseEnv(env func(string) string) []string {
	if env == nil {
		env = func(string) string { return "" }
	}
	path := env("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	base := []string{"PATH=" + path}
	if home := env("HOME"); home != "" {
		base = append(base, "HOME="+home)
	}
	return base
}

// DefaultGCPercent is codecell's garbage-collection target when GOGC is not
// set. Its live heap is small (a few MB), so Go's default of 100 collects
// after every few MB allocated; tool calls allocate a little each, and at
// thousands a second that halved their rate. 400 keeps the idle server well
// under its 40 MB budget.
const DefaultGCPercent = 400

// GCPercent is the GC target to set: DefaultGCPercent unless the user chose
// one with GOGC, which the runtime already applied (then ok is false).
func GCPercent(env func(string) string) (percent int, ok bool) {
	if env != nil && env("GOGC") != "" {
		return 0, false
	}
	return DefaultGCPercent, true
}
