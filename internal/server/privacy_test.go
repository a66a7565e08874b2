package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/pii"
	"github.com/codecell/codecell/internal/store"
)

func testGate(t *testing.T, st *store.Store) *Gate {
	t.Helper()
	g, err := NewGate(config.PII{Mode: "tokenize"}, st)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestVaultNamespaces: a token of one namespace is never restored in
// another, and tokens persist in the store.
func TestVaultNamespaces(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "codecell.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	g := testGate(t, st)
	a, err := g.Text(ctx, "team-a", "ping ada@example.org")
	if err != nil || !strings.HasPrefix(a, "ping [EMAIL_") {
		t.Fatalf("team-a: %q %v", a, err)
	}
	tokA := strings.TrimPrefix(a, "ping ")
	b, err := g.Text(ctx, "team-b", "ping bob@example.org")
	if err != nil || !strings.HasPrefix(b, "ping [EMAIL_") {
		t.Fatalf("team-b: %q %v", b, err)
	}
	tokB := strings.TrimPrefix(b, "ping ")
	s := &Server{gate: g}
	args, err := s.arguments(ctx, "team-b", json.RawMessage(`{"to":"`+tokB+`","cc":["`+tokA+`"]}`))
	if err != nil || !strings.Contains(string(args), `"to":"bob@example.org"`) || !strings.Contains(string(args), tokA) || strings.Contains(string(args), "ada@") {
		t.Fatalf("team-b arguments: %s %v", args, err)
	}
	st.Close()
	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g = testGate(t, st)
	restored, err := pii.Restore(tokA, g.vault(ctx, "team-a"))
	if err != nil || restored != "ada@example.org" {
		t.Fatalf("after reopening, team-a: %q %v", restored, err)
	}
	if again, _ := g.Text(ctx, "team-a", "ada@example.org"); again != tokA {
		t.Fatalf("the same value got a new token: %q, was %q", again, tokA)
	}
	// Off: nothing is tokenized.
	off, _ := NewGate(config.PII{Mode: "off"}, st)
	if s, _ := off.Text(ctx, "team-a", "ada@example.org"); s != "ada@example.org" {
		t.Fatalf("pii off: %q", s)
	}
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
