package pii

import (
	"reflect"
	"strings"
	"testing"
)

// The rules of issue 28: each case failed before its rule.

// TestEscapedValues: values written with JSON or Python escapes are found
// in their decoded form and replaced whole, escapes and all, by the token
// of the value they stand for.
func TestEscapedValues(t *testing.T) {
	d := mustNew(t, nil)
	for _, tc := range []struct {
		text         string
		value, plain string
		kind         string
	}{
		{`{"email": "jos\u00e9.garc\u00eda@ex\u00e4mple.de"}`, `jos\u00e9.garc\u00eda@ex\u00e4mple.de`, "josé.garcía@exämple.de", KindEmail},
		{`"{\"email\": \"jos\\u00e9@example.de\"}"`, `jos\\u00e9@example.de`, "josé@example.de", KindEmail},
		{`b'jos\xc3\xa9@example.com'`, `jos\xc3\xa9@example.com`, "josé@example.com", KindEmail},
		{`{"e": "a\u0040example.com"}`, `a\u0040example.com`, "a@example.com", KindEmail},
		{`{"p": "\u002b1 415 555 2671"}`, `\u002b1 415 555 2671`, "+1 415 555 2671", KindPhone},
		{`{"ssn": "123\u002d45\u002d6789"}`, `123\u002d45\u002d6789`, "123-45-6789", KindSSN},
		{`"note\nphone: 4155552671"`, "4155552671", "", KindPhone},
	} {
		ms := d.Find(tc.text)
		if len(ms) != 1 || ms[0].Kind != tc.kind || ms[0].Value != tc.value || ms[0].Decoded != tc.plain || tc.text[ms[0].Start:ms[0].End] != ms[0].Value {
			t.Errorf("%s: found %+v, want %s %q (%q)", tc.text, ms, tc.kind, tc.value, tc.plain)
		}
	}
	// The escaped and the plain writing get the same token.
	v := NewMemoryVault()
	a, _, _ := d.Tokenize(`print: "jos\u00e9@example.de"`, v)
	b, _, _ := d.Tokenize("print: josé@example.de", v)
	if a[len(`print: "`):len(a)-1] != b[len("print: "):] || strings.Contains(a, "example") {
		t.Errorf("tokenized %q and %q: want one token", a, b)
	}
	if got, _ := Restore(a, v); got != `print: "josé@example.de"` {
		t.Errorf("restored %q: want the value as meant", got)
	}
}

// TestEmailDomainPrefix: an address followed by more of a file name is
// the longest prefix of its domain that ends in a known top-level domain.
func TestEmailDomainPrefix(t *testing.T) {
	d := mustNew(t, nil)
	for text, want := range map[string]string{
		"alice@example.com.txt":               "alice@example.com",
		"bob@corp.co.uk_report.csv":           "bob@corp.co.uk",
		"inbox/judy+alerts@example.at-95.eml": "judy+alerts@example.at",
		"see alice@example.com.backup2 now":   "alice@example.com",
		"ada@example.com.au":                  "ada@example.com.au",
		"many/00042_" + strings.Repeat("n", 180) + "_alice.leak@example.com.txt": "alice.leak@example.com",
		"file:///ada@example.org":       "ada@example.org",
		"logo@2x.png":                   "",
		"actions/checkout@v4.1.1":       "",
		"ssh://git@github.com/org/repo": "",
	} {
		var got string
		if ms := d.Find(text); len(ms) == 1 && ms[0].Kind == KindEmail {
			got = ms[0].Value
		}
		if got != want {
			t.Errorf("%q: found %q, want %q", text, got, want)
		}
	}
}

