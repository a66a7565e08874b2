package codegen

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalidName is returned, wrapped, by Generate for a server name or a
// tool identifier that cannot name a Python module.
var ErrInvalidName = errors.New("invalid name")

// keywords holds the names a Python parameter or function cannot have:
// Python 3's keywords, and __debug__, which cannot be assigned. Soft
// keywords (match, case, type, _) are ordinary names.
var keywords = func() map[string]bool {
	m := make(map[string]bool)
	for _, s := range strings.Fields(`
		False None True and as assert async await break class continue def del
		elif else except finally for from global if import in is lambda
		nonlocal not or pass raise return try while with yield __debug__`) {
		m[s] = true
	}
	return m
}()

// isIdent reports whether s is an ASCII Python identifier and not a keyword.
// Python accepts non-ASCII identifiers too, but normalizes them (NFKC), so
// two different names can denote the same variable; generated names are
// therefore ASCII only.
func isIdent(s string) bool {
	if s == "" || keywords[s] {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isIdentByte(c) || i == 0 && c >= '0' && c <= '9' {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// sanitize makes any string into a Python identifier: each run of
// characters other than ASCII letters, digits and "_" becomes one "_", a
// leading digit gets a "_" prefix and a keyword a "_" suffix, so "my-arg" is
// "my_arg", "2x" is "_2x" and "from" is "from_". A string with no letter or
// digit is "arg".
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 1)
	sep := false // the last byte written is a separator's "_"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isIdentByte(c) {
			if b.Len() == 0 && c >= '0' && c <= '9' {
				b.WriteByte('_')
			}
			b.WriteByte(c)
			sep = false
			continue
		}
		if !sep {
			b.WriteByte('_')
			sep = true
		}
	}
	out := b.String()
	if strings.Trim(out, "_") == "" {
		return "arg"
	}
	if keywords[out] {
		out += "_"
	}
	return out
}

// uniqueNames gives each of names a distinct Python identifier that is not
// in taken: a name that already is a free identifier keeps it, so adding a
// parameter never renames one that needed no renaming; the others are
// sanitized, in order, and a clash gets the first free suffix of "_2",
// "_3", ....
func uniqueNames(names []string, taken map[string]bool) []string {
	used := make(map[string]bool, len(taken)+len(names))
	for n := range taken {
		used[n] = true
	}
	out := make([]string, len(names))
	for i, n := range names {
		if isIdent(n) && !used[n] {
			out[i] = n
			used[n] = true
		}
	}
	for i, n := range names {
		if out[i] != "" {
			continue
		}
		base := sanitize(n)
		name := base
		for k := 2; used[name]; k++ {
			name = base + "_" + strconv.Itoa(k)
		}
		out[i] = name
		used[name] = true
	}
	return out
}

// freeName returns base, or base with "_" appended as often as needed to
// differ from every name in taken.
func freeName(base string, taken ...string) string {
	for {
		clash := false
		for _, t := range taken {
			if t == base {
				clash = true
				break
			}
		}
		if !clash {
			return base
		}
		base += "_"
	}
}

// toolIdent returns the identifier a tool's function gets: its Ident when
// that is usable, else a sanitized form of it. Generate rejects an unusable
// Ident; Signature and Source, which cannot fail, make do.
func toolIdent(ident string) string {
	if validToolIdent(ident) {
		return ident
	}
	s := strings.TrimLeft(sanitize(ident), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "tool_" + s
	}
	return strings.TrimSuffix(s, "_") + "_"
}

// validToolIdent reports whether ident can name a tool's module and
// function. Names beginning with "__" are refused: they would collide with
// the package machinery (__init__, __main__, __all__, __getattr__).
func validToolIdent(ident string) bool {
	return isIdent(ident) && !strings.HasPrefix(ident, "__")
}

// checkServerName reports why name cannot name a server's package, or nil.
// Besides being an identifier, it must not start with "_" (the servers
// package keeps its helpers under such names) and must not be one of the
// names the servers package exports itself.
func checkServerName(name string) error {
	switch {
	case !isIdent(name):
		return errors.New("not a Python identifier")
	case strings.HasPrefix(name, "_"):
		return errors.New("names starting with _ are reserved")
	case name == "ToolError" || name == "Image" || name == "ApprovalDenied":
		return errors.New("the servers package exports that name itself")
	}
	return nil
}
