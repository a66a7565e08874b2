package envs

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRequirement(t *testing.T) {
	good := map[string]string{
		"requests":                   "requests",
		"  numpy  ":                  "numpy",
		"demo_pkg==1.0":              "demo_pkg==1.0",
		"Flask[async, dotenv]>=2,<3": "Flask[async,dotenv]>=2,<3",
		"pkg (>=1.0)":                "pkg>=1.0",
		"a.b-c_d ~= 1.4.5":           "a.b-c_d~=1.4.5",
		"x===1.0+local.7":            "x===1.0+local.7",
		"x!=1.*":                     "x!=1.*",
	}
	for in, want := range good {
		r, err := ParseRequirement(in)
		if err != nil || r.String() != want {
			t.Errorf("ParseRequirement(%q) = %q, %v; want %q", in, r.String(), err, want)
		}
	}
	bad := map[string]string{
		"pkg; rm -rf /":                "markers",
		"--index-url=http://evil":      "options",
		"-e git+https://example.com/x": "options",
		"pkg @ file:///etc/passwd":     "direct references",
		"pkg @ https://evil/x.whl":     "direct references",
		strings.Repeat("a", 300):       "longer",
		"caf\xe9":                      "UTF-8",
		"":                             "empty",
		"pkg\n--extra-index-url x":     "control",
		"pkg$(id)":                     "only a name",
		"../../etc/passwd":             "only a name",
		"pkg==1.0 --no-deps":           "version",
		"_private":                     "package name",
		"pkg[bad extra]":               "extra",
		"pkg>=":                        "version",
		"pkg ~ 1":                      "specifier",
		"http://evil/pkg.tar.gz":       "only a name",
	}
	for in, want := range bad {
		_, err := ParseRequirement(in)
		if !errors.Is(err, ErrRequirement) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRequirement(%q) = %v; want an error mentioning %q", in, err, want)
		}
	}
	if got := Normalize("Demo.Pkg__x"); got != "demo-pkg-x" {
		t.Errorf("Normalize = %q", got)
	}
}

func FuzzParseRequirement(f *testing.F) {
	for _, s := range []string{"requests>=2", "pkg; rm -rf /", "-e x", "a[b]==1", "x @ file:///"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRequirement(s)
		if err != nil {
			return
		}
		// Whatever passes can never be read as an option or a path.
		out := r.String()
		if strings.HasPrefix(out, "-") || strings.ContainsAny(out, " /@;\\\n") {
			t.Fatalf("accepted %q as %q", s, out)
		}
	})
}
