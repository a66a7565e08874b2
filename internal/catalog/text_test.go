package catalog

import (
	"slices"
	"testing"
)

func splitWords(s string) []string {
	var words []string
	scan(s, func(start, end int, _ bool) { words = append(words, s[start:end]) })
	return words
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"getTinyImage", []string{"get", "Tiny", "Image"}},
		{"read_text_file", []string{"read", "text", "file"}},
		{"get-sum", []string{"get", "sum"}},
		{"list-pods", []string{"list", "pods"}},
		{"HTMLParser", []string{"HTML", "Parser"}},
		{"parseHTML", []string{"parse", "HTML"}},
		{"getURLs", []string{"get", "UR", "Ls"}}, // a known limit of case rules
		{"base64Encode", []string{"base", "64", "Encode"}},
		{"S3", []string{"S", "3"}},
		{"v2.1", []string{"v", "2", "1"}},
		{"slack_post_message", []string{"slack", "post", "message"}},
		{"Read File (Deprecated)", []string{"Read", "File", "Deprecated"}},
		{"  --  ", nil},
		{"", nil},
		{"créerFichier", []string{"créer", "Fichier"}},
		{"ユーザー取得", []string{"ユーザー取得"}},
	}
	for _, tt := range tests {
		if got := splitWords(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		// Plurals.
		{"files", "fil"},
		{"file", "fil"},
		{"entities", "entity"},
		{"entity", "entity"},
		{"directories", "directory"},
		{"boxes", "box"},
		{"matches", "match"},
		{"addresses", "address"},
		{"address", "address"},
		{"status", "status"},
		{"analysis", "analysis"},
		{"ids", "id"},
		{"urls", "url"},
		{"bus", "bus"},
		// -ing and -ed.
		{"reading", "read"},
		{"read", "read"},
		{"created", "creat"},
		{"creating", "creat"},
		{"create", "creat"},
		{"creates", "creat"},
		{"running", "run"},
		{"stopped", "stop"},
		{"adding", "add"},
		{"added", "add"},
		{"pulling", "pull"},
		{"listed", "list"},
		{"settings", "set"},
		{"copied", "copy"},
		// Not suffixes.
		{"string", "string"},
		{"thing", "thing"},
		{"need", "need"},
		{"speed", "speed"},
		{"tree", "tree"},
		{"red", "red"},
		// Untouched.
		{"s3", "s3"},
		{"2024", "2024"},
		{"fichiers", "fichier"},
		{"créés", "créés"},
	}
	for _, tt := range tests {
		if got := stem(tt.in); got != tt.want {
			t.Errorf("stem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Read the contents of a file", []string{"read", "content", "fil"}},
		{"getTinyImage", []string{"get", "tiny", "imag", "gettinyimag"}},
		{"Please show me how to list my GitHub repos", []string{"show", "list", "git", "hub", "github", "repo"}},
		{"upload to S3", []string{"upload", "3", "s3"}},
		{"the user's name", []string{"user", "nam"}},
		{"how do I", nil},
	}
	for _, tt := range tests {
		if got := terms(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSynonymsSymmetric(t *testing.T) {
	for a, bs := range synonyms {
		for _, b := range bs {
			if !slices.Contains(synonyms[b], a) {
				t.Errorf("%q has synonym %q, but not the other way round", a, b)
			}
			if a == b {
				t.Errorf("%q is its own synonym", a)
			}
		}
	}
}
