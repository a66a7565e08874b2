package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/codecell/codecell/internal/envs"
)

// The answer budget for the tools whose answer is a list (the execution's
// own is boundAnswer's, one large text's fitText): their text repeats the
// structured content, so each item costs about twice its JSON.

// fitPackages keeps the package states that fit in room, in order, and
// counts the rest in Omitted.
func fitPackages(out *CheckPackagesOutput, room int) {
	used := 64
	for i, p := range out.Packages {
		b, _ := json.Marshal(p)
		if used += 2*len(b) + 16; used > room {
			out.Omitted = len(out.Packages) - i
			out.Packages = out.Packages[:i]
			return
		}
	}
}

// fitOutcomes cuts each failed install's error and installer output so
// that all of them together fit in room (the installer's output is what
// grows: a failed build prints pages), head and tail kept.
func (s *Server) fitOutcomes(results []envs.Outcome, room int) {
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	if failed == 0 {
		return
	}
	// What each outcome costs besides its error and output.
	fixed := 256 + 128*len(results)
	for _, r := range results {
		fixed += 2 * len(r.Package)
	}
	share := max((room-fixed)/failed, 256)
	const where = "install fewer packages at once to see more of each failure"
	for i := range results {
		if results[i].OK {
			continue
		}
		results[i].Error = s.fitText(results[i].Error, share/4, where)
		results[i].Output = s.fitText(results[i].Output, share-share/4, where)
	}
}

// upstreamErrorBytes bounds an upstream's error in the stats: the list of
// upstreams is the config's, but an error is what the upstream said.
const upstreamErrorBytes = 300

// fitStats bounds what the stats hold that grows with what code did: the
// error types (class names the code chose, as many as it made) keep the
// most frequent that fit, the rest summed under "(N others)"; upstream
// errors are cut. The answer is measured as it goes out (its JSON and
// renderStats' text), and cut further while it does not fit.
func fitStats(out *ExecutionStatsOutput, room int) {
	for i := range out.Upstreams {
		if e := out.Upstreams[i].Error; len(e) > upstreamErrorBytes {
			out.Upstreams[i].Error = e[:cutAtRune(e, upstreamErrorBytes)] + "..."
		}
	}
	all := out.ErrorsByType
	types := make([]string, 0, len(all))
	for t := range all {
		types = append(types, t)
	}
	slices.SortFunc(types, func(a, b string) int {
		if d := all[b] - all[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	cost := func() int {
		b, _ := json.Marshal(out)
		return len(b) + len(renderStats(*out))
	}
	// Keep the n most frequent: n halves until the answer fits, then
	// grows back by halves of what is left while it still fits.
	keep := func(n int) {
		kept := make(map[string]int, n+1)
		others := 0
		for i, t := range types {
			if i < n {
				kept[t] = all[t]
			} else {
				others += all[t]
			}
		}
		if n < len(types) {
			kept[fmt.Sprintf("(%d others)", len(types)-n)] = others
		}
		out.ErrorsByType = kept
	}
	if cost() <= room {
		return
	}
	lo, hi := 0, len(types) // lo fits (none kept fits: the rest is bounded), hi does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if keep(mid); cost() <= room {
			lo = mid
		} else {
			hi = mid
		}
	}
	keep(lo)
}

// cutAtRune is the largest index at most n that does not split a UTF-8
// sequence of s.
func cutAtRune(s string, n int) int {
	for n > 0 && n < len(s) && s[n]&0xc0 == 0x80 {
		n--
	}
	return n
}
