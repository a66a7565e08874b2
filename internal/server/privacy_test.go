package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/gate"
	"github.com/codecell/codecell/internal/pii"
	"github.com/codecell/codecell/internal/store"
)

func testGate(t *testing.T, st *store.Store) *gate.Gate {
	t.Helper()
	g, err := gate.New(config.PII{Mode: "tokenize"}, st)
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
	restored, err := pii.Restore(tokA, g.Vault(ctx, "team-a"))
	if err != nil || restored != "ada@example.org" {
		t.Fatalf("after reopening, team-a: %q %v", restored, err)
	}
	if again, _ := g.Text(ctx, "team-a", "ada@example.org"); again != tokA {
		t.Fatalf("the same value got a new token: %q, was %q", again, tokA)
	}
	// Off: nothing is tokenized.
	off, _ := gate.New(config.PII{Mode: "off"}, st)
	if s, _ := off.Text(ctx, "team-a", "ada@example.org"); s != "ada@example.org" {
		t.Fatalf("pii off: %q", s)
	}
}
