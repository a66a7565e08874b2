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

// fitOutcomes cuts each failed install's error and installer output (a
// failed build prints pages), head and tail kept, to the largest share
// each for which the answer (the outcomes' JSON and installText) fits in
// room; a failure whose share would not hold a cut's note says only that
// it is past the budget.
func (s *Server) fitOutcomes(results []envs.Outcome, room int) {
	cost := func(rs []envs.Outcome) int {
		b, _ := json.Marshal(rs)
		return len(b) + len(installText(rs))
	}
	if cost(results) <= room {
		return
	}
	const where = "install fewer packages at once to see more of each failure"
	orig := slices.Clone(results)
	apply := func(share int) {
		for i, r := range orig {
			switch {
			case r.OK:
			case share < minFailureShare:
				results[i].Error, results[i].Output = "not shown: past the answer budget; "+where, ""
			default:
				results[i].Error = s.fitText(r.Error, share/4, where)
				results[i].Output = s.fitText(r.Output, share-share/4, where)
			}
		}
	}
	lo, hi := 0, room // lo fits (no detail at all), hi does not
	for hi-lo > 64 {
		mid := (lo + hi) / 2
		if apply(mid); cost(results) <= room {
			lo = mid
		} else {
			hi = mid
		}
	}
	apply(lo)
}

// minFailureShare is the least room a failed install's error and output
// get: below it the cut notes alone would fill it.
const minFailureShare = 1024

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
