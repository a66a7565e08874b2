package server

import (
	"regexp"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/gate"
)

// straddlers are values a cut must not leave part of. The tests below run
// with the gate off, so that no detector helps: the cut alone must keep
// them out, as it must for a value a detector does not know.
var straddlers = []string{"dave.trunc@example.org", "4111111111111111", "+1-555-123-4567"}

// cutNotes matches the notes that mark a cut, whose numbers could look
// like a part of a value.
var cutNotes = regexp.MustCompile(`\[codecell:[^\]]*\]|\[\.\.\. [^\]]*\]|\[bytes [^\]]*\]`)

// partOf reports whether kept holds the value v or a part of it (its
// first or last three characters), the notes of cuts aside.
func partOf(kept, v string) bool {
	kept = cutNotes.ReplaceAllString(kept, "")
	return strings.Contains(kept, v[:3]) || strings.Contains(kept, v[len(v)-3:])
}

// straddle is text in which v crosses byte at, k bytes of it before; the
// rest holds no character of a value but x and y.
func straddle(at, k int, v string, after int) string {
	return strings.Repeat("x ", at)[:at-k] + v + " " + strings.Repeat("y ", after)
}

// TestAnswerCutLeavesNoPartOfAValue (issue #28, finding 6): the answer
// budget's cut, head and tail, drops the run of value characters it would
// split even where no detector finds the value; before, with the gate off,
// it kept dave.trunc@example.o.
func TestAnswerCutLeavesNoPartOfAValue(t *testing.T) {
	s := &Server{gate: offGate(t)} // the gate off: no detector
	for _, v := range straddlers {
		for k := 1; k < len(v); k++ {
			// keep 1500 at weight 1: the head ends at byte 1000, the tail
			// starts 500 bytes from the end.
			head := straddle(1000, k, v, 1000)
			tail := strings.Repeat("x ", 1500) + v + strings.Repeat(" y", 500)[:500-(len(v)-k)]
			for _, text := range []string{head, tail} {
				got := s.cut(&answerPart{text: text, weight: 1, cost: jsonLen(text), keep: 1500}, "where")
				if partOf(got, v) {
					t.Errorf("cut %d into %q keeps part of it", k, v)
				}
			}
		}
	}
}

// TestProgressLineLeavesNoPartOfAValue: a progress line cut to its length
// drops the run it would split.
func TestProgressLineLeavesNoPartOfAValue(t *testing.T) {
	p := &progress{s: &Server{gate: offGate(t)}, whole: true}
	for _, v := range straddlers {
		for k := 1; k < len(v); k++ {
			p.tail = []byte(straddle(progressLine, k, v, 10) + "\n")
			lines := p.lines()
			if len(lines) != 1 || partOf(lines[0], v) || !strings.HasSuffix(lines[0], "…") {
				t.Errorf("cut %d into %q: %q", k, v, lines)
			}
		}
	}
}

// TestPageLeavesNoPartOfAValue: a page of read_workspace_file neither ends
// nor starts inside a value, where no detector finds it; before, with the
// gate off, a page ended on 4111111 and the next began with 111111111.
func TestPageLeavesNoPartOfAValue(t *testing.T) {
	_, cs := newTestServer(t, func(o *Options) { o.Config.PII.Mode = "off" })
	for _, v := range straddlers {
		for k := 1; k < len(v); k++ {
			mustCall(t, cs, "write_workspace_file", map[string]any{"path": "f.txt", "content": straddle(1000, k, v, 1000)}, nil)
			var r ReadWorkspaceFileOutput
			mustCall(t, cs, "read_workspace_file", map[string]any{"path": "f.txt", "limit": 1000}, &r)
			if partOf(r.Content, v) || r.NextOffset != int64(len(r.Content)) {
				t.Errorf("page ending %d into %q: ends %q, next at %d", k, v, r.Content[max(0, len(r.Content)-30):], r.NextOffset)
			}
			// The next page takes the value whole.
			mustCall(t, cs, "read_workspace_file", map[string]any{"path": "f.txt", "offset": r.NextOffset, "limit": 1000}, &r)
			if !strings.Contains(r.Content, v) {
				t.Errorf("the page after does not hold %q whole: %q", v, r.Content[:min(60, len(r.Content))])
			}
			// A page asked to start inside it skips it.
			mustCall(t, cs, "read_workspace_file", map[string]any{"path": "f.txt", "offset": 1000, "limit": 1000}, &r)
			if partOf(r.Content, v) {
				t.Errorf("page starting %d into %q: starts %q", k, v, r.Content[:min(30, len(r.Content))])
			}
		}
	}
}

// TestExcerptLeavesNoPartOfAValue: the execution log's excerpts, and the
// paths a quota's message names, are cut where no value is split.
func TestExcerptLeavesNoPartOfAValue(t *testing.T) {
	s := &Server{gate: offGate(t)}
	for _, v := range straddlers {
		for k := 1; k < len(v); k++ {
			if got := s.excerpt(straddle(1000, k, v, 100), 1000); partOf(got, v) || !strings.Contains(got, "more bytes]") {
				t.Errorf("excerpt cut %d into %q keeps part of it", k, v)
			}
			// listSome keeps 60 bytes of a long path's head and of its tail.
			head := strings.Repeat("x/", 30)[:60-k] + v + strings.Repeat("/y", 100)
			tail := strings.Repeat("x/", 100) + v + strings.Repeat("/y", 30)[:60-(len(v)-k)]
			for _, p := range []string{head, tail} {
				if got := listSome([]string{p}); partOf(got, v) {
					t.Errorf("listSome cut %d into %q: %q", k, v, got)
				}
			}
		}
	}
}

// offGate is a gate made with pii.mode "off": it tokenizes nothing, and
// cuts at characters only.
func offGate(t testing.TB) *gate.Gate {
	t.Helper()
	g, err := gate.New(config.PII{Mode: "off"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
