package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/store"
)

// TestKill9Durability is the README's promise ("State that lasts": a kill -9
// loses at most the executions in flight), end to end: while executions,
// workspace writes and skill saves run, the server is killed with SIGKILL.
// The database then opens cleanly and passes an integrity check, no
// workspace file is half written (every file holds one whole version, and
// no temporary file is left visible), every skill whose save returned is
// there after a restart, and the log holds every execution that returned.
func TestKill9Durability(t *testing.T) {
	requireProduction(t)
	// The answer budget off: list_skills lists every one of the ~100 skills
	// saved, which the budget would cut (what it checks is durability).
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 2, "timeout": "20s", "answerBudget": 0}}`)
	start := func() (*mcp.ClientSession, *exec.Cmd) {
		cmd := exec.Command(binary, "serve", "--config", cfgPath, "--data-dir", dataDir, "--log-level", "warn")
		cmd.Stderr = os.Stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs, cmd
	}
	cs, cmd := start()

	var mu sync.Mutex
	var returnedExecs []string // markers of executions whose result came back
	var savedSkills []string   // skills whose save returned
	stop := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(f func(i int) bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if !f(i) {
					return
				}
			}
		}()
	}
	ctx := context.Background()
	for w := 0; w < 2; w++ {
		loop(func(i int) bool {
			marker := fmt.Sprintf("exec-%d-%d", w, i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{
				"code": fmt.Sprintf("# %s\nprint(%q)", marker, marker)}})
			if err != nil || res.IsError {
				return false // the server is gone
			}
			mu.Lock()
			returnedExecs = append(returnedExecs, marker)
			mu.Unlock()
			return true
		})
	}
	// Each write replaces one of a few files with 256 KiB of one letter and
	// a trailer naming it: a torn write shows as mixed letters or no trailer.
	loop(func(i int) bool {
		letter := string(rune('a' + i%26))
		content := strings.Repeat(letter, 256<<10) + "\nend " + letter + "\n"
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_workspace_file", Arguments: map[string]any{
			"path": fmt.Sprintf("data/file%d.txt", i%3), "content": content}})
		return err == nil && !res.IsError
	})
	loop(func(i int) bool {
		name := fmt.Sprintf("skill_%d", i)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "save_skill", Arguments: map[string]any{
			"name": name, "description": "durability", "code": fmt.Sprintf("def f():\n    return %d\n", i)}})
		if err != nil || res.IsError {
			return false
		}
		mu.Lock()
		savedSkills = append(savedSkills, name)
		mu.Unlock()
		return true
	})

	time.Sleep(3 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	cs.Close()
	mu.Lock()
	execs, skills := append([]string{}, returnedExecs...), append([]string{}, savedSkills...)
	mu.Unlock()
	if len(execs) < 5 || len(skills) < 2 {
		t.Fatalf("too little ran before the kill to test anything: %d executions, %d skills", len(execs), len(skills))
	}
	t.Logf("killed after %d executions and %d skill saves had returned", len(execs), len(skills))

	// The database opens and is intact, and holds every returned execution.
	db, err := store.Open(filepath.Join(dataDir, "codecell.db"))
	if err != nil {
		t.Fatalf("database after kill -9: %v", err)
	}
	if res, err := db.IntegrityCheck(ctx); err != nil || res != "ok" {
		t.Fatalf("integrity check: %q %v", res, err)
	}
	logged := map[string]bool{}
	for before := int64(0); ; {
		page, err := db.ListExecutions(ctx, "default", before, store.MaxListLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			logged[strings.TrimPrefix(strings.SplitN(e.Code, "\n", 2)[0], "# ")] = true
		}
		before = page[len(page)-1].ID
	}
	db.Close()
	for _, m := range execs {
		if !logged[m] {
			t.Errorf("execution %s returned but is not in the log", m)
		}
	}

	// After a restart every returned skill is listed and loads, and the
	// workspace holds whole files only: the first use of the workspace
	// removes what unfinished writes left.
	cs, _ = start()
	defer cs.Close()
	if res, _ := callTool(t, cs, "list_workspace_files", map[string]any{}); res.IsError {
		t.Fatal(textOf(res))
	}
	ws := filepath.Join(dataDir, "workspaces", "default")
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		if !strings.HasPrefix(rel, "data/file") {
			t.Errorf("stray file in the workspace after the kill: %s", rel)
			return nil
		}
		b, _ := os.ReadFile(p)
		s := string(b)
		if len(s) == 0 || s != strings.Repeat(s[:1], 256<<10)+"\nend "+s[:1]+"\n" {
			t.Errorf("%s is torn: %d bytes", rel, len(s))
		}
		return nil
	})

	_, list := callTool(t, cs, "list_skills", map[string]any{})
	have := toJSON(list)
	for _, name := range skills {
		if !strings.Contains(have, `"`+name+`"`) {
			t.Errorf("skill %s was saved before the kill but is not listed", name)
		}
	}
	last := skills[len(skills)-1]
	if _, out := call(t, cs, map[string]any{"code": fmt.Sprintf("from skills.%s import f\nf()", last)}); !out.OK {
		t.Errorf("import %s after restart: %+v", last, out.Error)
	}
}
