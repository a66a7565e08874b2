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
// queries, so that a change that loses ground fails. On its first run,
// before shell command lines were read (commands.go), it was 70 of 107
// (0.654); then 76 (0.710); with WordNet (wordnet.go), file names and
// proper names read for what they stand for and shell redirection, 91
// (0.850); with the idioms of intent.go (what shell commands are used for,
// phrasal verbs, "what you remember" as a request to read memory, a
// reported deletion, severing an edge, the role of a file name) and the
// lexicon's words for relations, destroying and file metadata, 105 (0.981),
// 75 first. That last step was written looking at this set's misses, so
// the set no longer measures it as held out. What it misses: "return a
// typed object with temperature, conditions and humidity" and "hand me 5
// URIs pointing at sample content I can fetch later".
const minParaphrase2Top3 = 0.96

func TestParaphrases2(t *testing.T) {
	testHeldOut(t, "testdata/paraphrases2.jsonl", minParaphrase2Top3, 0)
}

// The third paraphrase set (testdata/paraphrases3.jsonl, issue 30): 121
// requests for the same servers, written like the second by someone who
// read neither this package nor the first two sets (testdata/paraphrases3.md).
// It was measured untouched once, after WordNet; the step after that
// (intent.go) was written looking at its misses as well as the second
// set's, so it is no longer held out either: a fourth set, written blind,
// is the measure of that step. Two of its requests want tools
// server-everything registers only for clients that can run tasks
// (trigger-sampling-request-async, trigger-elicitation-request-async),
// which upstream_tools.json does not hold: they count as misses.

// minParaphrase3Top3 is what the search reached, less two queries: 115 of
// 121 (0.950), 80 first; the step written from the fourth set's misses
// took it to 116 (0.959), 83 first. On its first, untouched run it reached 91 (0.752),
// 69 first; the search before WordNet, file names and proper names 84
// (0.694), 60 first.
const minParaphrase3Top3 = 0.93

// maxParaphrase3DestructiveFirst holds the requests of the third set that
// destroy nothing yet rank a destructive tool first: none since the
// deletion a request reports ("note that Dave deleted his account",
// "remember that Eve removed Mallory from the project") is no longer read
// as one it asks for (dropReported); two before.
const maxParaphrase3DestructiveFirst = 0

func TestParaphrases3(t *testing.T) {
	testHeldOut(t, "testdata/paraphrases3.jsonl", minParaphrase3Top3, maxParaphrase3DestructiveFirst)
}

// testHeldOut measures a held-out set of requests for the real servers
// alone: the share whose tool is in the top 3, which must be at least min,
// and how many requests that destroy nothing rank a destructive tool first,
// which must be at most maxDestructiveFirst.
func testHeldOut(t *testing.T, name string, min float64, maxDestructiveFirst int) {
	f, err := os.Open(name)
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
	if err := sc.Err(); err != nil {
		t.Fatal(err)
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
		if p.Kind != "destructive" && len(res.Hits) > 0 && res.Hits[0].Tool.Destructive && !slices.Contains(p.Expect, got[0]) {
			destructiveFirst++
			t.Logf("destructive first: %q (%s) got %v", p.Query, p.Kind, got)
		}
	}
	n := float64(len(set))
	t.Logf("%s: top-1 %d, top-3 %d of %d (%.3f); a destructive tool first for a request that is not: %d", name, top1, top3, len(set), float64(top3)/n, destructiveFirst)
	if float64(top3)/n < min {
		t.Errorf("top-3 %.3f, want at least %.2f", float64(top3)/n, min)
	}
	// A destructive tool (by its server's annotations) ranks first for a
	// request that destroys nothing at most that often (on the second set,
	// never; 4 did on its first run).
	if destructiveFirst > maxDestructiveFirst {
		t.Errorf("%d requests that destroy nothing rank a destructive tool first, want at most %d", destructiveFirst, maxDestructiveFirst)
	}
}

// The fourth paraphrase set (testdata/paraphrases4.jsonl, issue 30): 120
// requests written blind, by someone who read only the three npm servers'
// published code (testdata/paraphrases4.md), and measured first as it was
// handed over, before anything was tuned on it (see below).
func TestParaphrases4(t *testing.T) {
	testHeldOut(t, "testdata/paraphrases4.jsonl", minParaphrase4Top3, maxParaphrase4DestructiveFirst)
}

// On its first run the search reached 106 of 120 (0.883), 80 first, with
// two requests that destroy nothing ranking a destructive tool first ("find
// any files with 'remove' in their name", "search your memory for anything
// about the deleted accounts incident"). The search of 9a971c8, before the
// idiom reading of intent.go, reached 92 (0.767), 65 first, and 4.
//
// After that first run this set's misses were looked at, and the next step
// was written from them: a verb of seeing (or a typo of one) whose object
// is a file reads it, "what's in" a file reads it and in a folder lists
// it, a change with a file named edits it, "make"/"add" with a node or
// entity creates one, separable phrasal verbs ("jot that down"), quoted
// words and what something is "about" are no requests to destroy, and
// lexicon words ("anywhere", "strike", "export", "update"). It reaches 119
// (0.992), 88 first, and none; so this set no longer measures the search
// as held out either (a fifth set, written blind, does). Its one miss:
// "what's the weather in Chicago right now?" (get-structured-content says
// nothing of weather but in its output schema, which is not indexed). The
// floor is 117, that less two queries.
const (
	minParaphrase4Top3             = 0.97
	maxParaphrase4DestructiveFirst = 0
)

// The fifth paraphrase set (testdata/paraphrases5.jsonl, issue 30): 120
// requests written blind like the fourth (testdata/paraphrases5.md), while
// the search was changed for set 4's misses, and measured once, after:
// nothing was tuned on it.
func TestParaphrases5(t *testing.T) {
	testHeldOut(t, "testdata/paraphrases5.jsonl", minParaphrase5Top3, maxParaphrase5DestructiveFirst)
}

// On that run the search reached 108 of 120 (0.900, the goal),
// 91 first, with one request that destroys nothing ranking a destructive
// tool first ("Rename delete_me.txt to keep_me.txt, I changed my mind and
// don't want to remove it"). The search of 9a971c8 reached 89 (0.742), 70
// first, and 5. The floor is that run less two queries.
const (
	minParaphrase5Top3             = 0.88
	maxParaphrase5DestructiveFirst = 1
)
