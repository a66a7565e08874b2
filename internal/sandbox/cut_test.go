package sandbox

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// straddlers are values a cut must not leave part of, written as code
// prints them.
var straddlers = []string{"dave.trunc@example.org", "4111111111111111", "+1-555-123-4567"}

// cutNotes matches the notes that mark a cut, whose numbers could look
// like a part of a value.
var cutNotes = regexp.MustCompile(`\[codecell:[^\]]*\]|\.\.\. \[[^\]]*\]`)

// partOf reports whether kept holds the value v or a part of it (its
// first or last three characters), the notes of cuts aside.
func partOf(kept, v string) bool {
	kept = cutNotes.ReplaceAllString(kept, "")
	return strings.Contains(kept, v[:3]) || strings.Contains(kept, v[len(v)-3:])
}

// eachStraddle calls f with text in which value v crosses byte limit, for
// every place of the cut inside v; filler holds no character of a value.
func eachStraddle(t *testing.T, limit int, f func(text, v string, at int)) {
	t.Helper()
	for _, v := range straddlers {
		for k := 1; k < len(v); k++ {
			text := strings.Repeat("x ", limit)[:limit-k] + v + " " + strings.Repeat("y ", 600)
			f(text, v, k)
		}
	}
}

// noDetector is a Request.Cut that finds no value, as a detector does not
// know one it has never seen (or one it cannot see once cut).
func noDetector(text string, limit int) int { return min(limit, len(text)) }

// TestCutsLeaveNoPartOfAValue (issue #28, finding 6): a cut at the output
// limit, of a stream, a result's repr or an error's message or traceback,
// drops the run of value characters it would split, whether or not a
// detector knows the value: before, an address cut mid-domain
// (dave.trunc@example.o) or 15 of a card's 16 digits were kept, and an
// error was not cut at all.
func TestCutsLeaveNoPartOfAValue(t *testing.T) {
	const limit = 1000
	for _, cut := range []func(string, int) int{nil, noDetector} {
		eachStraddle(t, limit, func(text, v string, k int) {
			// A stream keeps its head and its tail, limit/2 each: the head's
			// cut and the tail's are each across the value.
			c := newCapture(2*limit, cut)
			c.add([]byte(text))
			if got := c.text(); partOf(got, v) || !strings.Contains(got, "output truncated") {
				t.Errorf("stream's head cut %d into %q keeps %q", k, v, got[max(0, len(got)-120):])
			}
			tailed := strings.Repeat("y ", 20000) + v + strings.Repeat(" x", limit)[:limit-(len(v)-k)]
			c = newCapture(2*limit, cut)
			c.add([]byte(tailed))
			if got := c.text(); partOf(got, v) || !strings.Contains(got, "output truncated") {
				t.Errorf("stream's tail cut %d into %q keeps %q", k, v, got[:min(len(got), 120)])
			}
			if got := capResult(text, limit, cut).(string); partOf(got, v) || !strings.Contains(got, "result cut") {
				t.Errorf("result cut %d into %q keeps %q", k, v, got[max(0, len(got)-120):])
			}
			e := capError(&ExecError{Type: "ValueError", Message: text, Traceback: "Traceback:\n" + text}, limit, cut)
			for _, got := range []string{e.Message, e.Traceback} {
				if partOf(got, v) || len(got) > limit+resultSlack || !strings.Contains(got, "cut at the output limit") {
					t.Errorf("error cut %d into %q keeps %d bytes: %q", k, v, len(got), got[max(0, len(got)-120):])
				}
			}
		})
	}
	// The runner's own notes too.
	text := strings.Repeat("x ", 100)[:200-5] + "dave.trunc@example.org"
	if got := clip(text, 200); partOf(got, "dave.trunc@example.org") || !strings.HasSuffix(got, "…") {
		t.Errorf("clip keeps %q", got)
	}
}

// TestErrorCappedByHost: an error past the output limit, a message as
// long as memory allows or a frame the code wrote itself, is held to the
// limit like a result, its cut marked; one within it is left alone.
func TestErrorCappedByHost(t *testing.T) {
	e := &ExecError{Type: strings.Repeat("T", 5000), Message: strings.Repeat("E ", 450_000), Traceback: strings.Repeat("line\n", 300_000)}
	got := capError(e, 1<<10, nil)
	if len(got.Message) > 1<<10+resultSlack || len(got.Traceback) > 1<<10+resultSlack || len(got.Type) > maxErrorType+3 {
		t.Errorf("capped to %d, %d and %d bytes", len(got.Message), len(got.Traceback), len(got.Type))
	}
	if !strings.Contains(got.Message, fmt.Sprintf("%d more bytes dropped", len(e.Message)-1024)) {
		t.Errorf("message %q", got.Message[len(got.Message)-100:])
	}
	small := &ExecError{Type: "ValueError", Message: "bad", Traceback: "tb"}
	if capError(small, 1<<10, nil) != small {
		t.Error("an error within the limit was copied")
	}
}
