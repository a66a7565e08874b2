package config

import (
	"errors"
	"path/filepath"
)

// DataDir resolves the data directory: the --data-dir flag, else
// $XDG_DATA_HOME/codecell, else $HOME/.local/share/codecell. The result is
// absolute.
func DataDir(flag string, env func(string) string) (string, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	dir := flag
	if dir == "" {
		if x := env("XDG_DATA_HOME"); filepath.IsAbs(x) {
			dir = filepath.Join(x, "codecell")
		} else if home := env("HOME"); home != "" {
			dir = filepath.Join(home, ".local", "share", "codecell")
		} else {
			return "", errors.New("no data dir: set --data-dir, XDG_DATA_HOME or HOME")
		}
	}
	return filepath.Abs(dir)
}
