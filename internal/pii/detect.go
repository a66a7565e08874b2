package pii

import (
	"fmt"
	"regexp"
	"sort"
)

// Built-in kinds, in the order of SPEC §7.
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
	KindCard:   80,
	KindIBAN:   70,
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
}

// Custom is an operator-defined kind from the config: every match of Pattern
// (Go regexp syntax) is reported as Kind.
type Custom struct {
	Kind, Pattern string
}

type customDetector struct {
	kind string
	re   *regexp.Regexp
}

// Detector finds PII in text. It is safe for concurrent use once built.
type Detector struct {
	custom []customDetector
}

var kindRE = regexp.MustCompile(`^[A-Z][A-Z0-9]*(?:_[A-Z][A-Z0-9]*)*$`)

// New returns a Detector for the built-in kinds plus custom. A custom kind
// must be upper case letters, digits and underscores, not end in a digit
// group (so its tokens stay unambiguous), not repeat a built-in kind, and
// its pattern must compile and not match the empty string.
func New(custom []Custom) (*Detector, error) {
	d := &Detector{}
	seen := map[string]bool{}
	for _, k := range Kinds {
		seen[k] = true
	}
	for _, c := range custom {
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
	return d, nil
}

// Find returns the non-overlapping matches in text, sorted by position.
// Where candidates overlap, the higher-priority kind wins (SECRET, custom,
// CARD, IBAN, SSN, EMAIL, PHONE, IP), then the longer match.
func (d *Detector) Find(text string) []Match {
	var cands []Match
	cands = findSecrets(text, cands)
	cands = findCards(text, cands)
	cands = findIBANs(text, cands)
	cands = findSSNs(text, cands)
	cands = findEmails(text, cands)
	cands = findPhones(text, cands)
	cands = findIPv4(text, cands)
	cands = findIPv6(text, cands)
	for _, c := range d.custom {
		for _, loc := range c.re.FindAllStringIndex(text, -1) {
			if loc[0] < loc[1] {
				cands = append(cands, Match{Kind: c.kind, Start: loc[0], End: loc[1], Value: text[loc[0]:loc[1]]})
			}
		}
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
func resolve(cands []Match) []Match {
	if len(cands) == 0 {
		return nil
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
