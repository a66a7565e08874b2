package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/pii"
	"github.com/codecell/codecell/internal/store"
)

// TestVaultNamespaces: a token of one namespace is never restored in
// another, and tokens persist in the store.
func TestVaultNamespaces(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "codecell.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	det, err := pii.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &privacy{det: det, store: st}
	a, err := p.text(ctx, "team-a", "ping ada@example.org")
	if err != nil || a != "ping [EMAIL_1]" {
		t.Fatalf("team-a: %q %v", a, err)
	}
	b, err := p.text(ctx, "team-b", "ping bob@example.org")
	if err != nil || b != "ping [EMAIL_1]" {
		t.Fatalf("team-b: %q %v", b, err)
	}
	args, err := p.arguments(ctx, "team-b", json.RawMessage(`{"to":"[EMAIL_1]","cc":["[EMAIL_2]"]}`))
	if err != nil || !strings.Contains(string(args), `"to":"bob@example.org"`) || !strings.Contains(string(args), `[EMAIL_2]`) || strings.Contains(string(args), "ada@") {
		t.Fatalf("team-b arguments: %s %v", args, err)
	}
	st.Close()
	st, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p = &privacy{det: det, store: st}
	restored, err := pii.Restore("[EMAIL_1]", p.vault(ctx, "team-a"))
	if err != nil || restored != "ada@example.org" {
		t.Fatalf("after reopening, team-a: %q %v", restored, err)
	}
	if again, _ := p.text(ctx, "team-a", "ada@example.org"); again != "[EMAIL_1]" {
		t.Fatalf("the same value got a new token: %q", again)
	}
	// Off: nothing is tokenized.
	off := &privacy{store: st}
	if s, _ := off.text(ctx, "team-a", "ada@example.org"); s != "ada@example.org" {
		t.Fatalf("pii off: %q", s)
	}
}

func TestJSONValueTokenizes(t *testing.T) {
	det, err := pii.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &privacy{det: det}
	type row struct {
		Name  string `json:"name"`
		Email string `json:"email"`
		ID    int64  `json:"id"`
	}
	got, err := p.jsonValue(context.Background(), "default", []row{{"Ada", "ada@example.org", 9007199254740993}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if string(b) != `[{"email":"[EMAIL_1]","id":9007199254740993,"name":"Ada"}]` {
		t.Fatalf("%s", b)
	}
}
