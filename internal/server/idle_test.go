package server

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestTrimWhenIdle: memory is handed back once per burst of executions,
// only after the last one ended, never while one runs. It runs in a
// synctest bubble: the ticker, the sleeps and activity's clock are the
// bubble's fake time, so it takes no real time and cannot lose a race with
// a slow machine.
func TestTrimWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var trims atomic.Int32
		old := freeOSMemory
		freeOSMemory = func() { trims.Add(1) }
		t.Cleanup(func() { freeOSMemory = old })
		s := &Server{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go s.TrimWhenIdle(ctx)

		s.activity.begin() // running: no trim however long it takes
		time.Sleep(idleAfter + idleAfter/2)
		if n := trims.Load(); n != 0 {
			t.Fatalf("%d trims while an execution ran", n)
		}
		s.activity.end()
		waitFor(t, 10*time.Second, "condition not met within 10 s", func() bool { return trims.Load() == 1 })
		time.Sleep(idleAfter) // no new burst: no new trim
		if n := trims.Load(); n != 1 {
			t.Fatalf("%d trims after one burst", n)
		}
		s.activity.begin()
		s.activity.end()
		waitFor(t, 10*time.Second, "condition not met within 10 s", func() bool { return trims.Load() == 2 })
	})
}

// TestOutputSchemasLean: tools' output schemas carry no field descriptions,
// their input schemas keep them.
func TestOutputSchemasLean(t *testing.T) {
	_, _, cs := statsServer(t, nil, nil, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if n := descriptions(tool.OutputSchema); tool.OutputSchema == nil || n > 0 {
			t.Errorf("%s: output schema with %d descriptions", tool.Name, n)
		}
		if props, _ := tool.InputSchema.(map[string]any)["properties"].(map[string]any); len(props) > 0 && descriptions(tool.InputSchema) < len(props) {
			t.Errorf("%s: input fields without descriptions", tool.Name)
		}
	}
}

// descriptions counts the description keywords in a JSON schema (a key
// "description" with a string value; a property named description has an
// object).
func descriptions(schema any) int {
	b, _ := json.Marshal(schema)
	var v any
	json.Unmarshal(b, &v)
	var count func(v any) int
	count = func(v any) int {
		n := 0
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if _, ok := sub.(string); ok && k == "description" {
					n++
				}
				n += count(sub)
			}
		case []any:
			for _, sub := range v {
				n += count(sub)
			}
		}
		return n
	}
	return count(v)
}
