package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/store/pgtest"
)

func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codecell.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func TestOpenPragmas(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for _, tc := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "2"}, // FULL
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
	} {
		t.Run(tc.pragma, func(t *testing.T) {
			for name, db := range map[string]*sql.DB{"writer": s.w, "reader": s.r} {
				var got string
				if err := db.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("%s: PRAGMA %s = %s, want %s", name, tc.pragma, got, tc.want)
				}
			}
		})
	}
	if _, err := s.r.ExecContext(ctx, "DELETE FROM executions"); err == nil {
		t.Error("read pool accepted a write")
	}
}

func TestOpenRejectsMemory(t *testing.T) {
	for _, p := range []string{"", ":memory:"} {
		if _, err := Open(p); err == nil {
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func TestMigrationsApplyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	ctx := context.Background()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		s, err := Open(path)
		if err != nil {
			t.Fatalf("open #%d: %v", i, err)
		}
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v != len(ms) {
			t.Errorf("open #%d: version %d, want %d", i, v, len(ms))
		}
		var rows int
		if err := s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != len(ms) {
			t.Errorf("open #%d: %d schema_migrations rows, want %d", i, rows, len(ms))
		}
		if i == 0 {
			if _, err := s.RecordExecution(ctx, Execution{Namespace: "a", Code: "x"}); err != nil {
				t.Fatal(err)
			}
		} else if got, _ := s.ListExecutions(ctx, "a", 0, 0); len(got) != 1 {
			t.Errorf("open #%d: %d executions survive reopen, want 1", i, len(got))
		}
		s.Close()
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	known, _ := s.SchemaVersion(ctx)
	if _, err := s.w.ExecContext(ctx, "INSERT INTO schema_migrations VALUES (?, 'future.sql', 0)", known+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(path)
	var tooNew *SchemaTooNewError
	if !errors.As(err, &tooNew) {
		t.Fatalf("Open = %v, want *SchemaTooNewError", err)
	}
	if tooNew.OnDisk != known+1 || tooNew.Known != known {
		t.Errorf("got %+v, want OnDisk %d Known %d", tooNew, known+1, known)
	}
}

func TestExecutions(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, _ func() (*Store, error)) {
		ctx := context.Background()
		base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var ids []int64
		for i := range 10 {
			e := Execution{
				Namespace: "a", SessionID: "s1", Code: fmt.Sprint("print(", i, ")"),
				StdoutExcerpt: "out", Duration: time.Duration(i+1) * 10 * time.Millisecond,
				ToolCalls: json.RawMessage(`[{"name":"gh.search","ok":true,"duration_ms":1.5}]`), Isolation: "namespaces",
				ToolResultBytes: int64(100 * i), ReturnedBytes: int64(i),
				CreatedAt: base.Add(time.Duration(i) * time.Minute),
			}
			if i >= 7 { // and a second tool, failing once
				e.ToolCalls = json.RawMessage(fmt.Sprintf(`[{"name":"gh.search","ok":true},{"name":"sheets.read","ok":%v},{"ok":false}]`, i != 8))
			}
			if i%3 == 0 {
				e.ErrorType, e.ErrorMessage, e.ErrorTraceback = "ValueError", "bad", "Traceback:\nValueError: bad\n"
			}
			if i == 4 {
				e.ErrorType = "Timeout"
			}
			id, err := s.RecordExecution(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if _, err := s.RecordExecution(ctx, Execution{Namespace: "b", Code: "other"}); err != nil {
			t.Fatal(err)
		}

		t.Run("paging", func(t *testing.T) {
			var got []int64
			before := int64(0)
			for {
				page, err := s.ListExecutions(ctx, "a", before, 3)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				if len(page) > 3 {
					t.Fatalf("page of %d > limit 3", len(page))
				}
				for _, e := range page {
					got = append(got, e.ID)
				}
				before = page[len(page)-1].ID
			}
			if len(got) != len(ids) {
				t.Fatalf("got %d ids, want %d", len(got), len(ids))
			}
			for i := range got {
				if got[i] != ids[len(ids)-1-i] {
					t.Fatalf("order: got %v, want reverse of %v", got, ids)
				}
			}
		})
		t.Run("round trip", func(t *testing.T) {
			page, err := s.ListExecutions(ctx, "a", 0, 1)
			if err != nil || len(page) != 1 {
				t.Fatalf("got %v, %v", page, err)
			}
			e := page[0]
			if e.Namespace != "a" || e.SessionID != "s1" || e.Code != "print(9)" || e.StdoutExcerpt != "out" ||
				e.ErrorType != "ValueError" || e.ErrorMessage != "bad" || e.ErrorTraceback != "Traceback:\nValueError: bad\n" || e.Duration != 100*time.Millisecond ||
				string(e.ToolCalls) != `[{"name":"gh.search","ok":true},{"name":"sheets.read","ok":true},{"ok":false}]` ||
				e.Isolation != "namespaces" || e.ToolResultBytes != 900 || e.ReturnedBytes != 9 ||
				!e.CreatedAt.Equal(base.Add(9*time.Minute)) {
				t.Errorf("round trip: %+v", e)
			}
		})
		t.Run("namespaces", func(t *testing.T) {
			page, err := s.ListExecutions(ctx, "b", 0, 0)
			if err != nil || len(page) != 1 || page[0].Code != "other" || string(page[0].ToolCalls) != "[]" {
				t.Fatalf("namespace b: %+v, %v", page, err)
			}
			page, err = s.ListExecutions(ctx, "nobody", 0, 0)
			if err != nil || len(page) != 0 {
				t.Fatalf("namespace nobody: %+v, %v", page, err)
			}
		})
		t.Run("stats", func(t *testing.T) {
			st, err := s.ExecutionStats(ctx, "a", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			// Failures at i = 0, 3, 6, 9 (ValueError) and 4 (Timeout).
			// Tool calls: gh.search once in each of the 10; at i = 7, 8, 9 also
			// sheets.read (failing at 8) and a nameless failing call.
			want := Stats{Total: 10, OK: 5, Failed: 5, ByErrorType: map[string]int{"ValueError": 4, "Timeout": 1},
				P50: 50 * time.Millisecond, P95: 100 * time.Millisecond, P99: 100 * time.Millisecond,
				ToolCalls: 16, ToolCallErrors: 4,
				TopTools:        []ToolStat{{Name: "gh.search", Calls: 10}, {Name: "sheets.read", Calls: 3, Errors: 1}},
				ToolResultBytes: 4500, ReturnedBytes: 45}
			if !reflect.DeepEqual(st, want) {
				t.Errorf("stats = %+v, want %+v", st, want)
			}
			st, err = s.ExecutionStats(ctx, "a", base.Add(5*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			want = Stats{Total: 5, OK: 3, Failed: 2, ByErrorType: map[string]int{"ValueError": 2},
				P50: 80 * time.Millisecond, P95: 100 * time.Millisecond, P99: 100 * time.Millisecond,
				ToolCalls: 11, ToolCallErrors: 4,
				TopTools:        []ToolStat{{Name: "gh.search", Calls: 5}, {Name: "sheets.read", Calls: 3, Errors: 1}},
				ToolResultBytes: 3500, ReturnedBytes: 35}
			if !reflect.DeepEqual(st, want) {
				t.Errorf("stats since: %+v, want %+v", st, want)
			}
			st, err = s.ExecutionStats(ctx, "empty", time.Time{})
			want = Stats{ByErrorType: map[string]int{}, TopTools: []ToolStat{}}
			if err != nil || !reflect.DeepEqual(st, want) {
				t.Errorf("empty stats: %+v, %v", st, err)
			}
		})
		t.Run("bad input", func(t *testing.T) {
			if _, err := s.RecordExecution(ctx, Execution{}); err == nil {
				t.Error("empty namespace accepted")
			}
			if _, err := s.RecordExecution(ctx, Execution{Namespace: "a", ToolCalls: json.RawMessage("{")}); err == nil {
				t.Error("invalid tool calls JSON accepted")
			}
		})
	})
}

func TestPercentile(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		in   []int64
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{[]int64{7}, 50, 7 * ms},
		{[]int64{7}, 99, 7 * ms},
		{[]int64{1, 2}, 50, 1 * ms},
		{[]int64{1, 2, 3, 4}, 95, 4 * ms},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50, 5 * ms},
	} {
		if got := percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %d) = %v, want %v", tc.in, tc.p, got, tc.want)
		}
	}
	var hundred []int64
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, int64(i))
	}
	for _, p := range []int{50, 95, 99} {
		if got := percentile(hundred, p); got != time.Duration(p)*ms {
			t.Errorf("p%d of 1..100 = %v", p, got)
		}
	}
}

