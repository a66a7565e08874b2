package catalog

import (
	"slices"
	"strings"
	"sync"
)

// relatedWords maps words people use when they ask for something to the
// words tool APIs use for it: "relocate" asks for a move, "plus" for a sum,
// "remember" for memory. Unlike synonymGroups the relation is one way (a
// tool that "moves" is no answer to "relocate" only because both ask for
// it), and weaker (relatedWeight): a tool that uses the asker's own word
// still ranks first. A value of words joined by "+" is a phrase, matched
// as one alternative of all its words: "unlink" asks to delete a relation,
// and a tool that deletes something else, or creates a relation, answers
// only half of it.
//
// It is general vocabulary of everyday requests against the verbs and
// nouns of tool APIs (files, storage, memory, messages, processes, maths),
// written from how the words are used in English, not from any tool list;
// search_quality_test.go and paraphrase_test.go measure what it does. Keys
// and values are plain words; they are stemmed like everything else. What
// WordNet relates as well (wordnet.go: "large" and "size", "transfer" and
// "move") is left to it; what stays here is what WordNet does not know in
// the sense of computing ("remember" asks for memory, "dump" to read all).
var relatedWords = map[string][]string{
	// Arithmetic.
	"plus": {"sum", "add"}, "add": {"sum"}, "addition": {"sum"},
	"minus": {"subtract", "difference"}, "times": {"multiply", "product"},
	// Saying back, showing.
	"repeat": {"echo"}, "mirror": {"echo"},
	"say": {"content", "text", "read"}, "says": {"content", "text", "read"},
	"contents": {"content", "read"}, "inside": {"content"},
	// Size.
	"little": {"tiny"}, "small": {"tiny"}, "big": {"info"},
	"bytes": {"size"}, "space": {"size"},
	// Pictures and media.
	"photo": {"image", "media"}, "pic": {"image"}, "screenshot": {"image"},
	"audio": {"media"}, "sound": {"audio", "media"}, "video": {"media"},
	// Compression.
	"shrink": {"compress", "gzip"}, "zip": {"compress", "gzip"}, "gz": {"gzip", "compress"}, "squeeze": {"compress"},
	// Make-believe and research.
	"pretend": {"simulate", "simulated"}, "fake": {"simulate", "simulated", "mock"}, "mock": {"simulate", "simulated"},
	"investigate": {"research"}, "study": {"research"}, "thoroughly": {"deep"},
	// Logs.
	"chatter": {"logging", "log"}, "logs": {"logging"}, "verbose": {"logging"}, "debug": {"logging"},
	// Asking the user.
	"prompt": {"elicitation", "ask"}, "ask": {"elicitation"}, "form": {"elicitation", "input"},
	"person": {"user", "entity", "entities"}, "people": {"user", "entity", "entities"}, "human": {"user"},
	"sign": {"url", "browser", "login"}, "login": {"url", "browser"}, "web": {"url", "browser"}, "page": {"url"},
	"website": {"url"}, "uri": {"link", "resource"}, "uris": {"link", "resource"},
	// Work that takes time.
	"slow": {"long"}, "job": {"operation"}, "task": {"operation"}, "far": {"progress"},
	"kick": {"trigger", "start"}, "fire": {"trigger"},
	// Models.
	"language": {"llm", "sampling"}, "completion": {"sampling", "llm"}, "model": {"llm", "sampling"},
	"generate": {"sampling"},
	// Folders and places.
	"folder": {"directory", "directories"}, "folders": {"directory", "directories"}, "hierarchy": {"tree", "recursive"},
	"nested": {"tree", "recursive"}, "editor": {"client", "roots"}, "top": {"roots"}, "workspace": {"roots", "directory"},
	"share": {"roots", "provided"}, "shared": {"roots", "provided"},
	"permitted": {"access"}, "permission": {"allowed", "access", "permissions"}, "touch": {"access"},
	"reach": {"access"}, "owns": {"permissions", "info", "metadata"}, "owner": {"permissions", "metadata"},
	"item": {"file", "entry"}, "items": {"file", "entry"},
	// Moving, changing, saving.
	"relocate": {"move"}, "patch": {"edit", "replace"}, "tweak": {"edit"}, "fix": {"edit"}, "wording": {"content"},
	"save": {"write", "create"}, "store": {"write", "save"}, "disk": {"file", "write"},
	"persist": {"write", "save"}, "keep": {"save", "memory"}, "put": {"write"},
	"load": {"read"}, "open": {"read", "open"}, "view": {"read", "show"},
	"several": {"multiple"}, "many": {"multiple"}, "batch": {"multiple"}, "once": {"multiple", "simultaneously"},
	"locate": {"search"}, "mention": {"search", "query"},
	// A thing that may be anywhere is searched for ("is there a .env
	// anywhere in the repo?").
	"anywhere": {"search"}, "somewhere": {"search"}, "wherever": {"search"},
	"mentions": {"search", "query"}, "csv": {"file", "pattern"},
	// Remembering: the knowledge graph.
	// ("recallmemory" stands for a memory verb said of the one asked,
	// "what you know", "anything stored": see rewrite.)
	"remember": {"memory", "entity", "observation", "create"}, "memorize": {"entity", "observation"},
	"recall": {"memory", "open", "search", "read"}, "recallmemory": {"memory", "open", "search+knowledge+graph", "read+knowledge+graph"}, "know": {"knowledge", "graph", "search"},
	"forget": {"delete", "memory"}, "fact": {"observation", "knowledge"}, "facts": {"observation", "knowledge"},
	"detail": {"observation"}, "details": {"observation"}, "note": {"add"},
	"remembered": {"observation", "memory"}, "stored": {"graph", "knowledge"},
	"record": {"create", "add", "log"},
	"works":  {"relation"}, "longer": {"delete"}, "anymore": {"delete"},
	"customer": {"entity"}, "dump": {"read", "entire", "all"}, "export": {"read", "entire", "all"},
	"every": {"all", "entire"},
	// To update a file is to edit it; to update what is kept about
	// something, to add to it.
	"update":     {"edit", "add"},
	"everything": {"entire", "all", "complete"}, "anything": {"all"}, "whole": {"entire", "all", "complete"},
	// Relations between things are edges, links, ties, connections; to
	// sever one is to delete a relation, not the things it joins.
	"edge": {"relation"}, "edges": {"relation"}, "connection": {"relation"}, "connections": {"relation"},
	"connect": {"relation"}, "connected": {"relation"}, "relationship": {"relation"}, "relationships": {"relation"},
	"tie": {"relation"}, "ties": {"relation"}, "association": {"relation"}, "associate": {"relation"},
	"link": {"relation"}, "links": {"relation"},
	"unlink": {"delete+relation"}, "disconnect": {"delete+relation"}, "sever": {"delete+relation"},
	"detach": {"delete+relation"}, "untie": {"delete+relation"}, "dissociate": {"delete+relation"},
	// Destroying.
	"drop": {"delete", "remove"}, "wipe": {"delete"}, "erase": {"delete"}, "discard": {"delete"},
	"purge": {"delete"}, "scrub": {"delete"}, "retract": {"delete"}, "expunge": {"delete"},
	"eliminate": {"delete"}, "obliterate": {"delete"}, "nuke": {"delete"}, "trash": {"delete"},
	"ditch": {"delete"}, "scrap": {"delete"}, "rid": {"delete"}, "strike": {"delete"},
	// Writing over a file.
	"clobber": {"overwrite", "write"}, "overwrite": {"write"}, "replace": {"overwrite"},
	"insert": {"edit"}, "prepend": {"edit"}, "append": {"edit"},
	"print": {"read", "content"}, "display": {"read", "show"},
	// A file's metadata.
	"timestamp": {"time", "modified"}, "timestamps": {"time", "modified"}, "mtime": {"modified", "time"},
	"perms": {"permissions"}, "mode": {"permissions"}, "created": {"creation"},
	// Directory trees.
	"overview": {"tree"}, "layout": {"tree", "structure"}, "levels": {"tree", "recursive"},
	"recursively": {"recursive", "tree"}, "recursive": {"tree"},
	"organised": {"structure", "tree"}, "organized": {"structure", "tree"},
	"subfolder": {"subdirectories", "directory"}, "subfolders": {"subdirectories", "directory"},
	"subdirectory": {"subdirectories", "directory"},
	// Shell commands named in a sentence ("grep for it", "cat it").
	"grep": {"search", "pattern"}, "cat": {"read", "content"},
	// Typed data.
	"typed": {"structured", "schema"},
	// Turning on and off.
	"turn": {"toggle", "enable"}, "switch": {"toggle"}, "enable": {"toggle"}, "disable": {"toggle"},
	"notify": {"updates", "subscribe"}, "watch": {"subscribe", "subscriber"},
}

