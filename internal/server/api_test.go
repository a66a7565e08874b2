package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/store"
)

// asJSON round-trips an API answer through JSON into v, as a client sees it.
func asJSON(t *testing.T, answer any, err error, v any) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func TestAPIExecutions(t *testing.T) {
	s, st, cs := statsServer(t, nil, statsScripts, nil)
	ctx := context.Background()
	api := s.API()
	for _, code := range []string{"ok", "calls", "value", "mixed", "pii"} {
		runTool(t, cs, "execute_code", map[string]any{"code": code})
	}
	for i := range 3 {
		if _, err := st.RecordExecution(ctx, store.Execution{Namespace: "bob", Code: fmt.Sprint("bob", i)}); err != nil {
			t.Fatal(err)
		}
	}

	var all ExecutionsPage
	a, err := api.Executions(ctx, "", 0, 0)
	asJSON(t, a, err, &all)
	var codes []string
	for _, e := range all.Executions {
		codes = append(codes, e.Code)
	}
	if !reflect.DeepEqual(codes, []string{"pii", "mixed", "value", "calls", "ok"}) || all.NextBefore != nil {
		t.Fatalf("default namespace, newest first: %v, next %v", codes, all.NextBefore)
	}
	pii, mixed := all.Executions[0], all.Executions[1]
	if !emailLine.MatchString(pii.Stdout) || pii.ErrorType != "" || pii.DurationMS != 50 || pii.Isolation != "production" ||
		pii.CreatedAt.IsZero() || pii.Result != nil || string(pii.ToolCalls) != "[]" {
		t.Errorf("pii entry: %+v", pii)
	}
	var calls []ToolCall
	if err := json.Unmarshal(mixed.ToolCalls, &calls); err != nil || len(calls) != 2 || calls[0].Name != "fake.fail" {
		t.Errorf("mixed tool calls %s", mixed.ToolCalls)
	}
	if mixed.ErrorType != "ValueError" || mixed.ErrorMessage != "boom" || !strings.HasSuffix(mixed.ErrorTraceback, "\nValueError: boom\n") {
		t.Errorf("mixed entry: %+v", mixed)
	}

	// Pages of two: ids fall, next_before chains them, the last has none.
	var seen []string
	var before int64
	for range 4 {
		var page ExecutionsPage
		a, err := api.Executions(ctx, DefaultNamespace, before, 2)
		asJSON(t, a, err, &page)
		for _, e := range page.Executions {
			seen = append(seen, e.Code)
		}
		if page.NextBefore == nil {
			break
		}
		before = *page.NextBefore
	}
	if !reflect.DeepEqual(seen, codes) {
		t.Errorf("paged: %v, want %v", seen, codes)
	}
	// A page that ends exactly at the last entry has no next.
	var exact ExecutionsPage
	a, err = api.Executions(ctx, "bob", 0, 3)
	asJSON(t, a, err, &exact)
	if len(exact.Executions) != 3 || exact.NextBefore != nil || exact.Executions[0].Code != "bob2" {
		t.Errorf("bob, limit 3: %+v", exact)
	}

	for _, tc := range []struct {
		before int64
		limit  int
		field  string
	}{
		{0, -1, "limit"}, {0, MaxExecutionsLimit + 1, "limit"}, {-5, 10, "before"},
	} {
		_, err := api.Executions(ctx, "", tc.before, tc.limit)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("before %d limit %d: %v, want a field error on %s", tc.before, tc.limit, err, tc.field)
		}
	}
	if _, err := api.Executions(ctx, "", 0, MaxExecutionsLimit); err != nil {
		t.Errorf("limit %d: %v", MaxExecutionsLimit, err)
	}
}

func TestAPIResultField(t *testing.T) {
	s, st, _ := statsServer(t, nil, statsScripts, nil)
	ctx := context.Background()
	for _, r := range []string{`{"a": [1, 2]}`, s.excerpt(`"abcdefghij"`, 4)} {
		if _, err := st.RecordExecution(ctx, store.Execution{Namespace: "r", ResultExcerpt: r}); err != nil {
			t.Fatal(err)
		}
	}
	var page struct {
		Executions []struct {
			Result any `json:"result"`
		} `json:"executions"`
	}
	a, err := s.API().Executions(ctx, "r", 0, 0)
	asJSON(t, a, err, &page)
	if s, ok := page.Executions[0].Result.(string); !ok || len(s) == 0 {
		t.Errorf("a cut result is its excerpt as a string: %#v", page.Executions[0].Result)
	}
	if !reflect.DeepEqual(page.Executions[1].Result, map[string]any{"a": []any{1.0, 2.0}}) {
		t.Errorf("a whole result is its JSON value: %#v", page.Executions[1].Result)
	}
}

