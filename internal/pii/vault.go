package pii

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Vault issues tokens for values and resolves them back. Token must return
// the same token for the same kind and value every time; Value reports
// whether the token was issued by this vault.
type Vault interface {
	Token(kind, value string) (string, error)
	Value(token string) (string, bool, error)
}

// tokenRE matches token-shaped text: "[" KIND "_" ID "]", where ID is the
// lower-case hex of TokenCandidates, or a decimal number (the tokens of
// vaults written before ids were keyed hashes, which stay valid).
var tokenRE = regexp.MustCompile(`\[[A-Z][A-Z0-9]*(?:_[A-Z][A-Z0-9]*)*_(?:[0-9a-f]{6,32}|[1-9][0-9]*)\]`)

// IsToken reports whether s is token-shaped.
func IsToken(s string) bool {
	loc := tokenRE.FindStringIndex(s)
	return loc != nil && loc[0] == 0 && loc[1] == len(s)
}

// Token ids are keyed hashes of the value: stable for a value within a
// vault, but saying nothing of how many values the vault holds or in what
// order they came, and not computable without the vault's key, so that a
// model cannot test a guess ("is [PHONE_x] 415-555-2671?") by hashing it.

// KeySize is the size of a vault's key in bytes.
const KeySize = 32

// Token id lengths: the shortest is tried first; a collision with another
// value takes the next. 6 hex digits give 16.7 million ids per kind.
const (
	minIDLen = 6
	maxIDLen = 32
)

// NewKey returns a fresh random vault key.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("pii: vault key: %w", err)
	}
	return k, nil
}

// TokenCandidates returns the tokens value may get under key, in the order
// a vault must try them: the first not yet taken by another value of the
// vault is its token. They are "[KIND_" + the first 6, 8, ..., 32 hex
// digits of HMAC-SHA256(key, kind NUL value) + "]".
func TokenCandidates(key []byte, kind, value string) []string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(kind))
	mac.Write([]byte{0})
	mac.Write([]byte(value))
	id := hex.EncodeToString(mac.Sum(nil))
	out := make([]string, 0, (maxIDLen-minIDLen)/2+1)
	for n := minIDLen; n <= maxIDLen; n += 2 {
		out = append(out, "["+kind+"_"+id[:n]+"]")
	}
	return out
}

// ErrVaultFull is returned when every candidate of a value is taken, which
// takes a collision of 128 bits.
var ErrVaultFull = errors.New("pii: no free token for the value")

// MemoryVault is a Vault held in memory, with a random key of its own. It
// is safe for concurrent use; mu guards all fields.
type MemoryVault struct {
	key    []byte
	mu     sync.Mutex
	tokens map[string]string // kind + "\x00" + value -> token
	values map[string]string // token -> value
}

// NewMemoryVault returns an empty MemoryVault.
func NewMemoryVault() *MemoryVault {
	key, err := NewKey()
	if err != nil {
		panic(err) // crypto/rand does not fail on the platforms Go supports
	}
	return &MemoryVault{key: key, tokens: map[string]string{}, values: map[string]string{}}
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
	for _, t := range TokenCandidates(m.key, kind, value) {
		if _, taken := m.values[t]; !taken {
			m.tokens[key] = t
			m.values[t] = value
			return t, nil
		}
	}
	return "", ErrVaultFull
}

// Value returns the value behind token, if this vault issued it.
func (m *MemoryVault) Value(token string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.values[token]
	return v, ok, nil
}

// Known is a value to tokenize wherever it appears, found or not by the
// detectors: a value just restored into a tool's arguments, which the
// tool's answer may echo in a context where it no longer looks like what
// it is (a path x4111111111111111.txt, an SSN without its label).
type Known struct {
	Kind, Value string
}

// Tokenize replaces every match in text with its token from v and counts
// the replacements per kind.
//
// Text that already has the shape of a token ("[EMAIL_3f9a2c]") is left as
// it is, so tokenizing twice changes nothing and tokens the model wrote
// into code survive a trip through the sandbox; but a value that contains
// token-shaped text (a private key with such a line in it) is tokenized
// whole. The price: Restore cannot tell pre-existing token-shaped text from
// an issued token, so Restore(Tokenize(x)) == x holds only when x contains
// no token-shaped text that v knows.
func (d *Detector) Tokenize(text string, v Vault) (string, map[string]int, error) {
	return d.TokenizeLabelled("", text, v, nil)
}

