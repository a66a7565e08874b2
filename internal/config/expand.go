package config

import (
	"errors"
	"fmt"
	"strings"
)

// expand replaces each ${VAR} in s with env(VAR). "$$" and "$" not followed
// by "{" are copied unchanged, so "$${VAR}" stays as written. A variable that
// is unset or empty, an unterminated "${" and a malformed name are errors;
// the error names every variable missing from s but never a value.
func expand(s string, env func(string) string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var (
		b       strings.Builder
		missing []string
	)
	for i := 0; i < len(s); {
		switch {
		case s[i] != '$':
			b.WriteByte(s[i])
			i++
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteString("$$")
			i += 2
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", errors.New(`unterminated "${" (write $${ for a literal one)`)
			}
			name := s[i+2 : i+2+end]
			if !isVarName(name) {
				return "", fmt.Errorf("%q is not a variable reference: use ${NAME} with letters, digits and _ only", "${"+name+"}")
			}
			v := ""
			if env != nil {
				v = env(name)
			}
			if v == "" {
				missing = append(missing, name)
			}
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	switch len(missing) {
	case 0:
		return b.String(), nil
	case 1:
		return "", fmt.Errorf("variable %s is unset or empty", missing[0])
	default:
		return "", fmt.Errorf("variables %s are unset or empty", strings.Join(missing, ", "))
	}
}

// isVarName reports whether s is a portable environment variable name.
func isVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