// relatedWeight scales a related word's contribution relative to the query
// word itself; below synonymWeight, as the relation is looser.
const relatedWeight = 0.4

// related maps a stemmed query term to the stemmed tool terms it asks for.
var related = func() map[string][]string {
	m := make(map[string][]string)
	for k, vs := range relatedWords {
		for _, t := range terms(k) {
			for _, v := range vs {
				if strings.Contains(v, "+") {
					// A phrase: one alternative of all its words.
					var parts []string
					for _, w := range strings.Split(v, "+") {
						parts = append(parts, terms(w)...)
					}
					m[t] = append(m[t], strings.Join(parts, "+"))
					continue
				}
				for _, s := range terms(strings.ReplaceAll(v, "_", " ")) {
					if s != t {
						m[t] = append(m[t], s)
					}
				}
			}
		}
	}
	return m
}()

// Weights of the WordNet relation (wordnet.go) against the query word
// itself: below the hand-written lexicon's, as the relation is general
// English and knows nothing of tools; a hypernym ("put" is a way to
// "move") below a synonym or derived form.
const (
	wordnetCloseWeight = 0.35
	wordnetBroadWeight = 0.25
)

// wordRelations are the stemmed tool terms a stemmed query term relates to
// through WordNet, close and broad.
type wordRelations struct {
	close, broad []string
}

