// Package catalog is codecell's index of upstream tools and its search.
//
// A Catalog is built once from the tools every upstream server reported
// (New) and is never changed afterwards; when a server's tool list changes,
// the caller builds a new Catalog and swaps it in. A Catalog is therefore safe
// for concurrent use without locks.
//
// New gives each tool its Python identifier (see Ident), unique within its
// server, so that code can write "from servers.everything import get_sum":
// the tool's qualified name is then "everything.get_sum". Lookup accepts that
// name and the original one ("everything.get-sum").
//
// Search ranks tools with BM25F over six fields of each tool: its name split
// into words (snake_case, kebab-case, camelCase and digits), its title, its
// description, the names and the descriptions of its parameters (from the
// input schema's properties, nested ones included) and its server's name.
// Words are lowercased, stop words dropped and suffixes stripped by a small
// stemmer, so that "reading files" matches "read_file". On top of BM25F, a few
// cheap signals, each measured by the evaluation in search_quality_test.go:
//
//   - a small table of general synonyms (file/document, delete/remove,
//     list/show, ...), at half weight and never above the typed word's idf,
//     and a one-way table of related words (lexicon.go);
//   - WordNet's relations of the query's words (wordnet.go, generated from
//     Debian's wordnet-base by gen_wordnet.go): synonyms and derived forms
//     of a word's frequent senses, below the tables' weights, and their
//     hypernyms lower still ("put" is a way to "move"); English words are
//     never read as typos of tool words;
//   - file names ("config.yaml") read as a file and the kind of media its
//     extension names (mediatypes.go, from /etc/mime.types), proper names
//     ("Alice") as a named thing, and a redirection ("> notes.txt") as a
//     request to write;
//   - a word's alternatives (its synonyms; "GitHub" whole or as "git hub")
//     count once, by the best of them;
//   - a bonus for the share of the tool's name words the query asked for, and
//     for the share of the query's words the tool matched;
//   - a bonus for tools of the server that fits the query best as a whole
//     (a query naming "S3" or "Jira" favours that server's tools);
//   - a demotion of tools whose description says they are deprecated;
//   - a shell command line ("ls data", "mkdir -p logs/2026") read as what
//     its command is used for (intent.go: "cat" reads a file, "stat" asks
//     for its metadata, "ls -lS" for sizes), else by the one-line
//     description of its man page (commands.go, generated from the base
//     tools' man pages);
//   - idioms read for what they mean (intent.go): phrasal verbs ("get rid
//     of", "pull up"), a memory verb said of the one asked ("what you
//     remember", "anything stored") as a request to read memory, a verb
//     that severs an edge ("cut the link") as one to delete a relation, a
//     file name as what to show ("print config.yaml") or where something
//     goes ("dump the report to out.md"), a path as a directory, and the
//     name after "named" as no word of the request;
//   - a request that reports a deletion ("note that Dave deleted his
//     account") is not read as one that asks for it; a request that does
//     ask to destroy favours the tools that destroy, by their annotations.
//
// The package knows nothing of MCP sessions or of the code generator; it only
// reads the JSON Schema a tool carries, and tolerates a malformed one. It does
// not protect against a server that stuffs its descriptions with popular
// words to rank first: descriptions are the upstream server's to write.
package catalog