// TestPhoneHomeRegions: North American formats of any area code are found
// whatever the configured region, and national numbers with their trunk
// prefix in the groupings people write them in; versions, dates, times
// and ids are not phone numbers.
func TestPhoneHomeRegions(t *testing.T) {
	phones := []string{"(718) 842-3317", "212-555-0143", "718.842.3317", "718 842 3317", "1-718-842-3317",
		"0207 946 0958", "020 7946 0958", "0151 12345678", "030 123 456 78", "(030) 123-4567", "07911 123456", "01 42 68 53 00", "06-12345678"}
	others := []string{"08:17:02.001 12345", "29c8ee6c-0560-4779-bf08-0ef804f3953b", "v1.2.3456789", "2024-01-15 12:34:56",
		"build 20240501 123456", "1.234.567.890", "ORD-2024-819669", "SKU-0345-221-908", "10.0.19149.1264", "1717381437831"}
	for _, region := range []string{"US", "GB", "DE", "FR"} {
		d, err := New(Options{PhoneRegion: region})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range phones {
			if got := found(d, "x "+p+" y"); !reflect.DeepEqual(got, []kv{{KindPhone, p}}) {
				t.Errorf("%s: %q found as %v", region, p, got)
			}
		}
		for _, o := range others {
			for _, m := range d.Find("x " + o + " y") {
				if m.Kind == KindPhone {
					t.Errorf("%s: %q holds a phone number %q", region, o, m.Value)
				}
			}
		}
	}
}

// TestPasswordNames: every usual name of a password names one (pw,
// passwd, passcode, a camel-cased ...Pass), and a value in quotes ends at
// its quote.
func TestPasswordNames(t *testing.T) {
	d := mustNew(t, nil)
	for text, want := range map[string]string{
		"pw: Hunter2x!":                "Hunter2x!",
		"user=bob pw=Tr0ub4dor":        "Tr0ub4dor",
		"login_pw=abc123XY":            "abc123XY",
		"the passwd is Xy7#kLm2":       "Xy7#kLm2",
		"passwd hunter22":              "hunter22",
		"my pw is Summer2024!":         "Summer2024!",
		`{"adminPass": "Falcon2353*"}`: "Falcon2353*",
		"passcode: 88xQ7!2a":           "88xQ7!2a",
		`'DB_PASSWORD': 'Falcon9228.'`: "Falcon9228.",
		"pw: required":                 "",
		"password: REPLACE_ME":         "",
		"see PW 2":                     "",
	} {
		var got string
		for _, m := range d.Find(text) {
			if m.Kind == KindSecret {
				got = m.Value
			}
		}
		if got != want {
			t.Errorf("%q: secret %q, want %q", text, got, want)
		}
	}
}

// TestFileNameValues: values in a file's name are found: underscores and
// dashes join a name's parts, an extension ends it, and a secret in a
// path is the name without its directories or extension.
func TestFileNameValues(t *testing.T) {
	d := mustNew(t, nil)
	for text, want := range map[string]kv{
		"scan_172.17.2.42_2024-05-01.xml":                                        {KindIPv4, "172.17.2.42"},
		"captures/194.215.0.103.pcap":                                            {KindIPv4, "194.215.0.103"},
		"hr/w2_186-23-1030.pdf":                                                  {KindSSN, "186-23-1030"},
		"statements/BG91ANVK5600115JU7U1WY_2024-03.pdf":                          {KindIBAN, "BG91ANVK5600115JU7U1WY"},
		"peers/2404:6800:A1D6:9950:49DB:FD8A:6C45:DC7A.json":                     {KindIPv6, "2404:6800:A1D6:9950:49DB:FD8A:6C45:DC7A"},
		"sms-262.742.8122.txt":                                                   {KindPhone, "262.742.8122"},
		"disputes/4837-2554-85949.json":                                          {KindCard, "4837-2554-85949"},
		".cache/tokens/xoxb-241963953803-5067061398444-3cfxiwgvvhb6pvbcgevlzmb2": {KindSecret, "xoxb-241963953803-5067061398444-3cfxiwgvvhb6pvbcgevlzmb2"},
		"keys/sk_live_XUwpkf3H5aQdDH4P1opP8QoXfNzaB4ZkjV.json":                   {KindSecret, "sk_live_XUwpkf3H5aQdDH4P1opP8QoXfNzaB4ZkjV"},
		"creds/AKIA7F2BJZN5PUEGOPQL/backup.txt":                                  {KindSecret, "AKIA7F2BJZN5PUEGOPQL"},
		"Chrome/115.0.4794.223 Safari":                                           {},
	} {
		got := found(d, text)
		if want == (kv{}) && got != nil || want != (kv{}) && !reflect.DeepEqual(got, []kv{want}) {
			t.Errorf("%q: found %v, want %v", text, got, want)
		}
	}
}