// wordnet maps a stemmed word to its WordNet relations, parsed from
// wordnetData on first use: a program that never searches does not pay for
// it.
var wordnet = sync.OnceValue(func() map[string]wordRelations {
	m := make(map[string]wordRelations, strings.Count(wordnetData, "\n"))
	stems := func(list string, self string) []string {
		var out []string
		for _, w := range strings.Fields(list) {
			if s := stem(w); s != self && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	}
	for line := range strings.Lines(wordnetData) {
		word, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		closeList, broadList, _ := strings.Cut(rest, "\t")
		k := stem(word)
		r := m[k]
		for _, s := range stems(closeList, k) {
			if !slices.Contains(r.close, s) {
				r.close = append(r.close, s)
			}
		}
		for _, s := range stems(broadList, k) {
			if !slices.Contains(r.broad, s) && !slices.Contains(r.close, s) {
				r.broad = append(r.broad, s)
			}
		}
		m[k] = r
	}
	return m
})

// knownWords are the stemmed words WordNet's corpus uses that wordnet does
// not relate to any tool word: English words, not typos.
var knownWords = sync.OnceValue(func() map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(wordnetKnown) {
		m[stem(w)] = true
	}
	return m
})

// isEnglish reports whether a stemmed term is a word of WordNet's corpus.
func isEnglish(t string) bool {
	_, ok := wordnetLookup(t)
	return ok || knownWords()[t]
}

// wordnetLookup returns the WordNet relations of a stemmed query term, or of
// its base form when it is a regular superlative WordNet does not list
// ("largest", "newest").
func wordnetLookup(t string) (wordRelations, bool) {
	wn := wordnet()
	if r, ok := wn[t]; ok {
		return r, true
	}
	if base, ok := strings.CutSuffix(t, "est"); ok && len(base) >= 3 {
		for _, b := range []string{base, stem(base + "e"), undouble(base)} {
			if r, ok := wn[b]; ok {
				return r, true
			}
		}
	}
	return wordRelations{}, false
}
