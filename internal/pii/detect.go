package pii

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// Built-in kinds, in the order the README lists them ("Personal data stays
// out of the model").
const (
	KindEmail  = "EMAIL"
	KindPhone  = "PHONE"
	KindSSN    = "SSN"
	KindCard   = "CARD"
	KindIBAN   = "IBAN"
	KindIPv4   = "IPV4"
	KindIPv6   = "IPV6"
	KindSecret = "SECRET"
)

// Kinds lists the built-in kinds.
var Kinds = []string{KindEmail, KindPhone, KindSSN, KindCard, KindIBAN, KindIPv4, KindIPv6, KindSecret}

// priority decides which of two overlapping matches wins: higher first, then
// the longer one. A secret often contains digit runs or e-mail-like parts,
// and a card number is more specific than the phone pattern it may resemble.
// Custom kinds rank just below SECRET: the operator asked for them by name.
var priority = map[string]int{
	KindSecret: 100,
	KindIBAN:   85, // an IBAN's digits may read as a card
	KindCard:   80,
	KindSSN:    60,
	KindEmail:  50,
	KindPhone:  40,
	KindIPv4:   30,
	KindIPv6:   30,
}

const customPriority = 90

// Match is one detected value: text[Start:End] == Value.
type Match struct {
	Kind       string
	Start, End int
	Value      string
	// Decoded is the value when the text writes it escaped
	// ("jos\u00e9@example.org" for josé@example.org), else "": the value
	// a token stands for, which restoring it gives back.
	Decoded string
}

// Plain is the value as it is meant: Decoded, else Value.
func (m Match) Plain() string {
	if m.Decoded != "" {
		return m.Decoded
	}
	return m.Value
}

// Custom is an operator-defined kind from the config: every match of Pattern
// (Go regexp syntax) is reported as Kind.
type Custom struct {
	Kind, Pattern string
}

// Options configure a Detector. The zero value detects the built-in kinds,
// reading phone numbers without a country code as North American.
type Options struct {
	// Custom are extra kinds, each found by a regular expression.
	Custom []Custom
	// PhoneRegion is the region (ISO 3166-1 alpha-2, such as "GB" or
	// "DE") in whose national format a phone number written without a
	// country code is read first; "" means "US". North American formats
	// are read whatever the region. Numbers of the other regions of
	// nationalRegions are found too when written in their own national
	// format with its trunk prefix ("020 7946 0958").
	PhoneRegion string
	// Keep are values that are not personal data wherever they appear,
	// as an operator's own infrastructure (its DNS resolvers): they are
	// never reported.
	Keep []string
}

type customDetector struct {
	kind string
	re   *regexp.Regexp
}

// Detector finds PII in text. It is safe for concurrent use once built.
type Detector struct {
	custom      []customDetector
	keep        map[string]bool
	phoneRegion string
	// homeRegions are the regions whose national formats are read
	// without a trunk prefix or a label: the default region, and "US".
	homeRegions []string
	secrets     *secretRules
}

var kindRE = regexp.MustCompile(`^[A-Z][A-Z0-9]*(?:_[A-Z][A-Z0-9]*)*$`)

// New returns a Detector for the built-in kinds plus opts.Custom. A custom
// kind must be upper case letters, digits and underscores, not end in a
// digit group (so its tokens stay unambiguous), not repeat a built-in kind,
// and its pattern must compile and not match the empty string. The phone
// region must be one libphonenumber knows.
func New(opts Options) (*Detector, error) {
	d := &Detector{phoneRegion: strings.ToUpper(opts.PhoneRegion)}
	if len(opts.Keep) > 0 {
		d.keep = set(opts.Keep...)
	}
	if d.phoneRegion == "" {
		d.phoneRegion = "US"
	}
	if !phonenumbers.GetSupportedRegions()[d.phoneRegion] {
		return nil, fmt.Errorf("pii: phone region %q is not a region libphonenumber knows (want an ISO 3166-1 code such as US, GB or DE)", opts.PhoneRegion)
	}
	d.homeRegions = []string{d.phoneRegion}
	if d.phoneRegion != "US" {
		d.homeRegions = append(d.homeRegions, "US")
	}
	seen := map[string]bool{}
	for _, k := range Kinds {
		seen[k] = true
	}
	for _, c := range opts.Custom {
		if !kindRE.MatchString(c.Kind) {
			return nil, fmt.Errorf("pii: custom kind %q: want upper case letters, digits and underscores", c.Kind)
		}
		if seen[c.Kind] {
			return nil, fmt.Errorf("pii: custom kind %q: defined twice", c.Kind)
		}
		seen[c.Kind] = true
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pii: custom kind %q: %w", c.Kind, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("pii: custom kind %q: pattern matches the empty string", c.Kind)
		}
		d.custom = append(d.custom, customDetector{kind: c.Kind, re: re})
	}
	var err error
	if d.secrets, err = loadSecretRules(); err != nil {
		return nil, err
	}
	return d, nil
}