// TestAlignedTables: a table aligned with spaces (a printed DataFrame)
// labels its columns as a CSV header does.
func TestAlignedTables(t *testing.T) {
	d := mustNew(t, nil)
	text := ">>> print(df)\n" +
		"                                     id           user_password  social_security_number       city\n" +
		"0                                    894  CCpMn0yWuoSBERGV1ULvfE             528 41 5052     Austin\n" +
		"1   c4adbd7c-74cb-4e1b-8935-dc16f32b3de7               Passw0rd!               732625454  Edinburgh\n"
	want := []kv{{KindSecret, "CCpMn0yWuoSBERGV1ULvfE"}, {KindSSN, "528 41 5052"}, {KindSecret, "Passw0rd!"}, {KindSSN, "732625454"}}
	if got := found(d, text); !reflect.DeepEqual(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
	// Prose with double spaces is no table.
	if got := found(d, "Name  Value\nthe order  123456789 shipped\n"); got != nil {
		t.Errorf("prose: found %v", got)
	}
}

// TestKeep: values the operator says are not personal data are never
// reported.
func TestKeep(t *testing.T) {
	d, err := New(Options{Keep: []string{"10.20.30.40"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := found(d, "lookup db on 10.20.30.40:53: no such host; client 10.20.30.41"); !reflect.DeepEqual(got, []kv{{KindIPv4, "10.20.30.41"}}) {
		t.Errorf("found %v", got)
	}
}

// TestAdjacentValues: values printed one after another with single
// spaces (print(email, phone, ssn, card)) are each found whole: a group
// joined onward by another separator than the gap before it starts a
// value of its own.
func TestAdjacentValues(t *testing.T) {
	d := mustNew(t, nil)
	for text, want := range map[string][]kv{
		"alice@example.com (718) 842-3317 287-65-4321 4111 1111 1111 1111": {{KindEmail, "alice@example.com"}, {KindPhone, "(718) 842-3317"}, {KindSSN, "287-65-4321"}, {KindCard, "4111 1111 1111 1111"}},
		"+1 214 865 6922 18.234.65.236":                                    {{KindPhone, "+1 214 865 6922"}, {KindIPv4, "18.234.65.236"}},
		"040 3057386 192.168.157.119":                                      {{KindPhone, "040 3057386"}, {KindIPv4, "192.168.157.119"}},
		"bad row: (718) 842-3317 4111 1111 1111 1111":                      {{KindPhone, "(718) 842-3317"}, {KindCard, "4111 1111 1111 1111"}},
		"cell: 05.12.11.44.06  5248 8256 9216 0063":                        {{KindPhone, "05.12.11.44.06"}, {KindCard, "5248 8256 9216 0063"}},
		"020 7946 0958 1234":                                               nil, // one longer run: no part of it is taken
	} {
		if got := found(d, text); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: found %v, want %v", text, got, want)
		}
	}
}

// TestSpelledValues: values spelled so that a model reads them and a
// pattern does not (fullwidth forms, zero-width characters, thin or
// no-break spaces, HTML character references) are found and replaced
// whole.
func TestSpelledValues(t *testing.T) {
	d := mustNew(t, nil)
	for text, want := range map[string]kv{
		"mail alice.leak\u200d@example.com now": {KindEmail, "alice.leak\u200d@example.com"},
		"call （７１８） ８４２－３３１７ now":               {KindPhone, "（７１８） ８４２－３３１７"},
		"write alice.leak&#64;example.com":      {KindEmail, "alice.leak&#64;example.com"},
		"write alice&commat;example.com":        {KindEmail, "alice&commat;example.com"},
		"tel +44\u202f20\u202f7946\u202f0958":   {KindPhone, "+44\u202f20\u202f7946\u202f0958"},
	} {
		if got := found(d, text); !reflect.DeepEqual(got, []kv{want}) {
			t.Errorf("%q: found %v, want %v", text, got, want)
		}
	}
}