func TestSkills(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, _ func() (*Store, error)) {
		ctx := context.Background()
		for i := 1; i <= 3; i++ {
			sk, err := s.SaveSkill(ctx, Skill{Namespace: "a", Name: "fetch", Description: fmt.Sprint("v", i),
				Tags: []string{"web"}, Code: fmt.Sprint("def fetch(): return ", i)})
			if err != nil {
				t.Fatal(err)
			}
			if sk.Version != i || sk.CreatedAt.IsZero() {
				t.Errorf("save #%d: %+v", i, sk)
			}
		}
		if _, err := s.SaveSkill(ctx, Skill{Namespace: "a", Name: "alpha", Code: "def alpha(): pass"}); err != nil {
			t.Fatal(err)
		}
		// Same name in another namespace numbers from 1 and stays apart.
		if sk, err := s.SaveSkill(ctx, Skill{Namespace: "b", Name: "fetch", Code: "b"}); err != nil || sk.Version != 1 {
			t.Fatalf("namespace b: %+v, %v", sk, err)
		}

		for _, tc := range []struct {
			name, ns, skill string
			version         int
			wantVer         int
			wantErr         error
		}{
			{"latest", "a", "fetch", 0, 3, nil},
			{"pinned", "a", "fetch", 2, 2, nil},
			{"missing version", "a", "fetch", 9, 0, ErrNotFound},
			{"missing name", "a", "nope", 0, 0, ErrNotFound},
			{"other namespace", "b", "fetch", 0, 1, nil},
			{"not visible across namespaces", "b", "alpha", 0, 0, ErrNotFound},
			{"no namespace", "c", "fetch", 0, 0, ErrNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sk, err := s.GetSkill(ctx, tc.ns, tc.skill, tc.version)
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("err = %v, want %v", err, tc.wantErr)
					}
					return
				}
				if err != nil || sk.Version != tc.wantVer || sk.Namespace != tc.ns {
					t.Fatalf("got %+v, %v", sk, err)
				}
			})
		}
		if sk, _ := s.GetSkill(ctx, "a", "fetch", 2); sk.Code != "def fetch(): return 2" || sk.Description != "v2" ||
			len(sk.Tags) != 1 || sk.Tags[0] != "web" {
			t.Errorf("v2 content: %+v", sk)
		}
		if _, err := s.GetSkill(ctx, "a", "fetch", -1); err == nil {
			t.Error("negative version accepted")
		}

		list, err := s.ListSkills(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "fetch" || list[1].Version != 3 || list[0].Tags == nil {
			t.Errorf("ListSkills(a) = %+v", list)
		}
		if list, _ := s.ListSkills(ctx, "b"); len(list) != 1 || list[0].Code != "b" {
			t.Errorf("ListSkills(b) = %+v", list)
		}

		if err := s.DeleteSkill(ctx, "a", "fetch"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSkill(ctx, "a", "fetch"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if _, err := s.GetSkill(ctx, "b", "fetch", 0); err != nil {
			t.Errorf("delete in a removed b's skill: %v", err)
		}
		// After a delete the name starts again at version 1.
		if sk, err := s.SaveSkill(ctx, Skill{Namespace: "a", Name: "fetch", Code: "x"}); err != nil || sk.Version != 1 {
			t.Errorf("save after delete: %+v, %v", sk, err)
		}
		if _, err := s.SaveSkill(ctx, Skill{Namespace: "a"}); err == nil {
			t.Error("empty name accepted")
		}
	})
}

