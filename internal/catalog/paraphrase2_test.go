package catalog

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// The second paraphrase set (testdata/paraphrases2.jsonl, issue 30): 107
// requests for the tools of the real npm servers, written by someone who
// had read the servers' own documentation but neither this package nor its
// lexicon (testdata/paraphrases2.md says how). Each names the tools that
// answer it and whether it asks to destroy something.
type paraphrase2 struct {
	Query  string   `json:"query"`
	Expect []string `json:"expect"`
	Kind   string   `json:"kind"` // constructive, destructive or read
}

// minParaphrase2Top3 holds what the search reaches on this set, less two
// queries, so that a change that loses ground fails. The goal is
// 0.9, not met: on its first run, before shell command lines were read
// (commands.go), it was 70 of 107 (0.654); then 76 (0.710); with WordNet
// (wordnet.go), file names and proper names read for what they stand for
// and shell redirection, 91 (0.850). What it misses is listed by -v: mostly
// requests whose words no general resource ties to the tool ("stat
// package.json" for get_file_info, "break the 'manages' edge" for
// delete_relations).
const minParaphrase2Top3 = 0.83

func TestParaphrases2(t *testing.T) {
	f, err := os.Open("testdata/paraphrases2.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var set []paraphrase2
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p paraphrase2
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		set = append(set, p)
	}
	cat := New(loadTools(t, "upstream_tools.json"))
	top1, top3, destructiveFirst := 0, 0, 0
	for _, p := range set {
		res := cat.Search(Query{Text: p.Query, Limit: 3})
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.Tool.Server+"."+h.Tool.Name)
		}
		hit := slices.IndexFunc(got, func(g string) bool { return slices.Contains(p.Expect, g) })
		switch {
		case hit == 0:
			top1++
			top3++
		case hit > 0:
			top3++
		default:
			t.Logf("miss: %q wants %v, got %v", p.Query, p.Expect, got)
		}
		if p.Kind != "destructive" && len(got) > 0 && destructive(got[0]) && !slices.Contains(p.Expect, got[0]) {
			destructiveFirst++
			t.Logf("destructive first: %q (%s) got %v", p.Query, p.Kind, got)
		}
	}
	n := float64(len(set))
	t.Logf("top-1 %d, top-3 %d of %d (%.3f); a destructive tool first for a request that is not: %d", top1, top3, len(set), float64(top3)/n, destructiveFirst)
	if float64(top3)/n < minParaphrase2Top3 {
		t.Errorf("top-3 %.3f, want at least %.2f", float64(top3)/n, minParaphrase2Top3)
	}
	// Held: a destructive tool (by its server's annotations) never ranks
	// first for a request that destroys nothing (4 did on the first run).
	if destructiveFirst > 0 {
		t.Errorf("%d requests that destroy nothing rank a destructive tool first", destructiveFirst)
	}
}

// destructive says whether a tool of the set's servers deletes something.
func destructive(qualified string) bool {
	return slices.Contains([]string{"memory.delete_entities", "memory.delete_observations", "memory.delete_relations"}, qualified)
}
