package catalog

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/codecell/codecell/internal/editdist"
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
	{[]string{"knowledge", "base"}, "knowledge graph"},
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
// nodes") and the name after a word of naming ("a folder named trash").
// A verb of seeing a file becomes "read" (seesFile), a question of what a
// file or folder holds "read" or "list files in" (contentsQuestion), a
// change with a file named "edit", making a node or file "create", and a
// record after a determiner an entity. Words keep their case and
// punctuation otherwise, for the proper names and file names read
// afterwards.
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
		if p, n := contentsQuestion(fields[i:], low[i:]); n > 0 {
			out = append(out, p)
			i += n - 1
			continue
		}
		switch {
		case seesFile(fields[i:], low[i:]):
			// "open package.json", "shwo me notes.txt": to see a
			// file is to read it; no memory node is opened, and
			// nothing is shown as an edit's diff is.
			out = append(out, "read")
			continue
		case editVerbs[low[i]] && namesFile(fields):
			// "in the Dockerfile, bump node from 18 to 20": a
			// change to a file is an edit of it.
			out = append(out, "edit")
			continue
		case createVerbs[low[i]] && createsThing(low[i+1:]):
			// "make nodes for our projects", "add an entity for
			// Bob": to make a thing is to create it ("add a note
			// to Bob's entry" adds to one that is).
			out = append(out, "create")
			continue
		case (low[i] == "record" || low[i] == "records") && i > 0 && determiners[low[i-1]]:
			// "the exact records named ...": a record is a stored
			// thing, an entity, not the verb of storing one.
			out = append(out, "entity")
			continue
		}
		if namingWords[low[i]] && i+1 < len(fields) {
			// "a folder named trash": the name is no word of the
			// request.
			out = append(out, fields[i])
			i++
			continue
		}
		if memoryVerbs[low[i]] && (low[i] != "have" && low[i] != "got" || i+1 < len(low) && topicWords[low[i+1]]) && (saidOfHearer(low[:i]) || keptParticiple(low[:i], low[i])) {
			// "have" and "got" keep something in mind only when what
			// they keep is about something: "what you've got on
			// Acme", not "do you have a tool for ...".
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
// words it takes; 0 if none. A phrasal verb of two words may have its
// object, a pronoun, between them: "jot that down", "pull it up".
func phraseAt(words []string) (string, int) {
	for _, p := range phrases {
		if len(words) >= len(p.words) && equalWords(words[:len(p.words)], p.words) {
			return p.means, len(p.words)
		}
		if len(p.words) == 2 && len(words) >= 3 && words[0] == p.words[0] && objectPronouns[words[1]] && words[2] == p.words[1] {
			return p.means, 3
		}
	}
	return "", 0
}

// objectPronouns may stand between a phrasal verb and its particle.
var objectPronouns = map[string]bool{"it": true, "that": true, "this": true, "them": true, "these": true, "those": true}

// topicWords come before what something is about: "what you have on
// Acme", "anything about the incident".
var topicWords = map[string]bool{"on": true, "about": true, "regarding": true, "concerning": true}

// dropTopic leaves out of text what it says something is about, up to the
// end of its clause: "search memory for anything about the deleted accounts
// incident" asks to search, and the deletion is the topic, not a request.
func dropTopic(text string) string {
	low := strings.ToLower(text)
	if !strings.Contains(low, "about") && !strings.Contains(low, "regarding") && !strings.Contains(low, "concerning") {
		return text
	}
	fields := strings.Fields(text)
	out := fields[:0:0]
	topic := false
	for _, f := range fields {
		w := strings.ToLower(f)
		if !topic {
			out = append(out, f)
		}
		switch {
		case w == "about" || w == "regarding" || w == "concerning":
			topic = true
		case strings.ContainsAny(f[len(f)-1:], ",.;:!?"):
			topic = false
		}
	}
	return strings.Join(out, " ")
}

// quoteMarks pairs each opening quotation mark with its closing ones.
var quoteMarks = map[rune]string{'\'': "'’", '"': "\"”", '`': "`", '‘': "’", '“': "”"}

// dropQuoted takes out of text what it quotes in plain words after its
// first word: "find files with 'remove' in their name" searches for the
// word, it asks for no removal; "strike 'prefers tea' from Carol" names
// what to strike. Quoted patterns, paths and file names ("'*.md'",
// "'s/v1/v2/'") stay, for what they say of files. It returns the rest and
// how many of the quotes were names ("'Acme Corp'"), capitalized.
func dropQuoted(text string) (rest string, names int) {
	if !strings.ContainsAny(text, "'\"`‘“") {
		return text, 0
	}
	fields := strings.Fields(text)
	out := fields[:0:0]
	for i := 0; i < len(fields); i++ {
		open, _ := utf8.DecodeRuneInString(fields[i])
		closers, ok := quoteMarks[open]
		end := -1
		if ok && i > 0 {
			for j := i; j < len(fields) && j < i+8; j++ {
				w := strings.TrimRight(fields[j], ",.;:!?)")
				if j == i {
					w = w[utf8.RuneLen(open):]
				}
				last, size := utf8.DecodeLastRuneInString(w)
				if size > 0 && strings.ContainsRune(closers, last) && (j > i || len(w) > size) {
					end = j
					break
				}
			}
		}
		if end < 0 {
			out = append(out, fields[i])
			continue
		}
		plain, name := true, false
		for _, f := range fields[i : end+1] {
			w := strings.TrimRight(strings.Trim(f, "'\"`‘’“”"), ",.;:!?)")
			w = strings.Trim(w, "'\"`‘’“”")
			for _, r := range w {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' && r != '’' {
					plain = false
				}
			}
			if isCapitalized(strings.TrimSuffix(w, "'s")) {
				name = true
			}
		}
		if !plain {
			out = append(out, fields[i])
			continue
		}
		if name {
			names++
		}
		i = end
	}
	return strings.Join(out, " "), names
}

