package catalog

import (
	"slices"
	"strings"
)

// What a request's wording says beyond its words one by one: idioms of the
// shell and of English whose meaning is not the sum of their words ("cat",
// "get rid of", "what you remember"), and which part of a request is the
// request and which the fact it reports ("note that Dave deleted his
// account" asks to store a fact, not to delete).

// commandIntents are what the everyday commands of a shell are used for, in
// the words tool APIs use for it, where their man pages' one-line
// descriptions (commandWords) say it in other words or not at all: cat(1)
// "concatenates files and prints on the standard output", but "cat notes.txt"
// asks to read a file; stat(1) "displays file status", but asks for the
// file's size, times and permissions. It also holds common commands outside
// Debian's base tools (tree, less, rg). It is general shell usage, not a fit
// to any tool list.
var commandIntents = map[string]string{
	"cat":    "read file contents text",
	"less":   "read file contents text",
	"more":   "read file contents text",
	"head":   "read first lines file head",
	"tail":   "read last lines file tail",
	"wc":     "read file text size",
	"stat":   "file info metadata size modified time permissions",
	"ls":     "list directory files",
	"dir":    "list directory files",
	"vdir":   "list directory files",
	"du":     "list directory sizes",
	"tree":   "directory tree recursive",
	"find":   "search files name pattern",
	"fd":     "search files name pattern",
	"locate": "search files name",
	"grep":   "search text pattern files",
	"egrep":  "search text pattern files",
	"fgrep":  "search text pattern files",
	"rgrep":  "search text pattern files",
	"rg":     "search text pattern files",
	"ag":     "search text pattern files",
	"mkdir":  "create directory",
	"mv":     "move rename file",
	"touch":  "create file write",
	"tee":    "write file",
	"rm":     "delete remove file",
	"rmdir":  "delete remove directory",
	"ln":     "link",
	"echo":   "echo text message",
	"gzip":   "compress gzip file",
	"zip":    "compress gzip file",
}

// proseCommands are commands that are also words a request starts with
// ("more about Alice", "less verbose"): read as commands only with a path
// or a flag after them.
var proseCommands = map[string]bool{"more": true, "less": true}

// lsSizeFlags are the letters of ls(1)'s flags that ask for sizes: -s
// (allocated size), -S (sort by size), -h (human-readable sizes), -l (the
// long listing, with sizes); -R lists subdirectories recursively.
const lsSizeFlags = "sShl"

// commandMeaning returns the words a shell command line's command stands
// for: its intent (commandIntents), refined by its flags where they change
// what it is for ("ls -lS" lists with sizes, "ls -R" a tree, "mkdir -p"
// still makes a directory), else its man page's description; ok is false
// for a word that is no command.
func commandMeaning(cmd string, args []string) (string, bool) {
	if cmd == "ls" {
		for _, a := range args {
			if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
				continue
			}
			switch {
			case strings.Contains(a, "R"):
				return "directory tree recursive", true
			case strings.ContainsAny(a, lsSizeFlags):
				return "list directory sizes", true
			}
		}
	}
	if s, ok := commandIntents[cmd]; ok {
		return s, true
	}
	s, ok := commandWords[cmd]
	return s, ok
}

// phrases are English idioms whose words mean something else together: a
// phrasal verb ("get rid of" is to delete, "pull up" to open, "look up" to
// search) or a question ("how big" asks for a size). Each is replaced by
// the one word it means before the request is read.
var phrases = []struct {
	words []string
	means string
}{
	{[]string{"get", "rid", "of"}, "delete"},
	{[]string{"do", "away", "with"}, "delete"},
	{[]string{"pull", "up"}, "open"},
	{[]string{"bring", "up"}, "open"},
	{[]string{"look", "up"}, "search"},
	{[]string{"look", "for"}, "search"},
	{[]string{"dig", "up"}, "search"},
	{[]string{"set", "up"}, "create"},
	{[]string{"write", "down"}, "note"},
	{[]string{"jot", "down"}, "note"},
	{[]string{"note", "down"}, "note"},
	{[]string{"make", "a", "note"}, "note"},
	{[]string{"take", "note"}, "note"},
	{[]string{"keep", "track", "of"}, "remember"},
	{[]string{"keep", "in", "mind"}, "remember"},
	{[]string{"log", "that"}, "note that"},
	{[]string{"related", "to"}, "about"},
	{[]string{"relating", "to"}, "about"},
	{[]string{"in", "relation", "to"}, "about"},
	{[]string{"with", "regard", "to"}, "about"},
	{[]string{"how", "big"}, "size info"},
	{[]string{"how", "large"}, "size info"},
	{[]string{"how", "heavy"}, "size info"},
	{[]string{"how", "old"}, "modified time"},
	{[]string{"last", "modified"}, "modified time"},
	{[]string{"last", "changed"}, "modified time"},
	{[]string{"last", "updated"}, "modified time"},
	{[]string{"last", "edited"}, "modified time"},
	{[]string{"last", "touched"}, "modified time"},
}

