package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// VaultToken returns the token standing for value of kind in ns, such as
// "[EMAIL_3]". The same (ns, kind, value) always gets the same token, and
// the vault persists; a new value gets the next number for its kind in ns.
// kind is case-insensitive and must be letters, digits and underscores.
func (s *Store) VaultToken(ctx context.Context, ns, kind, value string) (string, error) {
	if ns == "" {
		return "", fmt.Errorf("vault token: empty namespace")
	}
	if !validKind(kind) {
		return "", fmt.Errorf("vault token: kind %q must be letters, digits and underscores", kind)
	}
	kind = strings.ToUpper(kind)
	var token string
	// Lookup, numbering and insert share one IMMEDIATE transaction on the
	// single writer, so concurrent callers neither take the same number nor
	// give one value two tokens. The lookup goes through the writer, not
	// the read pool, to see rows committed a moment ago.
	err := s.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT token FROM pii_vault
			WHERE namespace = ? AND kind = ? AND value = ?`, ns, kind, value).Scan(&token)
		if err == nil || !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// Rows are never deleted, so the count is the last number used.
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pii_vault
			WHERE namespace = ? AND kind = ?`, ns, kind).Scan(&n); err != nil {
			return err
		}
		token = fmt.Sprintf("[%s_%d]", kind, n+1)
		_, err = tx.ExecContext(ctx, `INSERT INTO pii_vault (namespace, token, kind, value, created_at)
			VALUES (?, ?, ?, ?, ?)`, ns, token, kind, value, nanos(time.Now()))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("vault token: %w", err)
	}
	return token, nil
}

// VaultValue returns the value that token stands for in ns, and false if
// ns has no such token.
func (s *Store) VaultValue(ctx context.Context, ns, token string) (string, bool, error) {
	var v string
	err := s.r.QueryRowContext(ctx, "SELECT value FROM pii_vault WHERE namespace = ? AND token = ?", ns, token).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("vault value: %w", err)
	}
	return v, true, nil
}

func validKind(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