// seeVerbs ask to see what their object holds: said of a file, to read it.
// "open" is one of them for a file, not for a memory node.
var seeVerbs = func() map[string]bool {
	m := map[string]bool{"open": true, "load": true}
	for w := range showVerbs {
		m[w] = true
	}
	return m
}()

// seesFile reports whether words start with a verb of seeing (seeVerbs, or
// a typo of one: "shwo", "dispaly") whose object, within the next few
// words, is a file name that is not where something goes ("print the
// summary into out.txt", "echo hi > notes.txt").
func seesFile(fields, low []string) bool {
	if !seeVerbs[low[0]] && !typoOf(low[0], seeVerbs) {
		return false
	}
	for j := 1; j < len(fields) && j <= 4; j++ {
		if destinationWords[low[j]] || strings.HasPrefix(fields[j], ">") {
			return false
		}
		if isFileName(fields[j]) {
			return true
		}
	}
	return false
}

// typoOf reports whether w, no word of English, is one edit (a
// transposition counts once) from a word of verbs of four letters or more.
func typoOf(w string, verbs map[string]bool) bool {
	if len(w) < 4 {
		return false
	}
	if ts := terms(w); len(ts) != 1 || isEnglish(ts[0]) {
		return false
	}
	for v := range verbs {
		if len(v) >= 4 && editdist.Bounded(w, v, 1) <= 1 {
			return true
		}
	}
	return false
}

// isFileName reports whether a word is a file name, as fileNames reads one.
func isFileName(f string) bool {
	_, n, _, _ := fileNames(f)
	return n > 0
}

// namesFile reports whether a request names a file.
func namesFile(fields []string) bool {
	return slices.ContainsFunc(fields, isFileName)
}

// containerNouns name what holds files.
var containerNouns = map[string]bool{
	"folder": true, "folders": true, "directory": true, "directories": true, "dir": true, "subfolder": true,
}

// contentsQuestion reads a question of what something holds ("what's in
// notes.txt", "whats inside ~/src", "what files are in the downloads
// folder"): of a file, it asks to read it; of a folder, to list it. It
// returns what the question means and how many words it takes; 0 when
// words start no such question or its object is neither.
func contentsQuestion(fields, low []string) (string, int) {
	n := 0
	switch {
	case len(low) > 1 && (low[0] == "what's" || low[0] == "whats"):
		n = 1
	case len(low) > 2 && low[0] == "what" && (low[1] == "is" || low[1] == "exactly"):
		n = 2
	case len(low) > 3 && (low[0] == "what" || low[0] == "which") && (low[1] == "files" || low[1] == "stuff" || low[1] == "things") && (low[2] == "are" || low[2] == "is"):
		n = 3
	default:
		return "", 0
	}
	if low[n] != "in" && low[n] != "inside" && low[n] != "within" {
		return "", 0
	}
	n++
	for j := n; j < len(fields) && j <= n+3; j++ {
		switch {
		case isFileName(fields[j]):
			return "read", n
		case containerNouns[low[j]] || isDirPath(strings.Trim(fields[j], "\"'`,;:!?")):
			return "list files in", n
		}
	}
	return "", 0
}

// editVerbs change what is in something: said with a file name, they ask
// to edit the file. "replace" is left out: "replace notes.txt with this"
// writes it over.
var editVerbs = map[string]bool{
	"change": true, "bump": true, "update": true, "modify": true, "alter": true,
	"tweak": true, "fix": true, "patch": true, "adjust": true, "amend": true,
	"correct": true, "swap": true, "upgrade": true, "downgrade": true,
	"increase": true, "decrease": true, "raise": true, "lower": true,
	"uncomment": true, "comment": true, "rewrite": true, "revise": true,
}

// createVerbs make something when their object is a thing (createsThing).
var createVerbs = map[string]bool{"make": true, "add": true, "build": true, "start": true}

// thingNouns are the things a request makes: stored things and files.
var thingNouns = map[string]bool{
	"node": true, "nodes": true, "entity": true, "entities": true,
	"record": true, "records": true, "entry": true, "entries": true,
	"folder": true, "folders": true, "directory": true, "directories": true,
	"file": true, "files": true,
}

// createsThing reports whether the words after a verb of createVerbs are
// its object and one of thingNouns: "make nodes for", "add three new
// entities", not "add a note to her entry".
func createsThing(after []string) bool {
	for j := 0; j < len(after) && j < 4; j++ {
		w := after[j]
		switch {
		case thingNouns[w]:
			return true
		case destinationWords[w] || topicWords[w] || w == "for" || w == "in" || w == "as":
			return false
		}
	}
	return false
}

// determiners come before a noun: "the records", "those exact entries".
var determiners = map[string]bool{
	"the": true, "a": true, "an": true, "my": true, "your": true, "our": true, "their": true,
	"his": true, "her": true, "its": true, "this": true, "that": true, "these": true,
	"those": true, "any": true, "all": true, "every": true, "each": true, "exact": true,
	"specific": true, "stored": true, "saved": true,
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
		if seeVerbs[w] || typoOf(w, seeVerbs) {
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
