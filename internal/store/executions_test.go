package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSavingsMigration: a database written before 0002 gains the context
// savings columns, and its old rows read as 0.
func TestSavingsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	// A version 1 file, as the codecell before 0002 left it.
	db, err := openPool(path, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
		ms[0].sql,
		`INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 0)`,
		`INSERT INTO executions (namespace, code, duration_ms, created_at) VALUES ('a', 'old', 7, 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.RecordExecution(ctx, Execution{Namespace: "a", Code: "new", ToolResultBytes: 5000, ReturnedBytes: 12}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListExecutions(ctx, "a", 0, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("%+v, %v", got, err)
	}
	if got[0].Code != "new" || got[0].ToolResultBytes != 5000 || got[0].ReturnedBytes != 12 ||
		got[1].Code != "old" || got[1].ToolResultBytes != 0 || got[1].ReturnedBytes != 0 {
		t.Errorf("rows: %+v", got)
	}
	st, err := s.ExecutionStats(ctx, "a", time.Time{})
	if err != nil || st.Total != 2 || st.ToolResultBytes != 5000 || st.ReturnedBytes != 12 {
		t.Errorf("stats: %+v, %v", st, err)
	}
	var nulls int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('executions')
		WHERE name IN ('tool_result_bytes', 'returned_bytes') AND "notnull" = 1 AND dflt_value = '0'`).Scan(&nulls); err != nil {
		t.Fatal(err)
	}
	if nulls != 2 {
		t.Errorf("%d of the new columns are NOT NULL DEFAULT 0, want 2", nulls)
	}
}

// TestTopTools: the most called tools come first, ties by name, at most
// TopToolsLimit; calls that are not objects with a string name count only
// in the totals, and a tool_calls value that is not an array is ignored.
func TestTopTools(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, _ func() (*Store, error)) {
		ctx := context.Background()
		var want []ToolStat
		calls := 0
		for i := range TopToolsLimit + 3 {
			// Tool i is called i+1 times, except that the two last have
			// the same count as their predecessor, to test ties.
			n := min(i+1, TopToolsLimit)
			name := fmt.Sprintf("t%02d", i)
			var list []map[string]any
			for k := range n {
				list = append(list, map[string]any{"name": name, "ok": k != 0, "duration_ms": 1})
			}
			raw, _ := json.Marshal(list)
			if _, err := s.RecordExecution(ctx, Execution{Namespace: "a", ToolCalls: raw}); err != nil {
				t.Fatal(err)
			}
			want = append(want, ToolStat{Name: name, Calls: n, Errors: 1})
			calls += n
		}
		for _, raw := range []string{`[1, "x", {"name": 3}, {"name": null, "ok": true}]`, `{"name": "object", "ok": true}`, `[]`} {
			if _, err := s.RecordExecution(ctx, Execution{Namespace: "a", ToolCalls: json.RawMessage(raw)}); err != nil {
				t.Fatal(err)
			}
		}
		// Most calls first; the four with TopToolsLimit calls by name.
		slices.SortFunc(want, func(a, b ToolStat) int { return cmp.Or(b.Calls-a.Calls, strings.Compare(a.Name, b.Name)) })
		want = want[:TopToolsLimit]

		st, err := s.ExecutionStats(ctx, "a", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if st.ToolCalls != calls+4 || st.ToolCallErrors != TopToolsLimit+3+3 {
			t.Errorf("tool calls %d (%d errors), want %d (%d)", st.ToolCalls, st.ToolCallErrors, calls+4, TopToolsLimit+3+3)
		}
		if !reflect.DeepEqual(st.TopTools, want) {
			t.Errorf("top tools\n got %+v\nwant %+v", st.TopTools, want)
		}
		if st.TopTools[0].Name != "t09" || st.TopTools[3].Name != "t12" || st.TopTools[4].Name != "t08" {
			t.Errorf("order: %+v", st.TopTools)
		}
	})
}

// TestStatsSnapshot: stats taken while executions are being recorded agree
// with themselves: every execution recorded here has one tool call, so the
// tool-call count always equals the execution count.
func TestStatsSnapshot(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, _ func() (*Store, error)) {
		ctx := context.Background()
		done := make(chan error, 1)
		go func() {
			for range 200 {
				if _, err := s.RecordExecution(ctx, Execution{Namespace: "a", ToolCalls: json.RawMessage(`[{"name":"x","ok":true}]`)}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for {
			st, err := s.ExecutionStats(ctx, "a", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if st.ToolCalls != st.Total {
				t.Fatalf("a torn snapshot: %d executions, %d tool calls", st.Total, st.ToolCalls)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				return
			default:
			}
		}
	})
}