// memoryVerbs are the verbs of keeping something in mind. Said of the one
// asked ("what do you remember", "everything you've stored", "anything
// saved about Apollo"), they ask to read what is kept; said as an order
// ("remember that ...", "store this"), to keep something.
var memoryVerbs = map[string]bool{
	"remember": true, "remembered": true, "recall": true, "recalled": true,
	"know": true, "knew": true, "known": true,
	"store": true, "stored": true, "save": true, "saved": true,
	"keep": true, "kept": true, "record": true, "recorded": true,
	"note": true, "noted": true, "learn": true, "learned": true, "learnt": true,
	"memorize": true, "memorized": true, "memorise": true, "memorised": true,
	"have": true, "got": true,
}

// auxiliaries may stand between "you" and its verb ("you've already
// stored", "do you still remember").
var auxiliaries = map[string]bool{
	"'ve": true, "have": true, "had": true, "'d": true, "do": true, "did": true,
	"already": true, "still": true, "ever": true, "now": true, "so": true, "far": true,
}

// quantifiers stand for what a request is about as a whole: "everything
// stored", "anything saved".
var quantifiers = map[string]bool{
	"everything": true, "anything": true, "something": true, "all": true,
	"whatever": true, "what": true, "what's": true, "nothing": true,
}

// recallWord replaces a memory verb that asks to read what is kept: a
// word of no tool and no English, so that only the lexicon's relations of
// it count, not WordNet's of "recall" (to call back, to echo).
const recallWord = "recallmemory"

// rewrite replaces the idioms of text (phrases, and a verb that severs a
// relation, severVerbs) by what they mean, and a memory verb said of the
// one asked or of what is kept ("what you know", "anything stored") by
// recallWord; it leaves out what a request says to keep ("but keep both
// nodes") and the name after a word of naming ("a folder named trash"). Words keep their case and punctuation
// otherwise, for the proper names and file names read afterwards.
func rewrite(text string) string {
	fields := strings.Fields(text)
	low := make([]string, len(fields))
	for i, f := range fields {
		low[i] = strings.ReplaceAll(strings.ToLower(strings.Trim(f, "\"'`()[]{},;:!?.")), "’", "'")
	}
	var out []string
	for i := 0; i < len(fields); i++ {
		if low[i] == "but" && i+1 < len(low) && keepVerbs[low[i+1]] {
			// "delete the link but keep both nodes": what to keep is
			// no part of what to do.
			break
		}
		if slices.ContainsFunc(low[i+1:min(i+5, len(low))], func(w string) bool { return edgeNouns[w] }) {
			// "break the edge", "cut that link", "remove the
			// relationship": a relation ends, and the things it
			// joined stay.
			switch {
			case severVerbs[low[i]]:
				out = append(out, "unlink")
				continue
			case deleteVerbs[low[i]]:
				out = append(out, fields[i], "unlink")
				continue
			}
		}
		if p, n := phraseAt(low[i:]); n > 0 {
			out = append(out, p)
			i += n - 1
			continue
		}
		if namingWords[low[i]] && i+1 < len(fields) {
			// "a folder named trash": the name is no word of the
			// request.
			out = append(out, fields[i])
			i++
			continue
		}
		if memoryVerbs[low[i]] && low[i] != "have" && low[i] != "got" && (saidOfHearer(low[:i]) || keptParticiple(low[:i], low[i])) {
			out = append(out, recallWord)
			continue
		}
		out = append(out, fields[i])
	}
	return strings.Join(out, " ")
}

// keepVerbs, after "but", start what a request leaves alone.
var keepVerbs = map[string]bool{"keep": true, "leave": true, "preserve": true, "retain": true, "spare": true}

// severVerbs end a relation when their object is one of edgeNouns: "break
// the link", "cut the tie", "end the relationship".
var severVerbs = map[string]bool{"break": true, "cut": true, "end": true, "sever": true, "snap": true, "drop": true}

// deleteVerbs delete whatever their object is; said of an edge, a
// relation.
var deleteVerbs = map[string]bool{"delete": true, "remove": true, "erase": true, "wipe": true, "clear": true, "destroy": true}

var edgeNouns = map[string]bool{
	"link": true, "links": true, "edge": true, "edges": true, "tie": true, "ties": true,
	"connection": true, "connections": true, "relationship": true, "relationships": true,
	"relation": true, "relations": true, "association": true, "bond": true,
}

// namingWords come before a name: "a folder called reports".
var namingWords = map[string]bool{"named": true, "called": true, "titled": true, "entitled": true}

