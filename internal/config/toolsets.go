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

// ParseToolsets resolves a list of toolset names, as given to the
// --toolsets flag after splitting at commas: surrounding spaces and empty
// entries are ignored, "all" stands for every toolset, and duplicates are
// dropped. The result is in the order of AllToolsets and never contains
// "all". An unknown name or an empty list is an error.
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
	if !slices.Contains(AllToolsets, name) {
		return fmt.Errorf("unknown toolset %q (want one of %s, or all)", name, strings.Join(AllToolsets, ", "))
	}
	want[name] = true
	return nil
}

// orderToolsets returns the chosen toolsets in the order of AllToolsets.
func orderToolsets(want map[string]bool) []string {
	out := make([]string, 0, len(want))
	for _, t := range AllToolsets {
		if want[t] {
			out = append(out, t)
		}
	}
	return out
}
