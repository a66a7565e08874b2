package analysis

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestDocsTransformExample runs the transform example of docs/tools.md and
// compares it with the result the page states.
func TestDocsTransformExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "### transform")
	_, rest, ok2 := strings.Cut(rest, "```json\n")
	block, rest, ok3 := strings.Cut(rest, "```")
	_, rest, ok4 := strings.Cut(rest, "gives `")
	want, _, ok5 := strings.Cut(rest, "`")
	if !ok || !ok2 || !ok3 || !ok4 || !ok5 {
		t.Fatal("docs/tools.md: no transform example with its result")
	}
	var call struct {
		Kind   string          `json:"analysis_type"`
		Data   json.RawMessage `json:"data"`
		Params json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(block), &call); err != nil {
		t.Fatal(err)
	}
	res, err := Run(call.Kind, rowsOf(t, string(call.Data)), call.Params)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, res.Result, want)
}
