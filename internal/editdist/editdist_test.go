package editdist

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"regoin", "region", 2}, {"kitten", "sitting", 3}, {"größe", "grosse", 3}} {
		if got := Levenshtein(tc.a, tc.b); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestBounded: a transposition counts once, and a distance past the limit
// is reported as limit+1.
func TestBounded(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"serch", "search", 2, 1},
		{"regoin", "region", 2, 1}, // Levenshtein: 2
		{"memroy", "memori", 2, 2},
		{"kitten", "sitting", 2, 3},
		{"abc", "abcdefg", 2, 3}, // lengths alone put it past the limit
		{"same", "same", 0, 0},
	} {
		if got := Bounded(tc.a, tc.b, tc.limit); got != tc.want {
			t.Errorf("Bounded(%q, %q, %d) = %d, want %d", tc.a, tc.b, tc.limit, got, tc.want)
		}
	}
}
