package envs

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxRequirement is the longest requirement accepted.
const MaxRequirement = 200

// ErrRequirement reports a requirement that is not accepted.
var ErrRequirement = errors.New("invalid requirement")

// Requirement is a validated requirement.
type Requirement struct {
	Name    string   // as written
	Extras  []string // [a, b]
	Version string   // the specifier set, e.g. ">=1.0,<2", "" for any
}

// String is the canonical text passed to the installer.
func (r Requirement) String() string {
	s := r.Name
	if len(r.Extras) > 0 {
		s += "[" + strings.Join(r.Extras, ",") + "]"
	}
	return s + r.Version
}

// NormalizedName is the PEP 503 normalized name.
func (r Requirement) NormalizedName() string { return Normalize(r.Name) }

var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.*+!_-]*$`)
	sepRE     = regexp.MustCompile(`[-_.]+`)
)

var operators = []string{"===", "~=", "==", "!=", "<=", ">=", "<", ">"}

// Normalize is PEP 503 name normalization.
func Normalize(name string) string { return strings.ToLower(sepRE.ReplaceAllString(name, "-")) }

// ParseRequirement validates one requirement.
func ParseRequirement(s string) (Requirement, error) {
	fail := func(format string, args ...any) (Requirement, error) {
		return Requirement{}, fmt.Errorf("%w %q: %s", ErrRequirement, truncate(s), fmt.Sprintf(format, args...))
	}
	switch {
	case !utf8.ValidString(s):
		return Requirement{}, fmt.Errorf("%w: not valid UTF-8", ErrRequirement)
	case len(s) > MaxRequirement:
		return fail("longer than %d bytes", MaxRequirement)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fail("control characters are not allowed")
		}
	}
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return fail("empty")
	case strings.HasPrefix(t, "-"):
		return fail("installer options are not allowed, only package requirements")
	case strings.Contains(t, "@"):
		return fail("direct references (name @ url) are not allowed: packages come from the index or the wheelhouse")
	case strings.Contains(t, ";"):
		return fail("environment markers are not supported")
	case strings.ContainsAny(t, "/\\:$`|&'\"#"):
		return fail("only a name, [extras] and version specifiers are allowed")
	}
	// The name runs to the first '[', operator character or space.
	end := strings.IndexAny(t, "[<>=!~ ,(")
	if end < 0 {
		end = len(t)
	}
	r := Requirement{Name: t[:end]}
	if !nameRE.MatchString(r.Name) {
		return fail("%q is not a valid package name", r.Name)
	}
	rest := strings.TrimSpace(t[end:])
	if strings.HasPrefix(rest, "[") {
		close := strings.IndexByte(rest, ']')
		if close < 0 {
			return fail("unclosed [extras]")
		}
		for _, e := range strings.Split(rest[1:close], ",") {
			e = strings.TrimSpace(e)
			if !nameRE.MatchString(e) {
				return fail("%q is not a valid extra", e)
			}
			r.Extras = append(r.Extras, e)
		}
		rest = strings.TrimSpace(rest[close+1:])
	}
	if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		rest = strings.TrimSpace(rest[1 : len(rest)-1])
	}
	if rest == "" {
		return r, nil
	}
	var specs []string
	for _, clause := range strings.Split(rest, ",") {
		clause = strings.TrimSpace(clause)
		op := ""
		for _, o := range operators {
			if strings.HasPrefix(clause, o) {
				op = o
				break
			}
		}
		if op == "" {
			return fail("%q is not a version specifier (==, !=, <=, >=, <, >, ~=, ===)", clause)
		}
		v := strings.TrimSpace(clause[len(op):])
		if !versionRE.MatchString(v) {
			return fail("%q is not a version", v)
		}
		specs = append(specs, op+v)
	}
	r.Version = strings.Join(specs, ",")
	return r, nil
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
