package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
)

// printer prints a command's answer: v as indented JSON with --json, else
// its text rendering.
func printer(w io.Writer, asJSON bool) func(v any, text string) error {
	return func(v any, text string) error {
		if asJSON {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		_, err := fmt.Fprint(w, text)
		return err
	}
}

// quiet lowers the default log level of a command that prints an answer,
// so that the answer is not buried in info lines.
func (g *globals) quiet() {
	if g.logLevel == "info" {
		g.logLevel = "warn"
	}
}

// dbPath is the database's file in a data dir (README, "State that lasts").
func dbPath(dataDir string) string { return filepath.Join(dataDir, "codecell.db") }
