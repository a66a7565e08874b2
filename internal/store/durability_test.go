package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// childDBEnv switches the test binary into the writer child of
// TestDurabilityKill9. Reading the environment here, outside config, is the
// standard re-exec pattern for tests and touches no product code.
const childDBEnv = "CODECELL_STORE_TEST_CHILD_DB"

// TestDurabilityChild is the child: it records executions until killed,
// printing each id after RecordExecution returns. os.Stdout is unbuffered,
// so a printed id was committed before the parent could read it.
func TestDurabilityChild(t *testing.T) {
	path := os.Getenv(childDBEnv)
	if path == "" {
		t.Skip("only runs as the child of TestDurabilityKill9")
	}
	s, err := Open(path)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		id, err := s.RecordExecution(ctx, Execution{Namespace: "dur", Code: fmt.Sprint("n = ", i),
			StdoutExcerpt: fmt.Sprint(i), Duration: time.Millisecond})
		if err != nil {
			fmt.Println("record:", err)
			os.Exit(2)
		}
		// Vault and skill writes too, so the kill can land inside any
		// kind of transaction.
		if i%5 == 0 {
			if _, err := s.VaultToken(ctx, "dur", "email", fmt.Sprint(i, "@example.com"), cands("email", fmt.Sprint(i, "@example.com"))); err != nil {
				fmt.Println("vault:", err)
				os.Exit(2)
			}
		}
		if i%7 == 0 {
			if _, err := s.SaveSkill(ctx, Skill{Namespace: "dur", Name: "f", Code: "pass"}); err != nil {
				fmt.Println("skill:", err)
				os.Exit(2)
			}
		}
		fmt.Println(id)
	}
}

// TestDurabilityKill9 kills a writing child with SIGKILL and checks that
// the file reopens cleanly with every execution the child saw committed.
func TestDurabilityKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	for round := range 3 {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dur.db")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDurabilityChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childDBEnv+"="+path)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Kill after a varying number of commits so the kill lands at
			// different points.
			killAfter := 150 + round*137
			var committed []int64
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				id, err := strconv.ParseInt(sc.Text(), 10, 64)
				if err != nil {
					t.Errorf("child: %s", sc.Text())
					continue
				}
				committed = append(committed, id)
				if len(committed) == killAfter {
					if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
				}
			}
			err = cmd.Wait()
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die by SIGKILL: %v", err)
			}
			if len(committed) < killAfter {
				t.Fatalf("child committed only %d executions before exiting", len(committed))
			}

			s, err := Open(path)
			if err != nil {
				t.Fatalf("reopen after kill -9: %v", err)
			}
			defer s.Close()
			var check string
			if err := s.w.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
				t.Fatalf("integrity_check = %q, %v", check, err)
			}
			present := map[int64]bool{}
			for before := int64(0); ; {
				page, err := s.ListExecutions(ctx, "dur", before, MaxListLimit)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				for _, e := range page {
					present[e.ID] = true
				}
				before = page[len(page)-1].ID
			}
			for _, id := range committed {
				if !present[id] {
					t.Errorf("execution %d was committed but is missing after kill -9", id)
				}
			}
			t.Logf("%d committed, %d present", len(committed), len(present))
			// The reopened file takes writes again.
			if _, err := s.RecordExecution(ctx, Execution{Namespace: "dur"}); err != nil {
				t.Errorf("write after reopen: %v", err)
			}
		})
	}
}
