package pii

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Vault issues tokens for values and resolves them back. Token must return
// the same token for the same kind and value every time; Value reports
// whether the token was issued by this vault.
type Vault interface {
	Token(kind, value string) (string, error)
	Value(token string) (string, bool, error)
}

// tokenRE matches token-shaped text: "[" KIND "_" N "]".
var tokenRE = regexp.MustCompile(`\[[A-Z][A-Z0-9]*(?:_[A-Z][A-Z0-9]*)*_[1-9][0-9]*\]`)

// MemoryVault is a Vault held in memory, numbering tokens per kind in order
// of first appearance ([EMAIL_1], [EMAIL_2], [PHONE_1], ...). It is safe
// for concurrent use; mu guards all fields.
type MemoryVault struct {
	mu      sync.Mutex
	tokens  map[string]string // kind + "\x00" + value -> token
	values  map[string]string // token -> value
	counter map[string]int    // kind -> tokens issued
}

// NewMemoryVault returns an empty MemoryVault.
func NewMemoryVault() *MemoryVault {
	return &MemoryVault{
		tokens:  map[string]string{},
		values:  map[string]string{},
		counter: map[string]int{},
	}
}

// Token returns the token for value, issuing a new one on first sight.
func (m *MemoryVault) Token(kind, value string) (string, error) {
	if !kindRE.MatchString(kind) {
		return "", fmt.Errorf("pii: invalid kind %q", kind)
	}
	key := kind + "\x00" + value
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.tokens[key]; ok {
		return t, nil
	}
	m.counter[kind]++
	t := "[" + kind + "_" + strconv.Itoa(m.counter[kind]) + "]"
	m.tokens[key] = t
	m.values[t] = value
	return t, nil
}

// Value returns the value behind token, if this vault issued it.
func (m *MemoryVault) Value(token string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.values[token]
	return v, ok, nil
}

// Tokenize replaces every match in text with its token from v and counts
// the replacements per kind.
//
// Text that already has the shape of a token ("[EMAIL_1]") is left as it is
// and nothing overlapping it is tokenized, so tokenizing twice changes
// nothing and tokens the model wrote into code survive a trip through the
// sandbox. The price: Restore cannot tell such pre-existing text from an
// issued token, so Restore(Tokenize(x)) == x holds only when x contains no
// token-shaped text that v knows.
func (d *Detector) Tokenize(text string, v Vault) (string, map[string]int, error) {
	counts := map[string]int{}
	matches := d.Find(text)
	if len(matches) == 0 {
		return text, counts, nil
	}
	existing := tokenRE.FindAllStringIndex(text, -1)
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, m := range matches {
		if overlapsAny(existing, m.Start, m.End) {
			continue
		}
		tok, err := v.Token(m.Kind, m.Value)
		if err != nil {
			return "", nil, fmt.Errorf("pii: tokenize %s: %w", m.Kind, err)
		}
		b.WriteString(text[last:m.Start])
		b.WriteString(tok)
		last = m.End
		counts[m.Kind]++
	}
	b.WriteString(text[last:])
	return b.String(), counts, nil
}

func overlapsAny(spans [][]int, s, e int) bool {
	for _, sp := range spans {
		if sp[0] < e && s < sp[1] {
			return true
		}
	}
	return false
}

// Restore replaces every token in text that v issued with its value.
// Unknown token-shaped text stays as it is. Replacement is a single pass: a
// restored value that itself looks like a token is not restored again.
func Restore(text string, v Vault) (string, error) {
	locs := tokenRE.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		return text, nil
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		val, ok, err := v.Value(text[loc[0]:loc[1]])
		if err != nil {
			return "", fmt.Errorf("pii: restore: %w", err)
		}
		if !ok {
			continue
		}
		b.WriteString(text[last:loc[0]])
		b.WriteString(val)
		last = loc[1]
	}
	b.WriteString(text[last:])
	return b.String(), nil
}

// ErrInvalidJSON is returned by RestoreJSON when its input is not JSON.
var ErrInvalidJSON = errors.New("pii: invalid JSON")

// RestoreJSON restores tokens inside every string of a JSON document, object
// keys included, and leaves everything else byte for byte as it was (key
// order, numbers, white space). Restored strings are re-encoded, so values
// holding quotes, backslashes or control characters stay valid JSON.
func RestoreJSON(raw []byte, v Vault) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, ErrInvalidJSON
	}
	var out bytes.Buffer
	out.Grow(len(raw))
	last := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		// Outside strings a valid document has no quotes, so this opens a
		// string literal; find its closing quote.
		j := i + 1
		for raw[j] != '"' {
			if raw[j] == '\\' {
				j++
			}
			j++
		}
		lit := raw[i : j+1]
		if bytes.IndexByte(lit, '[') >= 0 || bytes.Contains(lit, []byte(`\u005`)) {
			var s string
			if err := json.Unmarshal(lit, &s); err != nil {
				return nil, fmt.Errorf("pii: restore json: %w", err)
			}
			r, err := Restore(s, v)
			if err != nil {
				return nil, err
			}
			if r != s {
				enc, err := encodeString(r)
				if err != nil {
					return nil, err
				}
				out.Write(raw[last:i])
				out.Write(enc)
				last = j + 1
			}
		}
		i = j
	}
	out.Write(raw[last:])
	return out.Bytes(), nil
}

func encodeString(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("pii: restore json: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
