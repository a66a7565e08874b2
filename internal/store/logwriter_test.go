package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestLogGroupCommit holds the database's write lock from another
// connection while executions queue, then lets go: the writer writes the
// batch that waited and then the rest in one transaction, and each caller gets its
// own row's id. Then a row the database refuses, among others, fails only
// its own caller.
func TestLogGroupCommit(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, again func() (*Store, error)) {
		ctx := context.Background()
		type answer struct {
			code string
			id   int64
			err  error
		}
		// queued records rows (nil code: a refused one) while another
		// store holds the lock, and returns what each caller got.
		queued := func(codes ...string) []answer {
			release := holdWriteLock(t, s, again)
			before := s.logQueued.Load()
			answers := make([]answer, len(codes))
			var wg sync.WaitGroup
			for i, code := range codes {
				wg.Go(func() {
					a := &answers[i]
					a.code = code
					if code == "" {
						_, a.err = s.logRow(ctx, []any{"ns"}) // too few values
					} else {
						a.id, a.err = s.RecordExecution(ctx, Execution{Namespace: "ns", Code: code})
					}
				})
			}
			// Wait until every row is with the writer: queued, or in the
			// batch that waits for the lock.
			waitFor(t, fmt.Sprintf("%d rows to reach the writer", len(codes)), func() bool {
				return s.logQueued.Load()-before >= int64(len(codes))
			})
			release()
			wg.Wait()
			return answers
		}

		var codes []string
		for i := range 12 {
			codes = append(codes, fmt.Sprint("code ", i))
		}
		before := s.logCommits.Load()
		answers := queued(codes...)
		if n := s.logCommits.Load() - before; n > 2 {
			t.Errorf("12 executions queued behind a lock took %d transactions; want at most 2 (the batch that waited, then the rest together)", n)
		}
		answers = append(answers, queued("a", "b", "", "c")...)

		byID := map[int64]string{}
		for _, a := range answers {
			switch {
			case a.code == "" && a.err == nil:
				t.Error("a row the database refuses was recorded")
			case a.code != "" && a.err != nil:
				t.Errorf("execution %q: %v (one bad row in a batch must fail only itself)", a.code, a.err)
			case a.code != "":
				if other, dup := byID[a.id]; dup {
					t.Errorf("executions %q and %q both got id %d", other, a.code, a.id)
				}
				byID[a.id] = a.code
			}
		}
		list, err := s.ListExecutions(ctx, "ns", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(byID) {
			t.Errorf("%d executions in the log, want %d", len(list), len(byID))
		}
		for _, e := range list {
			if e.Code != byID[e.ID] {
				t.Errorf("row %d has code %q; its caller recorded %q", e.ID, e.Code, byID[e.ID])
			}
		}
	})
}

// holdWriteLock takes the database's write lock in a transaction of a
// second store on the same database, so that s's log writer waits;
// release lets it go.
func holdWriteLock(t *testing.T, s *Store, again func() (*Store, error)) (release func()) {
	t.Helper()
	ctx := context.Background()
	other, err := again()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := other.w.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE, the write lock
	if err == nil && s.pg {
		_, err = tx.ExecContext(ctx, "LOCK TABLE executions IN EXCLUSIVE MODE")
	}
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := tx.Commit(); err != nil && !errors.Is(err, sql.ErrTxDone) {
				t.Error(err)
			}
			other.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// TestLogLeavesWritesSynced: the log's transactions skip the fsync, and
// every other write on the same connection still syncs afterwards.
func TestLogLeavesWritesSynced(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for range 3 {
		if _, err := s.RecordExecution(ctx, Execution{Namespace: "ns", Code: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var mode int
	if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != 2 {
		t.Errorf("synchronous = %d on the writer after the log's writes; want 2 (FULL)", mode)
	}
}

// TestLogBatchBound: a transaction holds at most maxLogBatch rows. One row
// waits for a held lock; 69 more queue behind it; once the lock goes they
// take at least two more transactions.
func TestLogBatchBound(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	release := holdWriteLock(t, s, func() (*Store, error) { return Open(path) })
	before := s.logCommits.Load()
	var wg sync.WaitGroup
	record := func() {
		wg.Go(func() {
			if _, err := s.RecordExecution(ctx, Execution{Namespace: "ns", Code: "x"}); err != nil {
				t.Error(err)
			}
		})
	}
	record()
	waitFor(t, "the first row taken by the writer", func() bool { return s.logQueued.Load() == 1 && len(s.logQueue) == 0 })
	for range 69 {
		record()
	}
	waitFor(t, "the queue full", func() bool { return len(s.logQueue) == maxLogBatch })
	release()
	wg.Wait()
	if n := s.logCommits.Load() - before; n < 3 {
		t.Errorf("70 rows, one then 69 queued, took %d transactions; want at least 3 (at most %d rows each)", n, maxLogBatch)
	}
	if list, err := s.ListExecutions(ctx, "ns", 0, 100); err != nil || len(list) != 70 {
		t.Errorf("%d rows in the log (%v), want 70", len(list), err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
