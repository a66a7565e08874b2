package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestTaskRecords: a task is its namespace's only, gone once its TTL
// passes, takes the first answer to each question, does not change once
// terminal, and a replica's restart fails its own tasks and no other's.
func TestTaskRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	a, err := OpenWith(Options{Path: path, Replica: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenWith(Options{Path: path, Replica: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	now := time.Now()
	for _, tk := range []struct {
		st  *Store
		id  string
		ttl time.Duration
	}{{a, "t1", time.Hour}, {a, "old", time.Millisecond}, {b, "t2", time.Hour}} {
		if err := tk.st.CreateTask(ctx, Task{ID: tk.id, Namespace: "ns", Tool: "execute_code", Status: TaskWorking, CreatedAt: now, TTL: tk.ttl}); err != nil {
			t.Fatal(err)
		}
	}
	later := now.Add(time.Second)
	if _, err := a.GetTask(ctx, "other", "t1", later); !errors.Is(err, ErrNotFound) {
		t.Errorf("another namespace reads the task: %v", err)
	}
	if _, err := a.GetTask(ctx, "ns", "old", later); !errors.Is(err, ErrNotFound) {
		t.Errorf("an expired task reads: %v", err)
	}
	if list, err := b.ListTasks(ctx, "ns", later, 10); err != nil || len(list) != 2 {
		t.Errorf("ListTasks: %d tasks, %v; want t1 and t2", len(list), err)
	}
	if err := b.SetTaskInputResponses(ctx, "other", "t1", map[string]json.RawMessage{"q": json.RawMessage(`1`)}); !errors.Is(err, ErrNotFound) {
		t.Errorf("another namespace answers the task: %v", err)
	}
	b.SetTaskInputResponses(ctx, "ns", "t1", map[string]json.RawMessage{"q": json.RawMessage(`"first"`)})
	b.SetTaskInputResponses(ctx, "ns", "t1", map[string]json.RawMessage{"q": json.RawMessage(`"second"`), "r": json.RawMessage(`2`)})
	if err := b.RequestTaskCancel(ctx, "ns", "t1"); err != nil {
		t.Fatal(err)
	}
	got, cancel, err := a.TakeTaskInputResponses(ctx, "t1")
	if err != nil || string(got["q"]) != `"first"` || string(got["r"]) != `2` || !cancel {
		t.Errorf("taken %v, cancel %v, %v", got, cancel, err)
	}
	if got, _, _ := a.TakeTaskInputResponses(ctx, "t1"); got != nil {
		t.Errorf("answers taken twice: %v", got)
	}
	msg := "done"
	if err := a.UpdateTask(ctx, "t1", TaskUpdate{Status: TaskCompleted, StatusMessage: &msg, Outcome: json.RawMessage(`{}`)}, later); err != nil {
		t.Fatal(err)
	}
	if err := a.UpdateTask(ctx, "t1", TaskUpdate{Status: TaskWorking}, later); !errors.Is(err, ErrNotFound) {
		t.Errorf("a terminal task changed: %v", err)
	}
	if n, err := b.FailReplicaTasks(ctx, "restarted", later); err != nil || n != 1 {
		t.Errorf("FailReplicaTasks: %d, %v; want t2 alone", n, err)
	}
	if tk, _ := a.GetTask(ctx, "ns", "t1", later); tk.Status != TaskCompleted {
		t.Errorf("another replica's restart changed t1: %s", tk.Status)
	}
	if err := a.DeleteExpiredTasks(ctx, later); err != nil {
		t.Fatal(err)
	}
	if list, _ := a.ListTasks(ctx, "ns", now, 10); len(list) != 2 {
		t.Errorf("the sweep left %d tasks, want 2 (old deleted)", len(list))
	}
}
