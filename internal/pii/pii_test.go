package pii

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func mustNew(t testing.TB, custom []Custom) *Detector {
	t.Helper()
	d, err := New(Options{Custom: custom})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type kv struct{ Kind, Value string }

func found(d *Detector, text string) []kv {
	var out []kv
	for _, m := range d.Find(text) {
		if text[m.Start:m.End] != m.Value {
			panic("match span and value disagree")
		}
		out = append(out, kv{m.Kind, m.Value})
	}
	return out
}

func TestDetectors(t *testing.T) {
	d := mustNew(t, nil)
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
	tests := []struct {
		name string
		text string
		want []kv
	}{
		{"email", "write to jane.doe+x@mail.example.org.", []kv{{KindEmail, "jane.doe+x@mail.example.org"}}},
		{"email double dot", "a..b@example.com", nil},
		{"email no tld", "root@localhost", nil},
		{"phone e164", "+14155552671", []kv{{KindPhone, "+14155552671"}}},
		{"phone parens", "call (415) 555-2671 now", []kv{{KindPhone, "(415) 555-2671"}}},
		{"phone dashes", "415-555-2671", []kv{{KindPhone, "415-555-2671"}}},
		{"phone uk", "tel +44 20 7946 0958", []kv{{KindPhone, "+44 20 7946 0958"}}},
		{"phone bad area", "115-555-2671", nil},
		{"phone too short", "+1 555 2671", nil},
		{"phone date", "2024-01-15", nil},
		{"phone isbn", "978-1-56619-909-4", nil},
		{"phone longer run", "415-555-2671-22", nil},
		{"ssn", "SSN 123-45-6789.", []kv{{KindSSN, "123-45-6789"}}},
		{"ssn area 000", "000-45-6789", nil},
		{"ssn area 666", "666-45-6789", nil},
		{"ssn area 9xx", "912-45-6789", nil},
		{"ssn group 00", "123-00-6789", nil},
		{"ssn serial 0000", "123-45-0000", nil},
		{"ssn embedded", "x123-45-6789", nil},
		{"card visa", "4111111111111111", []kv{{KindCard, "4111111111111111"}}},
		{"card spaces", "pay 4111 1111 1111 1111 now", []kv{{KindCard, "4111 1111 1111 1111"}}},
		{"card amex", "3782-822463-10005", []kv{{KindCard, "3782-822463-10005"}}},
		{"card bad luhn", "4111111111111112", nil},
		{"card bad prefix", "9780306406157", nil},
		{"card odd groups", "411-1111111-111111", nil},
		{"card in longer run", "41111111111111110000", nil},
		{"iban", "IBAN DE89 3704 0044 0532 0130 00 THEN", []kv{{KindIBAN, "DE89 3704 0044 0532 0130 00"}}},
		{"iban compact", "GB82WEST12345698765432", []kv{{KindIBAN, "GB82WEST12345698765432"}}},
		{"iban bad check", "DE88 3704 0044 0532 0130 00", nil},
		{"iban bad length", "DE89370400440532013", nil},
		{"ipv4", "from 192.168.1.10:8080", []kv{{KindIPv4, "192.168.1.10"}}},
		{"ipv4 octet", "256.1.1.1", nil},
		{"ipv4 version v", "v1.2.3.4", nil},
		{"ipv4 version word", "version 10.0.1.5", nil},
		{"ipv4 user agent", "Chrome/120.0.0.0", nil},
		{"ipv4 oid", "1.3.6.1.4.1", nil},
		{"ipv6", "from 2001:db8::8a2e:370:7334 port", []kv{{KindIPv6, "2001:db8::8a2e:370:7334"}}},
		{"ipv6 loopback", "[::1]:80", nil},
		{"ipv6 time", "12:30:45", nil},
		{"ipv6 mac", "00:1a:2b:3c:4d:5e", nil},
		{"ipv6 cpp", "std::vector", nil},
		{"aws", "AKIAIOSFODNN7ABCDEFG", []kv{{KindSecret, "AKIAIOSFODNN7ABCDEFG"}}},
		{"aws documentation key", "AKIAIOSFODNN7EXAMPLE", nil},
		{"github", "ghp_" + strings.Repeat("aB3", 12), []kv{{KindSecret, "ghp_" + strings.Repeat("aB3", 12)}}},
		{"slack", "xoxb-123456789012-abcdefABCDEF", []kv{{KindSecret, "xoxb-123456789012-abcdefABCDEF"}}},
		{"jwt", "Bearer " + jwt, []kv{{KindSecret, jwt}}},
		{"jwt bad header", "eyJub3Rqc29u.eyJzdWIiOiIxIn0.abcdefgh", nil},
		{"pem", "key:\n" + pem + "\n", []kv{{KindSecret, pem}}},
		{"assignment", `api_key="sk_live_4eC39HqLyjWDarjtT1zdp7dc"`, []kv{{KindSecret, "sk_live_4eC39HqLyjWDarjtT1zdp7dc"}}},
		{"assignment placeholder", "api_key=YOUR_API_KEY_HERE_PLEASE", nil},
		{"assignment short", "token=a1b2c3", nil},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", nil},
		{"overlap secret wins", "token=AKIAIOSFODNN7ABCDEFG", []kv{{KindSecret, "AKIAIOSFODNN7ABCDEFG"}}},
		{"several sorted", "a@b.io 10.0.0.1 123-45-6789", []kv{{KindEmail, "a@b.io"}, {KindIPv4, "10.0.0.1"}, {KindSSN, "123-45-6789"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := found(d, tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Find(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestCustom(t *testing.T) {
	d := mustNew(t, []Custom{{Kind: "EMPLOYEE_ID", Pattern: `\bEMP-\d{6}\b`}})
	got := found(d, "EMP-123456 mailed a@b.io")
	want := []kv{{"EMPLOYEE_ID", "EMP-123456"}, {KindEmail, "a@b.io"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range [][]Custom{
		{{Kind: "lower", Pattern: "x"}},
		{{Kind: "EMAIL", Pattern: "x"}},
		{{Kind: "ID_1", Pattern: "x"}},
		{{Kind: "X", Pattern: "("}},
		{{Kind: "X", Pattern: "a*"}},
		{{Kind: "X", Pattern: "a"}, {Kind: "X", Pattern: "b"}},
	} {
		if _, err := New(Options{Custom: bad}); err == nil {
			t.Errorf("New(%v): want error", bad)
		}
	}
}

func TestTokenize(t *testing.T) {
	d := mustNew(t, nil)
	v := NewMemoryVault()
	in := "a@b.io called 415-555-2671, then a@b.io and c@d.io"
	got, counts, err := d.Tokenize(in, v)
	if err != nil {
		t.Fatal(err)
	}
	toks := tokenRE.FindAllString(got, -1)
	if len(toks) != 4 || toks[0] != toks[2] || toks[0] == toks[3] || !strings.HasPrefix(toks[1], "[PHONE_") {
		t.Fatalf("Tokenize = %q: want one token per value, the same for the same value", got)
	}
	if want := map[string]int{KindEmail: 3, KindPhone: 1}; !reflect.DeepEqual(counts, want) {
		t.Errorf("counts = %v, want %v", counts, want)
	}
	// Stable across calls with the same vault.
	again, _, _ := d.Tokenize("c@d.io", v)
	if again != toks[3] {
		t.Errorf("second Tokenize = %q, want %s", again, toks[3])
	}
	// Idempotent: tokens are not tokenized again.
	twice, _, _ := d.Tokenize(got, v)
	if twice != got {
		t.Errorf("Tokenize twice = %q, want %q", twice, got)
	}
	back, err := Restore(got+" [EMAIL_abcdef] [SSN_1]", v)
	if err != nil {
		t.Fatal(err)
	}
	if want := in + " [EMAIL_abcdef] [SSN_1]"; back != want {
		t.Errorf("Restore = %q, want %q", back, want)
	}
}

// TestTokenIDs holds what a token says: nothing of the vault's size or
// order, the same id for the same value, another vault another id.
func TestTokenIDs(t *testing.T) {
	v := NewMemoryVault()
	first, _ := v.Token(KindEmail, "a@example.com")
	for i := 0; i < 50; i++ {
		if _, err := v.Token(KindEmail, fmt.Sprintf("u%d@example.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	if again, _ := v.Token(KindEmail, "a@example.com"); again != first {
		t.Errorf("token changed: %s then %s", first, again)
	}
	if !regexp.MustCompile(`^\[EMAIL_[0-9a-f]{6}\]$`).MatchString(first) {
		t.Errorf("token %q: want [EMAIL_ and six hex digits]", first)
	}
	if other, _ := NewMemoryVault().Token(KindEmail, "a@example.com"); other == first {
		t.Errorf("two vaults gave %s the same token: ids must be keyed per vault", first)
	}
	// A collision takes the next, longer candidate.
	c := TokenCandidates([]byte("k"), KindEmail, "x")
	if len(c) < 2 || len(c[1]) != len(c[0])+2 || !strings.HasPrefix(c[1][:len(c[1])-1], c[0][:len(c[0])-1]) {
		t.Errorf("candidates %v: want ids growing by two hex digits", c)
	}
}

// TestTokenizeInsideToken: a value that contains token-shaped text is
// tokenized whole (a private key with a [X_1]-like line); a match that is
// only part of a token is not.
func TestTokenizeInsideToken(t *testing.T) {
	d := mustNew(t, nil)
	v := NewMemoryVault()
	pem := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n[EMAIL_1]\nq3bZ0aGvT+fxj0mF3s9kZbq1yXWqAq6w0R3q0x6N9kY\n-----END PRIVATE KEY-----"
	out, _, err := d.Tokenize("key:\n"+pem+"\n", v)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "MIIEvQ") || !strings.Contains(out, "[SECRET_") {
		t.Errorf("Tokenize left the key: %q", out)
	}
}

func TestKnown(t *testing.T) {
	d := mustNew(t, nil)
	v := NewMemoryVault()
	tok, _ := v.Token(KindSSN, "123456789")
	out, _, err := d.TokenizeLabelled("", "file x123456789.txt written", v, []Known{{Kind: KindSSN, Value: "123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	if out != "file x"+tok+".txt written" {
		t.Errorf("known value not tokenized: %q", out)
	}
}

func TestCut(t *testing.T) {
	d := mustNew(t, nil)
	text := "hello dave.trunc@example.org and more"
	at := strings.Index(text, "example")
	if got := d.Cut(text, at); got != strings.Index(text, "dave") {
		t.Errorf("Cut inside an address = %d, want its start %d", got, strings.Index(text, "dave"))
	}
	if got := d.Cut(text, 3); got != 3 {
		t.Errorf("Cut in plain text = %d, want 3", got)
	}
	if got := d.Cut("héllo", 2); got != 1 {
		t.Errorf("Cut inside a character = %d, want 1", got)
	}
}

func TestRestoreJSON(t *testing.T) {
	v := NewMemoryVault()
	// Values with characters JSON must escape.
	tok, err := v.Token(KindEmail, `x"y\z@example.com`)
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := v.Token(KindSecret, "line1\nline2</script>")
	esc := `\u005b` + sec[1:]
	raw := []byte(`{"z": 1.50, "to": "` + tok + `", "list": ["` + sec + `", "` + esc + `", 3], "` + tok + `": null, "keep": "[EMAIL_abcdef]"}`)
	out, err := RestoreJSON(raw, v)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("RestoreJSON produced invalid JSON: %s", out)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"z":                 1.5,
		"to":                `x"y\z@example.com`,
		"list":              []any{"line1\nline2</script>", "line1\nline2</script>", 3.0},
		`x"y\z@example.com`: nil,
		"keep":              "[EMAIL_abcdef]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RestoreJSON = %v, want %v", got, want)
	}
	if !strings.HasPrefix(string(out), `{"z": 1.50, "to": `) {
		t.Errorf("RestoreJSON changed untouched bytes: %s", out)
	}
	if _, err := RestoreJSON([]byte(`{"a":`), v); err != ErrInvalidJSON {
		t.Errorf("invalid input: err = %v, want ErrInvalidJSON", err)
	}
	// Without a '[' anywhere: a token written only as an escape (either
	// case) is still restored; a document with neither is left as it is.
	for _, raw := range []string{`{"to": "\u005B` + tok[1:] + `"}`, `{"to": "\u005b` + tok[1:] + `"}`} {
		out, err := RestoreJSON([]byte(raw), v)
		var got map[string]string
		if err != nil || json.Unmarshal(out, &got) != nil || got["to"] != `x"y\z@example.com` {
			t.Errorf("RestoreJSON(%s) = %s, %v", raw, out, err)
		}
	}
	for _, raw := range []string{`{"text": "x", "n": 1}`, `"EMAIL_abcdef]"`, `{}`} {
		if out, known, err := RestoreJSONKnown([]byte(raw), v); err != nil || string(out) != raw || known != nil {
			t.Errorf("RestoreJSONKnown(%s) = %s, %v, %v", raw, out, known, err)
		}
	}
	if _, err := RestoreJSON([]byte(`{"a": 1`), v); err != ErrInvalidJSON {
		t.Errorf("invalid input without '[': err = %v, want ErrInvalidJSON", err)
	}
}

func FuzzTokenizeRestore(f *testing.F) {
	for _, s := range []string{
		"", "plain text", "jane@example.com 415-555-2671 123-45-6789",
		"4111 1111 1111 1111 DE89370400440532013000 10.0.0.1 ::1",
		"api_key=sk_live_4eC39HqLyjWDarjtT1zdp7dc AKIAIOSFODNN7EXAMPLE",
		"[EMAIL_1] a@b.io", "[X_a@b.io]", "\xff\xfe@x.io",
	} {
		f.Add(s)
	}
	d := mustNew(f, []Custom{{Kind: "TICKET", Pattern: `T-\d+`}})
	f.Fuzz(func(t *testing.T, in string) {
		v := NewMemoryVault()
		tok, _, err := d.Tokenize(in, v)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Restore(tok, v)
		if err != nil {
			t.Fatal(err)
		}
		// Token-shaped text already in the input is indistinguishable from
		// an issued token (see Tokenize); round-trip is promised only
		// without it.
		if tokenRE.MatchString(in) {
			return
		}
		if back != in {
			t.Errorf("Restore(Tokenize(%q)) = %q via %q", in, back, tok)
		}
	})
}

// TestSecretRulesCompile compiles every gitleaks rule, which the detector
// otherwise does only when a rule first runs.
func TestSecretRulesCompile(t *testing.T) {
	sr, err := loadSecretRules()
	if err != nil {
		t.Fatal(err)
	}
	for i := range sr.rules {
		if r := sr.rules[i].regexps(); r.re == nil || r.anchored == nil {
			t.Errorf("rule %s: no regexps", sr.rules[i].id)
		}
	}
}

// TestAhoCorasick checks the keyword automaton against strings.Index on
// keywords that share prefixes and suffixes, and bytes in no keyword.
func TestAhoCorasick(t *testing.T) {
	kws := []string{"he", "she", "his", "hers", "key_", "api-key", "a", "é"}
	ac := newAhoCorasick(kws)
	for _, text := range []string{"", "ushers", "my api-key_ is hers; she said", "aaa", "HE he\x00h\xffe", "café"} {
		got := map[[2]int]bool{}
		ac.each(text, func(k, start int) { got[[2]int{k, start}] = true })
		want := map[[2]int]bool{}
		for k, kw := range kws {
			if kw[0] >= 0x80 {
				continue // bytes outside ASCII never match
			}
			for i := 0; i+len(kw) <= len(text); i++ {
				if text[i:i+len(kw)] == kw {
					want[[2]int{k, i}] = true
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", text, got, want)
		}
	}
}