// phraseAt returns what the phrase words start with means, and how many
// words it takes; 0 if none.
func phraseAt(words []string) (string, int) {
	for _, p := range phrases {
		if len(words) >= len(p.words) && equalWords(words[:len(p.words)], p.words) {
			return p.means, len(p.words)
		}
	}
	return "", 0
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// saidOfHearer reports whether the verb after before is said of the one
// asked ("you", "you've", "do you still") or of what is kept ("anything",
// "everything"), and is not an order: a verb that starts the request is
// one ("remember that Bob ...").
func saidOfHearer(before []string) bool {
	for i := len(before) - 1; i >= 0; i-- {
		w := before[i]
		switch {
		case w == "you" || w == "you've" || w == "you'd" || w == "u":
			return true
		case quantifiers[w]:
			return true
		case auxiliaries[w]:
			continue
		}
		return false
	}
	return false
}

// keptParticiple reports whether a memory verb is a participle that says
// what is kept ("my saved entities", "the stored facts"), not the verb of
// a request or of someone's deed ("I saved", "Dave stored").
func keptParticiple(before []string, verb string) bool {
	if len(before) == 0 || !strings.HasSuffix(verb, "ed") && !strings.HasSuffix(verb, "n") && verb != "kept" {
		return false
	}
	switch before[len(before)-1] {
	case "my", "your", "our", "the", "all", "any", "already", "previously":
		return true
	}
	return false
}

// reportVerbs are the verbs that put a fact on record: what follows them
// and "that" (or a colon) is the fact, not what the request asks to do.
var reportVerbs = map[string]bool{
	"note": true, "remember": true, "record": true, "log": true, "store": true,
	"save": true, "memorize": true, "memorise": true, "add": true, "mention": true,
	"write": true, "jot": true,
}

// subjectPronouns start a clause of their own.
var subjectPronouns = map[string]bool{"he": true, "she": true, "they": true, "we": true, "i": true, "someone": true, "somebody": true}

// leadWords may come before a report verb: "make a note that", "just
// jot down that".
var leadWords = map[string]bool{"make": true, "take": true, "quickly": true, "also": true, "jot": true}

// dropReported leaves out of text the fact a request reports ("note that
// Dave deleted his account": "Dave deleted his account"), so that the
// deletion it tells of is not read as one it asks for. A fact follows a
// verb of reportVerbs that leads the request and "that" or a colon, or a verb of reportVerbs that starts the request and a name or a
// pronoun.
func dropReported(text string) string {
	fields := strings.Fields(text)
	if len(fields) > 1 && reportVerbs[strings.ToLower(fields[0])] {
		// "remember Grace deleted the old repo": a report verb, then a
		// clause with its own subject, a name or a pronoun.
		if next := strings.Trim(fields[1], "\"'`,;:"); isCapitalized(strings.TrimSuffix(next, "'s")) || subjectPronouns[strings.ToLower(next)] {
			return fields[0]
		}
	}
	verb := false
	for i, f := range fields {
		if i > 5 {
			break
		}
		w := strings.ToLower(strings.TrimRight(f, ",;!?."))
		colon := strings.HasSuffix(w, ":")
		w = strings.TrimSuffix(w, ":")
		switch {
		case !verb && reportVerbs[w]:
			verb = true
			if colon {
				return strings.Join(fields[:i+1], " ")
			}
		case verb && (w == "that" || colon):
			return strings.Join(fields[:i], " ")
		case !verb && !isStopWord(w) && !leadWords[w]:
			// The request's verb is another ("delete the note
			// that says hi").
			return text
		}
	}
	return text
}

// destinationWords, before a file name, make it where something goes:
// "save the summary to notes.md", "dump the report into out/report.md".
var destinationWords = map[string]bool{"to": true, "into": true, "onto": true, "over": true}

// showVerbs ask to see a file's contents when their object is a file:
// "print config.yaml", "show me what's inside settings.yaml".
var showVerbs = map[string]bool{
	"show": true, "print": true, "display": true, "view": true, "see": true,
	"output": true, "echo": true, "type": true, "cat": true,
}

// fileRoles reports what the file names of text are for: shown, when a
// verb of showVerbs asks to see one; written, when one is where something
// goes (after a word of destinationWords).
func fileRoles(text string) (shown, written bool) {
	fields := strings.Fields(text)
	show := false
	for i, f := range fields {
		w := strings.ToLower(strings.Trim(f, "\"'`()[]{},;:!?."))
		if showVerbs[w] {
			show = true
		}
		if !strings.ContainsRune(f, '.') && !wellKnownFiles[w] {
			continue // no file name, as fileNames reads one
		}
		if _, n, _, _ := fileNames(f); n == 0 {
			continue
		}
		if i > 0 && destinationWords[strings.ToLower(fields[i-1])] {
			written = true
		} else if show {
			shown = true
		}
	}
	return shown, written
}
