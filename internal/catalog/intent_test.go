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
		{"make a folder named trash", "make a folder named"},
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
