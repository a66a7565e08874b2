package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/pii"
	"github.com/codecell/codecell/internal/store"
)

func testGate(t *testing.T, st *store.Store) *Gate {
	t.Helper()
	g, err := New(config.PII{Mode: "tokenize"}, st)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGateJSON: every string and number is tokenized, under its key as a
// label; other numbers keep their exact digits, and keys their order.
func TestGateJSON(t *testing.T) {
	g := testGate(t, nil)
	out, err := g.JSON(context.Background(), "default", []byte(`[{"name":"Ada","email":"ada@example.org","id":9007199254740993,"card":4111111111111111,"ssn":"123456789","n":1.50}]`))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if !pii.IsToken(r["email"].(string)) || !pii.IsToken(r["card"].(string)) || !pii.IsToken(r["ssn"].(string)) {
		t.Errorf("not tokenized: %s", out)
	}
	if !strings.Contains(string(out), `"id":9007199254740993`) || !strings.Contains(string(out), `"n":1.50`) || r["name"] != "Ada" {
		t.Errorf("numbers and names changed: %s", out)
	}
}

// TestZeroGateRefuses: a Gate that New did not make, zero or nil, refuses
// every answer instead of passing it as it is; only a gate made "off"
// passes.
func TestZeroGateRefuses(t *testing.T) {
	ctx := context.Background()
	const addr = "ada@example.org"
	for name, g := range map[string]*Gate{"zero": {}, "nil": nil} {
		if g.Off() {
			t.Errorf("%s gate: Off", name)
		}
		if s, err := g.Text(ctx, "ns", addr); err == nil || s == addr {
			t.Errorf("%s gate: Text %q, %v; want a refusal", name, s, err)
		}
		if b, err := g.JSON(ctx, "ns", []byte(`{"to":"`+addr+`"}`)); err == nil || b != nil {
			t.Errorf("%s gate: JSON %s, %v; want a refusal", name, b, err)
		}
		if b, err := g.Bytes(ctx, "ns", "text/plain", []byte(addr)); err == nil || b != nil {
			t.Errorf("%s gate: Bytes %q, %v; want a refusal", name, b, err)
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: addr}}}
		if out, err := g.Result(ctx, "ns", res); err == nil || out != nil {
			t.Errorf("%s gate: Result %v, %v; want a refusal", name, out, err)
		}
		if err := g.Error(ctx, "ns", errors.New(addr)); !errors.Is(err, ErrWithheld) {
			t.Errorf("%s gate: Error %v; want ErrWithheld", name, err)
		}
		if s := g.Redact(addr); strings.Contains(s, addr) {
			t.Errorf("%s gate: Redact %q", name, s)
		}
	}
	off, err := New(config.PII{Mode: "off"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := off.Text(ctx, "ns", addr); !off.Off() || err != nil || s != addr {
		t.Errorf("a gate made off: Text %q, %v", s, err)
	}
}