func TestSkillVersionsConcurrent(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, _ func() (*Store, error)) {
		ctx := context.Background()
		const n = 20
		var wg sync.WaitGroup
		vers := make(chan int, n)
		for range n {
			wg.Go(func() {
				sk, err := s.SaveSkill(ctx, Skill{Namespace: "a", Name: "f", Code: "pass"})
				if err != nil {
					t.Error(err)
					return
				}
				vers <- sk.Version
			})
		}
		wg.Wait()
		close(vers)
		seen := map[int]bool{}
		for v := range vers {
			if seen[v] || v < 1 || v > n {
				t.Errorf("version %d duplicated or out of range", v)
			}
			seen[v] = true
		}
	})
}

// cands is a stand-in for package pii's TokenCandidates: ids are hashes of
// the key and the value, 6 then 8 hex digits long.
func cands(kind, value string) func(key []byte) []string {
	return func(key []byte) []string {
		sum := sha256.Sum256(append(append(append([]byte{}, key...), kind...), value...))
		id := hex.EncodeToString(sum[:])
		return []string{"[" + strings.ToUpper(kind) + "_" + id[:6] + "]", "[" + strings.ToUpper(kind) + "_" + id[:8] + "]"}
	}
}

func TestVault(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, _ func() (*Store, error)) {
		ctx := context.Background()
		tok := func(ns, kind, value string) string {
			t.Helper()
			got, err := s.VaultToken(ctx, ns, kind, value, cands(kind, value))
			if err != nil {
				t.Fatalf("VaultToken(%s, %s, %q): %v", ns, kind, value, err)
			}
			return got
		}
		ax := tok("a", "email", "x@example.com")
		ay := tok("a", "email", "y@example.com")
		if ax == ay || !strings.HasPrefix(ax, "[EMAIL_") || len(ax) != len("[EMAIL_123456]") {
			t.Errorf("tokens %s, %s: want two six-digit ids", ax, ay)
		}
		if again := tok("a", "EMAIL", "x@example.com"); again != ax {
			t.Errorf("stable, kind case-insensitive: got %s, want %s", again, ax)
		}
		if by := tok("b", "email", "y@example.com"); by == ay {
			t.Errorf("namespaces a and b gave y the same token %s: keys must differ", by)
		}
		if empty := tok("a", "email", ""); empty == ax { // the empty string is a value like any other
			t.Errorf("empty value got x's token")
		}
		cid := tok("a", "custom_id", "ABC")
		if !strings.HasPrefix(cid, "[CUSTOM_ID_") {
			t.Errorf("custom kind token %s", cid)
		}
		// A collision: a second value whose first candidate is taken gets the
		// next one.
		clash := func(key []byte) []string { return []string{ax, "[EMAIL_abcdef12]"} }
		got, err := s.VaultToken(ctx, "a", "email", "z@example.com", clash)
		if err != nil || got != "[EMAIL_abcdef12]" {
			t.Errorf("collision: got %q, %v; want [EMAIL_abcdef12]", got, err)
		}
		if _, err := s.VaultToken(ctx, "a", "email", "w@example.com", func([]byte) []string { return []string{ax} }); err == nil {
			t.Errorf("every candidate taken: want an error")
		}
		for _, tc := range []struct {
			ns, token, want string
			ok              bool
		}{
			{"a", ax, "x@example.com", true},
			{"a", ay, "y@example.com", true},
			{"a", "[EMAIL_abcdef12]", "z@example.com", true},
			{"b", ax, "", false}, // a's token is not b's
			{"a", "[NOPE_1]", "", false},
		} {
			got, ok, err := s.VaultValue(ctx, tc.ns, tc.token)
			if err != nil || ok != tc.ok || got != tc.want {
				t.Errorf("VaultValue(%s, %s) = %q, %v, %v; want %q, %v", tc.ns, tc.token, got, ok, err, tc.want, tc.ok)
			}
		}
		for _, bad := range []struct{ ns, kind string }{{"", "email"}, {"a", ""}, {"a", "e-mail"}, {"a", "x]"}} {
			if _, err := s.VaultToken(ctx, bad.ns, bad.kind, "v", cands(bad.kind, "v")); err == nil {
				t.Errorf("VaultToken(%q, %q) accepted", bad.ns, bad.kind)
			}
		}
	})
}

