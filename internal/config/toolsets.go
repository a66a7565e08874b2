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

// NoLeanToolset, in a toolsets list, leaves the lean pair out: only the
// toolsets named are listed.
const NoLeanToolset = "-" + LeanToolset

// knownToolsets is every name a toolsets list may hold once "all" is
// expanded, in the order they are kept.
var knownToolsets = append([]string{LeanToolset}, AllToolsets...)

// ParseToolsets resolves a list of toolset names, as given to the
// --toolsets flag after splitting at commas: surrounding spaces and empty
// entries are ignored, "all" stands for every toolset of AllToolsets,
// "default" for the lean surface (LeanToolset), and duplicates are dropped.
// Naming toolsets adds to the lean pair: "default" is in the result unless
// the list names "-default" (NoLeanToolset), or exec and discovery, which
// hold the lean pair, are both in it. The result has "default" first, then
// the order of AllToolsets, and never contains "all" or "-default". An
// unknown name or an empty list is an error.
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
	out := orderToolsets(want)
	if len(out) == 0 {
		return nil, errors.New(`no toolsets given (use "all" for every toolset)`)
	}
	return out, nil
}

// addToolset adds name, or every toolset for "all", to want.
func addToolset(want map[string]bool, name string) error {
	if name == "all" {
		for _, t := range AllToolsets {
			want[t] = true
		}
		return nil
	}
	if name != NoLeanToolset && !slices.Contains(knownToolsets, name) {
		return fmt.Errorf("unknown toolset %q (want one of %s, all, or %s to leave out the lean pair)", name, strings.Join(knownToolsets, ", "), NoLeanToolset)
	}
	want[name] = true
	return nil
}

// orderToolsets returns the chosen toolsets in the order of knownToolsets,
// with the lean pair added unless NoLeanToolset was named (see
// ParseToolsets). It returns nil when none remain.
func orderToolsets(want map[string]bool) []string {
	if want[NoLeanToolset] {
		delete(want, NoLeanToolset)
		delete(want, LeanToolset)
	} else if len(want) > 0 && !(want["exec"] && want["discovery"]) {
		want[LeanToolset] = true
	}
	if len(want) == 0 {
		return nil
	}
	out := make([]string, 0, len(want))
	for _, t := range knownToolsets {
		if want[t] {
			out = append(out, t)
		}
	}
	return out
}