func TestAPISkillsStatsUpstreamsSearch(t *testing.T) {
	s, st, cs := statsServer(t, nil, statsScripts, nil)
	ctx := context.Background()
	api := s.API()
	for _, sk := range []store.Skill{
		{Namespace: DefaultNamespace, Name: "fetch", Description: "v1"},
		{Namespace: DefaultNamespace, Name: "fetch", Description: "v2", Tags: []string{"http"}},
		{Namespace: DefaultNamespace, Name: "clean", Description: "c"},
		{Namespace: "bob", Name: "secret", Description: "bob's"},
	} {
		if _, err := st.SaveSkill(ctx, sk); err != nil {
			t.Fatal(err)
		}
	}
	var skills SkillsList
	a, err := api.Skills(ctx, "")
	asJSON(t, a, err, &skills)
	if len(skills.Skills) != 2 || skills.Skills[0].Name != "clean" || skills.Skills[0].Tags == nil ||
		skills.Skills[1].Version != 2 || skills.Skills[1].Description != "v2" || skills.Skills[1].CreatedAt.IsZero() {
		t.Errorf("skills: %+v", skills)
	}

	runTool(t, cs, "execute_code", map[string]any{"code": "value"})
	var stats ExecutionStatsOutput
	a, err = api.Stats(ctx, "", "1h")
	asJSON(t, a, err, &stats)
	res := runTool(t, cs, "get_execution_stats", map[string]any{"since": "1h"})
	var tool ExecutionStatsOutput
	structured(t, res, &tool)
	stats.Since, tool.Since = "", "" // "1h" is relative to each call's now
	if !reflect.DeepEqual(stats, tool) || stats.Total != 1 {
		t.Errorf("stats\n api %+v\ntool %+v", stats, tool)
	}
	if a, err := api.Stats(ctx, "bob", ""); err != nil || a.(ExecutionStatsOutput).Total != 0 {
		t.Errorf("bob's stats: %+v, %v", a, err)
	}
	var fe *FieldError
	if _, err := api.Stats(ctx, "", "yesterday"); !errors.As(err, &fe) || fe.Parameter() != "since" {
		t.Errorf("bad since: %v", err)
	}

	var ups UpstreamsList
	a, err = api.Upstreams(ctx)
	asJSON(t, a, err, &ups)
	if !reflect.DeepEqual(ups.Upstreams, []UpstreamState{{Name: "fake", State: "connected", ToolCount: 2},
		{Name: "gone", State: "failed", Error: "exit status 1"}}) {
		t.Errorf("upstreams: %+v", ups)
	}

	var search SearchToolsOutput
	a, err = api.SearchTools(ctx, "echo", "", "name_only", 0, 0)
	asJSON(t, a, err, &search)
	if search.Total < 1 || search.Tools[0].Name != "fake.echo" || search.Tools[0].Signature != "" {
		t.Errorf("search: %+v", search)
	}
	for _, bad := range []struct{ detail, server, field string }{{"most", "", "detail_level"}, {"", "nope", "server"}} {
		if _, err := api.SearchTools(ctx, "", bad.server, bad.detail, 0, 0); !errors.As(err, &fe) || fe.Field != bad.field {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// readyExec is an Executor whose readiness the test sets.
type readyExec struct {
	pooledExec
	err error
}

func (c *readyExec) Ready() error { return c.err }

func TestAPIReady(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "codecell.db"))
	if err != nil {
		t.Fatal(err)
	}
	exec := &readyExec{pooledExec: pooledExec{scripted(map[string]fakeRun{"pass": {}})}}
	s, _ := newTestServer(t, func(o *Options) { o.Executor, o.Store = exec, st })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.API().Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
	exec.err = errors.New("sandbox manager is closed")
	if err := s.API().Ready(ctx); err == nil || err.Error() != "sandbox: sandbox manager is closed" {
		t.Errorf("closed executor: %v", err)
	}
	exec.err = nil
	st.Close()
	if err := s.API().Ready(ctx); err == nil {
		t.Error("ready with a closed database")
	}

	// Sandboxes that cannot run code: the probe says so.
	broken, _ := newTestServer(t, func(o *Options) { o.Executor = &readyExec{pooledExec: pooledExec{scripted(nil)}} })
	if err := broken.API().Ready(ctx); err == nil || !strings.HasPrefix(err.Error(), "sandbox: the sandbox failed: probe: SandboxError") {
		t.Errorf("broken sandbox: %v", err)
	}
}

// TestSandboxHealth: a probe runs only when no execution has shown the
// sandbox working lately, and a SandboxError makes the next check probe.
func TestSandboxHealth(t *testing.T) {
	var h sandboxHealth
	probes := 0
	ok := &sandbox.Result{OK: true}
	run := func(context.Context) *sandbox.Result { probes++; return ok }
	ctx := context.Background()
	if err := h.check(ctx, run); err != nil || probes != 1 {
		t.Fatalf("first check: %v, %d probes", err, probes)
	}
	h.observe("ValueError", "the code's own error")
	if err := h.check(ctx, run); err != nil || probes != 1 {
		t.Errorf("after an execution that ran: %v, %d probes", err, probes)
	}
	h.observe(sandbox.ErrSandbox, "could not start")
	ok = &sandbox.Result{Error: &sandbox.ExecError{Type: sandbox.ErrSandbox, Message: "still broken"}}
	if err := h.check(ctx, run); err == nil || !strings.Contains(err.Error(), "still broken") || probes != 2 {
		t.Errorf("broken: %v, %d probes", err, probes)
	}
	ok = &sandbox.Result{OK: true}
	if err := h.check(ctx, run); err != nil || probes != 3 {
		t.Errorf("repaired: %v, %d probes", err, probes)
	}
}
