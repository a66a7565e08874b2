package catalog

import "testing"

// The rules of intent.go, each on a request of its own (none of the
// paraphrase sets').
func TestRewrite(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"please get rid of the draft", "please delete the draft"},
		{"pull up Carol's entry", "open Carol's entry"},
		{"how big is data.csv", "size info is data.csv"},
		{"what do you know about Initech?", "what do you " + recallWord + " about Initech?"},
		{"everything you've stored", "everything you've " + recallWord},
		{"list my saved contacts", "list my " + recallWord + " contacts"},
		{"remember that Judy likes tea", "remember that Judy likes tea"},
		{"I saved the file", "I saved the file"},
		{"cut the tie between Ann and Bo", "unlink the tie between Ann and Bo"},
		{"remove the edge from Ann to Bo", "remove unlink the edge from Ann to Bo"},
		{"delete the edge but keep both nodes", "delete unlink the edge"},
		{"make a folder named trash", "create a folder named"},
		{"write it down", "note"},
		{"pull that up for me", "open for me"},
		{"opne README.md", "read README.md"},
		{"show me what's inside out.md", "read me read out.md"},
		{"print the summary into out.md", "print the summary into out.md"},
		{"echo hi > out.txt", "echo hi > out.txt"},
		{"open the node for Alice", "open the node for Alice"},
		{"in main.go, change the port to 8080", "in main.go, edit the port to 8080"},
		{"change the port to 8080", "change the port to 8080"},
		{"add two new entities for Bo", "create two new entities for Bo"},
		{"add a note to her entry", "add a note to her entry"},
		{"what's inside src/", "list files in src/"},
		{"which files are in the tmp folder", "list files in the tmp folder"},
		{"whats in go.mod", "read go.mod"},
		{"what is in your head", "what is in your head"},
		{"load the exact records named x", "load the exact entity named"},
		{"what have you got on Initech", "what have you " + recallWord + " on Initech"},
		{"do you have a tool for this", "do you have a tool for this"},
		{"search the knowledge base", "search the knowledge graph"},
	} {
		if got := rewrite(tc.in); got != tc.want {
			t.Errorf("rewrite(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDropReported(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"note that Ivan erased the backups", "note"},
		{"record: Ivan erased the backups", "record:"},
		{"remember Ivan erased the backups", "remember"},
		{"remember she removed it", "remember"},
		{"erase the backups", "erase the backups"},
		{"delete the note that says hi", "delete the note that says hi"},
		{"please make a note that Ivan left", "please make a note"},
	} {
		if got := dropReported(tc.in); got != tc.want {
			t.Errorf("dropReported(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDropTopic(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"search memory for anything about the deleted accounts incident", "search memory for anything about"},
		{"notes about removed users, then delete Bob", "notes about then delete Bob"},
		{"delete Bob", "delete Bob"},
	} {
		if got := dropTopic(tc.in); got != tc.want {
			t.Errorf("dropTopic(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDropQuoted(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		names    int
	}{
		{"find files with 'remove' in their name", "find files with in their name", 0},
		{"strike 'prefers morning meetings' from Carol", "strike from Carol", 0},
		{`open "Acme Corp" and ‘Globex Inc.’`, "open and", 2},
		{"find . -name '*.md'", "find . -name '*.md'", 0},
		{"sed -i 's/v1/v2/' version.txt", "sed -i 's/v1/v2/' version.txt", 0},
		{"'quoted' at the start", "'quoted' at the start", 0},
		{"what's in Sarah's entry", "what's in Sarah's entry", 0},
	} {
		if got, names := dropQuoted(tc.in); got != tc.want || names != tc.names {
			t.Errorf("dropQuoted(%q) = %q, %d, want %q, %d", tc.in, got, names, tc.want, tc.names)
		}
	}
}

func TestTypoOf(t *testing.T) {
	for w, want := range map[string]bool{"shwo": true, "dispaly": true, "show": false, "shop": false, "see": false} {
		if got := typoOf(w, seeVerbs); got != want {
			t.Errorf("typoOf(%q) = %v, want %v", w, got, want)
		}
	}
}

func TestCommandMeaning(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"ls", []string{"-lS", "dir"}, "list directory sizes"},
		{"ls", []string{"-R"}, "directory tree recursive"},
		{"ls", []string{"src"}, "list directory files"},
		{"stat", nil, "file info metadata size modified time permissions"},
		{"sort", nil, commandWords["sort"]},
	} {
		if got, _ := commandMeaning(tc.cmd, tc.args); got != tc.want {
			t.Errorf("commandMeaning(%q, %q) = %q, want %q", tc.cmd, tc.args, got, tc.want)
		}
	}
	if cmd, _ := shellCommand("more about Alice"); cmd != "" {
		t.Errorf("shellCommand(more about Alice) = %q, want no command", cmd)
	}
	if cmd, _ := shellCommand("less notes.txt"); cmd != "less" {
		t.Errorf("shellCommand(less notes.txt) = %q, want less", cmd)
	}
}

func TestFileRoles(t *testing.T) {
	for _, tc := range []struct {
		in             string
		shown, written bool
	}{
		{"print notes.md", true, false},
		{"save the summary to notes.md", false, true},
		{"print the summary into out.txt", false, true},
		{"read notes.md", false, false},
		{"open package.json", true, false},
		{"shwo me notes.txt", true, false},
	} {
		if shown, written := fileRoles(tc.in); shown != tc.shown || written != tc.written {
			t.Errorf("fileRoles(%q) = %v, %v, want %v, %v", tc.in, shown, written, tc.shown, tc.written)
		}
	}
}

func TestIsDirPath(t *testing.T) {
	for w, want := range map[string]bool{
		"src/": true, "/home/me/projects": true, "~/Downloads": true, "logs/2026": true,
		"read/write": false, "file/folder": false, "https://example.com/x": false,
		"src/*.go": false, "docs/a.md": false,
	} {
		if got := isDirPath(w); got != want {
			t.Errorf("isDirPath(%q) = %v, want %v", w, got, want)
		}
	}
}
