package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// VaultKeySize is the size in bytes of a namespace's vault key.
const VaultKeySize = 32

// VaultToken returns the token standing for value of kind in ns: the one
// recorded for it, else the first of candidates(key) that no other value of
// ns holds, recorded now. key is ns's vault key, made at random on first
// use and kept; the caller derives the candidates from it (package pii's
// TokenCandidates), so that token ids are keyed hashes of their values.
// The same (ns, kind, value) always gets the same token, and the vault
// persists. kind is case-insensitive and must be letters, digits and
// underscores.
func (s *Store) VaultToken(ctx context.Context, ns, kind, value string, candidates func(key []byte) []string) (string, error) {
	if ns == "" {
		return "", fmt.Errorf("vault token: empty namespace")
	}
	if !validKind(kind) {
		return "", fmt.Errorf("vault token: kind %q must be letters, digits and underscores", kind)
	}
	kind = strings.ToUpper(kind)
	var token string
	// Lookup, key, choice and insert share one IMMEDIATE transaction on
	// the single writer, so concurrent callers neither take the same token
	// nor give one value two. The lookup goes through the writer, not the
	// read pool, to see rows committed a moment ago.
	err := s.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT token FROM pii_vault
			WHERE namespace = ? AND kind = ? AND value = ?`, ns, kind, value).Scan(&token)
		if err == nil || !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		key, err := vaultKey(ctx, tx, ns)
		if err != nil {
			return err
		}
		for _, c := range candidates(key) {
			var taken bool
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pii_vault
				WHERE namespace = ? AND token = ?)`, ns, c).Scan(&taken); err != nil {
				return err
			}
			if taken {
				continue
			}
			token = c
			_, err = tx.ExecContext(ctx, `INSERT INTO pii_vault (namespace, token, kind, value, created_at)
				VALUES (?, ?, ?, ?, ?)`, ns, token, kind, value, nanos(time.Now()))
			return err
		}
		return errVaultFull
	})
	if err != nil {
		return "", fmt.Errorf("vault token: %w", err)
	}
	return token, nil
}

var errVaultFull = errors.New("every candidate token is taken by another value")

// vaultKey returns ns's vault key, making it on first use.
func vaultKey(ctx context.Context, tx *sql.Tx, ns string) ([]byte, error) {
	var key []byte
	err := tx.QueryRowContext(ctx, "SELECT key FROM pii_keys WHERE namespace = ?", ns).Scan(&key)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	key = make([]byte, VaultKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO pii_keys (namespace, key, created_at) VALUES (?, ?, ?)", ns, key, nanos(time.Now()))
	return key, err
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
