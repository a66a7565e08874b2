package textcut

import (
	"strings"
	"testing"
)

// values stands in for the detector: it finds "4111 1111 1111 1111", a
// card written with spaces, which the run rule alone would split.
func values(text string, limit int) int {
	const card = "4111 1111 1111 1111"
	for off := 0; ; {
		i := strings.Index(text[off:], card)
		if i < 0 {
			return limit
		}
		s := off + i
		if s < limit && limit < s+len(card) {
			return s
		}
		off = s + 1
	}
}

func TestCut(t *testing.T) {
	long := strings.Repeat("x", 1000)
	tests := []struct {
		name  string
		text  string
		limit int
		want  string // what is kept
	}{
		{"email", "mail dave.trunc@example.org now", 20, "mail "},
		{"card", "card 4111111111111111 ok", 20, "card "},
		{"phone", "call +15551234567 now", 12, "call "},
		{"at a space", "one two three", 7, "one two"},
		{"before a space", "one two three", 8, "one two "},
		{"no cut", "short", 10, "short"},
		{"multibyte", "é東 ab東cd", 7, "é東 "},
		{"one long run", long, 900, long[:900-Bound]},
		{"card with spaces", "card 4111 1111 1111 1111 end", 22, "card "},
		{"run then card", "x 4111 1111 1111 1111abc end", 23, "x "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.text[:Cut(tt.text, tt.limit, values)]; got != tt.want {
				t.Errorf("Cut(%q, %d) keeps %q, want %q", tt.text, tt.limit, got, tt.want)
			}
		})
	}
}

func TestResume(t *testing.T) {
	long := strings.Repeat("x", 1000)
	tests := []struct {
		name string
		text string
		i    int
		want string // what is kept after the cut
	}{
		{"email", "mail dave.trunc@example.org now", 15, " now"},
		{"card", "card 4111111111111111 ok", 10, " ok"},
		{"at a space", "one two three", 7, " three"},
		{"at a run's start", "one two three", 8, "three"},
		{"one long run", long, 100, long[100+Bound:]},
		{"card with spaces kept whole", "card 4111 1111 1111 1111 end", 12, "4111 1111 1111 1111 end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.text[Resume(tt.text, tt.i, values):]; got != tt.want {
				t.Errorf("Resume(%q, %d) keeps %q, want %q", tt.text, tt.i, got, tt.want)
			}
		})
	}
}

// TestNoPartOfAValue cuts around values at every place and finds no part
// of one on either side.
func TestNoPartOfAValue(t *testing.T) {
	for _, v := range []string{"dave.trunc@example.org", "4111111111111111", "+1-555-123-4567"} {
		text := "before it, " + v + " and after it"
		start := strings.Index(text, v)
		for i := start + 1; i < start+len(v); i++ {
			head := text[:Cut(text, i, nil)]
			tail := text[Resume(text, i, nil):]
			for _, kept := range []string{head, tail} {
				if strings.Contains(kept, v[:3]) || strings.Contains(kept, v[len(v)-3:]) {
					t.Errorf("cut at %d of %q keeps %q", i, text, kept)
				}
			}
		}
	}
}
