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
	// No transaction and no read-then-write: each statement stands alone,
	// and the unique constraints on (namespace, kind, value) and (namespace,
	// token) decide every race, between goroutines or between replicas. An
	// insert that conflicts inserts nothing (ON CONFLICT DO NOTHING), and
	// what it conflicted with is then read: the value's token if another
	// caller recorded the value first, else the candidate belongs to another
	// value and the next one is tried. The reads go through the writer,
	// whose view of SQLite includes commits made a moment ago.
	token, found, err := s.vaultLookup(ctx, ns, kind, value)
	if err != nil || found {
		return token, err
	}
	key, err := s.vaultKey(ctx, ns)
	if err != nil {
		return "", fmt.Errorf("vault token: %w", err)
	}
	for _, c := range candidates(key) {
		err := s.w.QueryRowContext(ctx, s.q(`INSERT INTO pii_vault (namespace, token, kind, value, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING token`),
			ns, c, kind, value, nanos(time.Now())).Scan(&token)
		if err == nil {
			return token, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("vault token: %w", err)
		}
		if token, found, err := s.vaultLookup(ctx, ns, kind, value); err != nil || found {
			return token, err
		}
	}
	return "", fmt.Errorf("vault token: %w", errVaultFull)
}

// vaultLookup returns the token recorded for value of kind in ns.
func (s *Store) vaultLookup(ctx context.Context, ns, kind, value string) (string, bool, error) {
	var token string
	err := s.w.QueryRowContext(ctx, s.q(`SELECT token FROM pii_vault
		WHERE namespace = ? AND kind = ? AND value = ?`), ns, kind, value).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("vault token: %w", err)
	}
	return token, true, nil
}

var errVaultFull = errors.New("every candidate token is taken by another value")

// vaultKey returns ns's vault key, making it on first use. Two callers
// making it at once both insert; the primary key keeps the first, and both
// read that one back.
func (s *Store) vaultKey(ctx context.Context, ns string) ([]byte, error) {
	var key []byte
	err := s.w.QueryRowContext(ctx, s.q("SELECT key FROM pii_keys WHERE namespace = ?"), ns).Scan(&key)
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
	if _, err := s.w.ExecContext(ctx, s.q(`INSERT INTO pii_keys (namespace, key, created_at) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`), ns, key, nanos(time.Now())); err != nil {
		return nil, err
	}
	err = s.w.QueryRowContext(ctx, s.q("SELECT key FROM pii_keys WHERE namespace = ?"), ns).Scan(&key)
	return key, err
}

// VaultValue returns the value that token stands for in ns, and false if
// ns has no such token.
func (s *Store) VaultValue(ctx context.Context, ns, token string) (string, bool, error) {
	var v string
	err := s.r.QueryRowContext(ctx, s.q("SELECT value FROM pii_vault WHERE namespace = ? AND token = ?"), ns, token).Scan(&v)
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