// TokenizeLabelled is Tokenize for a value under label (see
// FindLabelled), with known values tokenized first wherever they appear.
func (d *Detector) TokenizeLabelled(label, text string, v Vault, known []Known) (string, map[string]int, error) {
	counts := map[string]int{}
	matches := d.matches(label, text, known)
	if len(matches) == 0 {
		return text, counts, nil
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, m := range matches {
		tok, err := v.Token(m.Kind, m.Plain())
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

// matches are the values Tokenize replaces: the known values wherever they
// appear, then what the detectors find elsewhere, except inside text that
// is already a token.
func (d *Detector) matches(label, text string, known []Known) []Match {
	var ms []Match // the known values' matches
	if len(text) == 0 {
		return nil
	}
	// Known values, longest first so that one inside another does not cut
	// it.
	if len(known) > 0 {
		ks := append([]Known(nil), known...)
		sort.Slice(ks, func(i, j int) bool { return len(ks[i].Value) > len(ks[j].Value) })
		for _, k := range ks {
			if len(k.Value) < 4 { // too short to look for without noise
				continue
			}
			for off := 0; ; {
				i := strings.Index(text[off:], k.Value)
				if i < 0 {
					break
				}
				s, e := off+i, off+i+len(k.Value)
				if !overlaps(ms, s, e) {
					ms = append(ms, Match{Kind: k.Kind, Start: s, End: e, Value: k.Value})
				}
				off = e
			}
		}
	}
	var found []Match
	if label != "" {
		found = d.FindLabelled(label, text)
	} else {
		found = d.Find(text)
	}
	existing := tokenRE.FindAllStringIndex(text, -1)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Start < ms[j].Start })
	out := make([]Match, 0, len(ms)+len(found))
	out = append(out, ms...)
	for _, m := range found {
		if overlapsSorted(ms, m.Start, m.End) || overlapsSorted2(existing, m.Start, m.End, m.End-m.Start) {
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// overlapsSorted reports whether [s, e) overlaps a match of ms, sorted by
// start and not overlapping each other.
func overlapsSorted(ms []Match, s, e int) bool {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].End > s })
	return i < len(ms) && ms[i].Start < e
}

// overlapsSorted2 is insideToken for tokens sorted by start: [s, e)
// overlaps a token without containing it whole.
func overlapsSorted2(tokens [][]int, s, e, n int) bool {
	i := sort.Search(len(tokens), func(i int) bool { return tokens[i][1] > s })
	for ; i < len(tokens) && tokens[i][0] < e; i++ {
		t := tokens[i]
		if !(s <= t[0] && t[1] <= e && n > t[1]-t[0]) {
			return true
		}
	}
	return false
}

func overlaps(ms []Match, s, e int) bool {
	for _, m := range ms {
		if m.Start < e && s < m.End {
			return true
		}
	}
	return false
}

// insideToken reports whether [s, e) overlaps a token without containing
// it whole: a match that only touches a token is a piece of it, one that
// contains a token is a larger value around it.
func insideToken(tokens [][]int, s, e int) bool {
	for _, t := range tokens {
		if t[0] < e && s < t[1] && !(s <= t[0] && t[1] <= e && e-s > t[1]-t[0]) {
			return true
		}
	}
	return false
}

// Cut returns where to cut text so that it keeps at most limit bytes: the
// last character boundary at or before limit that is not inside a value
// the detectors find in the whole text (or a token). Cutting there leaves
// no part of a value on either side; a value longer than limit that starts
// at 0 is cut before, to nothing.
func (d *Detector) Cut(text string, limit int) int {
	if limit >= len(text) {
		return len(text)
	}
	if limit <= 0 {
		return 0
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	spans := tokenRE.FindAllStringIndex(text, -1)
	for _, m := range d.Find(text) {
		spans = append(spans, []int{m.Start, m.End})
	}
	for moved := true; moved; {
		moved = false
		for _, sp := range spans {
			if sp[0] < cut && cut < sp[1] {
				cut = sp[0]
				moved = true
			}
		}
	}
	return cut
}

// Restore replaces every token in text that v issued with its value.
// Unknown token-shaped text stays as it is. Replacement is a single pass: a
// restored value that itself looks like a token is not restored again.
func Restore(text string, v Vault) (string, error) {
	out, _, err := RestoreKnown(text, v)
	return out, err
}

// RestoreKnown is Restore that also returns the values it restored, so
// that a caller can look for them in what comes back (see Known).
func RestoreKnown(text string, v Vault) (string, []Known, error) {
	locs := tokenRE.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		return text, nil, nil
	}
	var b strings.Builder
	var known []Known
	last := 0
	for _, loc := range locs {
		tok := text[loc[0]:loc[1]]
		val, ok, err := v.Value(tok)
		if err != nil {
			return "", nil, fmt.Errorf("pii: restore: %w", err)
		}
		if !ok {
			continue
		}
		b.WriteString(text[last:loc[0]])
		b.WriteString(val)
		last = loc[1]
		known = append(known, Known{Kind: tokenKind(tok), Value: val})
	}
	b.WriteString(text[last:])
	return b.String(), known, nil
}

// tokenKind is the kind of a token: what is between "[" and its last "_".
func tokenKind(tok string) string {
	return tok[1:strings.LastIndexByte(tok, '_')]
}

// ErrInvalidJSON is returned by RestoreJSON when its input is not JSON.
var ErrInvalidJSON = errors.New("pii: invalid JSON")

// RestoreJSON restores tokens inside every string of a JSON document, object
// keys included, and leaves everything else byte for byte as it was (key
// order, numbers, white space). Restored strings are re-encoded, so values
// holding quotes, backslashes or control characters stay valid JSON.
func RestoreJSON(raw []byte, v Vault) ([]byte, error) {
	out, _, err := RestoreJSONKnown(raw, v)
	return out, err
}

// RestoreJSONKnown is RestoreJSON that also returns the values restored.
// A document in which no string can hold a token is returned as it is, not
// a copy.
func RestoreJSONKnown(raw []byte, v Vault) ([]byte, []Known, error) {
	if !json.Valid(raw) {
		return nil, nil, ErrInvalidJSON
	}
	// Every token starts with '[', which a JSON string holds as itself or
	// as an escape \u005b (or \u005B). Most tool calls' arguments have
	// neither: answer those without the scan of each string and the copy.
	if bytes.IndexByte(raw, '[') < 0 && !bytes.Contains(raw, []byte(`\u005`)) {
		return raw, nil, nil
	}
	var out bytes.Buffer
	out.Grow(len(raw))
	var known []Known
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
				return nil, nil, fmt.Errorf("pii: restore json: %w", err)
			}
			r, k, err := RestoreKnown(s, v)
			if err != nil {
				return nil, nil, err
			}
			known = append(known, k...)
			if r != s {
				enc, err := encodeString(r)
				if err != nil {
					return nil, nil, err
				}
				out.Write(raw[last:i])
				out.Write(enc)
				last = j + 1
			}
		}
		i = j
	}
	out.Write(raw[last:])
	return out.Bytes(), known, nil
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
