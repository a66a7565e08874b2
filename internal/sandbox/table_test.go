package sandbox

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestResultTable: the host takes a result's table only in the shape and
// bounds it expects; the runner is the sandbox's, so a table may be
// anything the code wrote into a result frame.
func TestResultTable(t *testing.T) {
	frame := func(table string) *resultFrame {
		var f resultFrame
		if err := json.Unmarshal([]byte(`{"ok": true, "result": {"kind": "repr", "value": "x", "table": `+table+`}}`), &f); err != nil {
			t.Fatal(err)
		}
		return &f
	}
	if got := frame(`{"columns": ["a"], "index": [0], "data": [[1]]}`).table(); got == nil || len(got.Data) != 1 {
		t.Fatalf("a table: %+v", got)
	}
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	big := `{"columns": ["a"], "index": [0], "data": [["` + strings.Repeat("x", maxTable) + `"]]}`
	for name, table := range map[string]string{
		"no data":          `{"columns": ["a"]}`,
		"not an object":    `[1, 2]`,
		"data not rows":    `{"data": [1, 2]}`,
		"a cell too deep":  `{"columns": [], "index": [0], "data": [[` + deep + `]]}`,
		"columns too deep": `{"columns": [` + deep + `], "index": [], "data": []}`,
		"past maxTable":    big,
		"null":             `null`,
	} {
		if got := frame(table).table(); got != nil {
			t.Errorf("%s: taken as %+v", name, got)
		}
	}
}
