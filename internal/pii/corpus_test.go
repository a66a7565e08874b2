package pii

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

type corpusSample struct {
	Text     string `json:"text"`
	Entities []struct {
		Kind  string `json:"kind"`
		Value string `json:"value"`
	} `json:"entities"`
}

func loadCorpus(t *testing.T) []corpusSample {
	t.Helper()
	f, err := os.Open("testdata/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusSample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var s corpusSample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("corpus line %d: %v", n, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type score struct{ tp, fp, fn int }

func (s score) precision() float64 {
	if s.tp+s.fp == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fp)
}

func (s score) recall() float64 {
	if s.tp+s.fn == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fn)
}

// TestCorpus measures precision and recall on testdata/corpus.jsonl against
// the SPEC §7 bar of 0.98, per kind and overall. A prediction is a true
// positive when its kind and value equal a labelled entity of the sample.
func TestCorpus(t *testing.T) {
	samples := loadCorpus(t)
	d, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	perKind := map[string]*score{}
	for _, k := range Kinds {
		perKind[k] = &score{}
	}
	var total score
	var errs []string
	negatives := 0
	for i, s := range samples {
		if len(s.Entities) == 0 {
			negatives++
		}
		want := map[string]int{}
		for _, e := range s.Entities {
			want[e.Kind+"\x00"+e.Value]++
		}
		for _, m := range d.Find(s.Text) {
			key := m.Kind + "\x00" + m.Value
			if want[key] > 0 {
				want[key]--
				perKind[m.Kind].tp++
				total.tp++
				continue
			}
			perKind[m.Kind].fp++
			total.fp++
			errs = append(errs, fmt.Sprintf("line %d: false positive %s %q in %q", i+1, m.Kind, m.Value, s.Text))
		}
		for key, n := range want {
			kind, value, _ := strings.Cut(key, "\x00")
			for ; n > 0; n-- {
				perKind[kind].fn++
				total.fn++
				errs = append(errs, fmt.Sprintf("line %d: missed %s %q in %q", i+1, kind, value, s.Text))
			}
		}
	}
	if len(samples) < 300 || negatives < 100 {
		t.Errorf("corpus has %d samples, %d negatives; want at least 300 and 100", len(samples), negatives)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %5s %5s %5s %9s %7s\n", "kind", "tp", "fp", "fn", "precision", "recall")
	kinds := append([]string(nil), Kinds...)
	sort.Strings(kinds)
	for _, k := range kinds {
		s := perKind[k]
		fmt.Fprintf(&b, "%-8s %5d %5d %5d %9.4f %7.4f\n", k, s.tp, s.fp, s.fn, s.precision(), s.recall())
	}
	fmt.Fprintf(&b, "%-8s %5d %5d %5d %9.4f %7.4f\n", "ALL", total.tp, total.fp, total.fn, total.precision(), total.recall())
	fmt.Fprintf(&b, "samples=%d negatives=%d\n", len(samples), negatives)
	t.Logf("\n%s", b.String())
	fmt.Print(b.String())
	for _, e := range errs {
		t.Log(e)
		fmt.Println(e)
	}

	const bar = 0.98
	for _, k := range kinds {
		s := perKind[k]
		if s.tp+s.fn < 25 {
			t.Errorf("%s: %d labelled positives, want at least 25", k, s.tp+s.fn)
		}
		if s.precision() < bar || s.recall() < bar {
			t.Errorf("%s: precision %.4f recall %.4f, want both >= %.2f", k, s.precision(), s.recall(), bar)
		}
	}
	if total.precision() < bar || total.recall() < bar {
		t.Errorf("overall: precision %.4f recall %.4f, want both >= %.2f", total.precision(), total.recall(), bar)
	}
}