func TestConcurrentWrites(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, again func() (*Store, error)) {
		ctx := context.Background()
		start := time.Now()
		// Each execution is one synced commit (synchronous=FULL), so the
		// counts are kept modest: the test is about contention, not disk speed.
		const workers, each, values = 16, 10, 10
		var wg sync.WaitGroup
		var mu sync.Mutex
		tokens := map[string]map[string]bool{} // ns/value -> tokens seen
		for w := range workers {
			wg.Go(func() {
				ns := fmt.Sprint("ns", w%2)
				for i := range each {
					if _, err := s.RecordExecution(ctx, Execution{Namespace: ns, Code: "x", Duration: time.Millisecond}); err != nil {
						t.Error(err)
						return
					}
					v := fmt.Sprintf("user%d@example.com", (w+i)%values)
					tok, err := s.VaultToken(ctx, ns, "email", v, cands("email", v))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if tokens[ns+"/"+v] == nil {
						tokens[ns+"/"+v] = map[string]bool{}
					}
					tokens[ns+"/"+v][tok] = true
					mu.Unlock()
					if _, err := s.ListExecutions(ctx, ns, 0, 5); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		byNS := map[string]map[string]bool{}
		for key, toks := range tokens {
			if len(toks) != 1 {
				t.Errorf("%s got %d tokens: %v", key, len(toks), toks)
			}
			ns := key[:3]
			if byNS[ns] == nil {
				byNS[ns] = map[string]bool{}
			}
			for tok := range toks {
				if byNS[ns][tok] {
					t.Errorf("token %s given to two values in %s", tok, ns)
				}
				byNS[ns][tok] = true
			}
		}
		for ns, toks := range byNS {
			if len(toks) != values {
				t.Errorf("%s: %d tokens for %d values: %v", ns, len(toks), values, toks)
			}
		}
		total := 0
		for _, ns := range []string{"ns0", "ns1"} {
			st, err := s.ExecutionStats(ctx, ns, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			total += st.Total
		}
		if total != workers*each {
			t.Errorf("recorded %d executions, want %d", total, workers*each)
		}

		// A second Store on the same file (another process, in effect) writes
		// alongside the first: busy_timeout and IMMEDIATE transactions make it
		// wait rather than fail.
		t.Logf("%d executions from %d goroutines in %v", workers*each, workers, time.Since(start))
		s2, err := again()
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		for _, st := range []*Store{s, s2} {
			wg.Go(func() {
				for range 50 {
					if _, err := st.VaultToken(ctx, "shared", "email", "z@example.com", cands("email", "z@example.com")); err != nil {
						t.Error(err)
						return
					}
					if _, err := st.RecordExecution(ctx, Execution{Namespace: "shared"}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}

func TestSessionsAndEnvironments(t *testing.T) {
	forBackends(t, func(t *testing.T, s *Store, _ func() (*Store, error)) {
		ctx := context.Background()
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(s.TouchSession(ctx, "a", "s1", t0))
		must(s.TouchSession(ctx, "a", "s2", t0.Add(time.Minute)))
		must(s.TouchSession(ctx, "a", "s1", t0.Add(2*time.Minute)))
		list, err := s.ListSessions(ctx, "a")
		must(err)
		if len(list) != 2 || list[0].ID != "s1" || !list[0].CreatedAt.Equal(t0) || !list[0].LastUsedAt.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("ListSessions = %+v", list)
		}
		if list, _ := s.ListSessions(ctx, "b"); len(list) != 0 {
			t.Errorf("b sees %+v", list)
		}
		if err := s.DeleteSession(ctx, "b", "s1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("b deleted a's session: %v", err)
		}
		// The same id in another namespace is another session.
		must(s.TouchSession(ctx, "b", "s1", t0.Add(3*time.Minute)))
		if list, _ := s.ListSessions(ctx, "a"); len(list) != 2 || !list[0].LastUsedAt.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("b's session changed a's: %+v", list)
		}
		must(s.DeleteSession(ctx, "a", "s1"))
		if list, _ := s.ListSessions(ctx, "b"); len(list) != 1 {
			t.Errorf("deleting a's s1 touched b's: %+v", list)
		}
		must(s.ClearSessions(ctx))
		if list, _ := s.ListSessions(ctx, "a"); len(list) != 0 {
			t.Errorf("after clear: %+v", list)
		}

		if _, ok, err := s.Environment(ctx, "a"); ok || err != nil {
			t.Errorf("unset environment: %v, %v", ok, err)
		}
		must(s.SetEnvironment(ctx, "a", json.RawMessage(`{"python":"3.12"}`)))
		must(s.SetEnvironment(ctx, "a", json.RawMessage(`{"python":"3.13"}`)))
		if c, ok, err := s.Environment(ctx, "a"); !ok || err != nil || string(c) != `{"python":"3.13"}` {
			t.Errorf("Environment(a) = %s, %v, %v", c, ok, err)
		}
		if _, ok, _ := s.Environment(ctx, "b"); ok {
			t.Error("b sees a's environment")
		}
		if err := s.SetEnvironment(ctx, "a", json.RawMessage(`{`)); err == nil {
			t.Error("invalid JSON accepted")
		}
	})
}

// forBackends runs fn once per backend, each time on a new, empty store;
// again opens another Store on the same database (another process or
// replica, in effect). The PostgreSQL run is skipped, saying why, when its
// binaries are absent.
func forBackends(t *testing.T, fn func(t *testing.T, s *Store, again func() (*Store, error))) {
	t.Run("sqlite", func(t *testing.T) {
		s, path := openTest(t)
		fn(t, s, func() (*Store, error) { return Open(path) })
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDB(t)
		s := openPG(t, url, "")
		fn(t, s, func() (*Store, error) { return OpenWith(Options{URL: url}) })
	})
}

// openPG opens the store in the PostgreSQL database url, closed when the
// test ends.
func openPG(t *testing.T, url, replica string) *Store {
	t.Helper()
	s, err := OpenWith(Options{URL: url, Replica: replica})
	if err != nil {
		t.Fatalf("OpenWith(postgres): %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}
