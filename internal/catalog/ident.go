package catalog

import "strings"

// Ident makes an MCP tool name into a Python identifier, keeping the
// original's case:
//
//   - every character other than an ASCII letter, digit or underscore becomes
//     "_" (Python accepts non-ASCII letters, but NFKC normalization makes such
//     names compare in surprising ways and they are hard to type);
//   - runs of underscores collapse into one, and leading and trailing
//     underscores are dropped (a leading one would mark the function private
//     in Python, and a trailing one is reserved for the keyword rule below);
//   - a name that starts with a digit gets a "_" prefix;
//   - a name equal to a Python keyword, a soft keyword (match, case, type) or
//     the name of a built-in function or type gets a "_" suffix, so that
//     importing the tool never breaks syntax or shadows print, list, open and
//     the like;
//   - a name with nothing left is "_".
//
// So "get-sum" is "get_sum", "getSum" stays "getSum", "2fa.verify" is
// "_2fa_verify" and "import" is "import_". Different names can give the same
// identifier; New resolves such clashes within a server.
func Ident(name string) string {
	var b strings.Builder
	b.Grow(len(name) + 1)
	lastUnderscore := true // drops leading underscores
	for i := 0; i < len(name); i++ {
		c := name[i]
		if isIdentByte(c) && c != '_' {
			if b.Len() == 0 && c >= '0' && c <= '9' {
				b.WriteByte('_')
			}
			b.WriteByte(c)
			lastUnderscore = false
			continue
		}
		// Anything else, including each byte of a multi-byte UTF-8 sequence,
		// is a separator.
		if !lastUnderscore {
			b.WriteByte('_')
			lastUnderscore = true
		}
	}
	s := strings.TrimSuffix(b.String(), "_")
	if s == "" {
		return "_"
	}
	if reserved[s] {
		s += "_"
	}
	return s
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// reserved holds the names Ident escapes: Python 3's keywords and soft
// keywords and the public names of its builtins module, except the exception
// classes (a tool named like one is implausible, and shadowing it is
// harmless next to shadowing print or list).
var reserved = func() map[string]bool {
	m := make(map[string]bool)
	for _, s := range strings.Fields(`
		False None True and as assert async await break class continue def del
		elif else except finally for from global if import in is lambda
		nonlocal not or pass raise return try while with yield
		match case type
		abs aiter all anext any ascii bin bool breakpoint bytearray bytes
		callable chr classmethod compile complex copyright credits delattr
		dict dir divmod enumerate eval exec exit filter float format frozenset
		getattr globals hasattr hash help hex id input int isinstance
		issubclass iter len license list locals map max memoryview min next
		object oct open ord pow print property quit range repr reversed round
		set setattr slice sorted staticmethod str sum super tuple vars zip`) {
		m[s] = true
	}
	return m
}()
