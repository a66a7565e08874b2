package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// AllToolsets lists every toolset in the order tools are listed. "all" in
// the config or the --toolsets flag stands for all of them.
var AllToolsets = []string{"exec", "discovery", "workspace", "skills", "env", "privacy", "analysis", "stats"}

// LeanToolset is the toolset of the lean code-mode surface: execute_code
// and search_tools, the first tools of exec and discovery. Every tool
// definition a host lists costs tokens in every conversation, so this is
// what is listed by default; everything else is reachable from code as the
// codecell Python package, and stays listable by naming its toolset.
const LeanToolset = "default"

// DefaultToolsets is the toolsets of a config that names none.
var DefaultToolsets = []string{LeanToolset}

// knownToolsets is every name a toolsets list may hold once "all" is
// expanded, in the order they are kept.
var knownToolsets = append([]string{LeanToolset}, AllToolsets...)

// ParseToolsets resolves a list of toolset names, as given to the
// --toolsets flag after splitting at commas: surrounding spaces and empty
// entries are ignored, "all" stands for every toolset of AllToolsets,
// "default" for the lean surface (LeanToolset), and duplicates are dropped.
// The result has "default" first, then the order of AllToolsets, and never
// contains "all". An unknown name or an empty list is an error.
func ParseToolsets(list []string) ([]string, error) {
	want := map[string]bool{}
	var errs []error
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if err := addToolset(want, s); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(want) == 0 {
		return nil, errors.New(`no toolsets given (use "all" for every toolset)`)
	}
	return orderToolsets(want), nil
}

// addToolset adds name, or every toolset for "all", to want.
func addToolset(want map[string]bool, name string) error {
	if name == "all" {
		for _, t := range AllToolsets {
			want[t] = true
		}
		return nil
	}
	if !slices.Contains(knownToolsets, name) {
		return fmt.Errorf("unknown toolset %q (want one of %s, or all)", name, strings.Join(knownToolsets, ", "))
	}
	want[name] = true
	return nil
}

// orderToolsets returns the chosen toolsets in the order of knownToolsets.
func orderToolsets(want map[string]bool) []string {
	out := make([]string, 0, len(want))
	for _, t := range knownToolsets {
		if want[t] {
			out = append(out, t)
		}
	}
	return out
}