// Find returns the non-overlapping matches in text, sorted by position.
// Where candidates overlap, the higher-priority kind wins (SECRET, custom,
// CARD, IBAN, SSN, EMAIL, PHONE, IP), then the longer match.
func (d *Detector) Find(text string) []Match {
	return d.find(text, 0)
}

// FindLabelled is Find for a value that stands under a label: the key of
// a JSON object or the header of a CSV column. The label is context, as
// "ssn" makes 123456789 a social security number and "api_key" makes a
// random string a secret; nothing is reported inside the label itself.
func (d *Detector) FindLabelled(label, text string) []Match {
	if label == "" {
		return d.find(text, 0)
	}
	// The label and the value read as a YAML line, which every label-aware
	// detector understands ("ssn: 123456789").
	prefix := strings.NewReplacer("\n", " ", "\r", " ").Replace(label) + ": "
	ms := d.find(prefix+text, len(prefix))
	for i := range ms {
		ms[i].Start -= len(prefix)
		ms[i].End -= len(prefix)
	}
	return ms
}

// find finds the matches in text that start at from or later; what comes
// before from is context only. Values written with backslash escapes are
// found too (see views).
func (d *Detector) find(text string, from int) []Match {
	found := d.findIn(text, from)
	for _, v := range views(text) {
		found = mergeView(text, found, v, d.findIn(v.text, v.offset(from)))
	}
	if d.keep != nil {
		kept := found[:0]
		for _, m := range found {
			if !d.keep[m.Plain()] {
				kept = append(kept, m)
			}
		}
		found = kept
	}
	return found
}

// findIn is find in text as it is written.
func (d *Detector) findIn(text string, from int) []Match {
	sc := &scan{text: text, det: d}
	var cands []Match
	cands = d.secrets.find(sc, cands)
	cands = findCards(sc, cands)
	cands = findIBANs(sc, cands)
	cands = findSSNs(sc, cands)
	cands = findEmails(sc, cands)
	cands = findPhones(sc, cands)
	cands = findIPv4(sc, cands)
	cands = findIPv6(sc, cands)
	for _, c := range d.custom {
		for _, loc := range c.re.FindAllStringIndex(text, -1) {
			if loc[0] < loc[1] {
				cands = append(cands, Match{Kind: c.kind, Start: loc[0], End: loc[1], Value: text[loc[0]:loc[1]]})
			}
		}
	}
	if from > 0 {
		kept := cands[:0]
		for _, c := range cands {
			if c.Start >= from {
				kept = append(kept, c)
			}
		}
		cands = kept
	}
	return resolve(cands)
}

func prio(kind string) int {
	if p, ok := priority[kind]; ok {
		return p
	}
	return customPriority
}

// resolve keeps the best candidates that do not overlap and sorts them.
// Candidates are taken cluster by cluster (a run of candidates that
// overlap one another), so that the cost stays near linear in a text with
// many values.
func resolve(cands []Match) []Match {
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool {
		return cands[i].Start < cands[j].Start || cands[i].Start == cands[j].Start && cands[i].End > cands[j].End
	})
	var out []Match
	for i := 0; i < len(cands); {
		j, end := i+1, cands[i].End
		for j < len(cands) && cands[j].Start < end {
			end = max(end, cands[j].End)
			j++
		}
		out = append(out, resolveCluster(cands[i:j])...)
		i = j
	}
	return out
}

// resolveCluster keeps the best candidates of overlapping ones: higher
// priority first, then the longer, then the earlier.
func resolveCluster(cands []Match) []Match {
	if len(cands) == 1 {
		return cands
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if pa, pb := prio(a.Kind), prio(b.Kind); pa != pb {
			return pa > pb
		}
		if la, lb := a.End-a.Start, b.End-b.Start; la != lb {
			return la > lb
		}
		return a.Start < b.Start
	})
	var kept []Match // sorted by Start, non-overlapping
	for _, c := range cands {
		i := sort.Search(len(kept), func(i int) bool { return kept[i].End > c.Start })
		if i < len(kept) && kept[i].Start < c.End {
			continue
		}
		kept = append(kept, Match{})
		copy(kept[i+1:], kept[i:])
		kept[i] = c
	}
	return kept
}

// scan is one Find's view of its text, with what several detectors share
// computed at most once.
type scan struct {
	text string
	det  *Detector
	// tabs are the text's tables, parsed on first use.
	tablesDone bool
	tabs       []table
	// checked are the secret rule matches already checked: rule, start,
	// end.
	checked map[[3]int]bool
}

func (s *scan) add(dst []Match, kind string, start, end int) []Match {
	return append(dst, Match{Kind: kind, Start: start, End: end, Value: s.text[start:end]})
}
