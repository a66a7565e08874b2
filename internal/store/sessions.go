package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Session is a row of the sessions table: the record of a session, not its
// live interpreter.
type Session struct {
	ID        string
	Namespace string
	// Replica is the replica that runs the session (Options.Replica of
	// the Store that recorded it).
	Replica    string
	CreatedAt  time.Time
	LastUsedAt time.Time
}

// TouchSession records that session id of ns was used at t, creating it if
// new, as a session of this Store's replica. Ids are per namespace and
// replica: the same id in two namespaces is two sessions.
func (s *Store) TouchSession(ctx context.Context, ns, id string, t time.Time) error {
	if ns == "" || id == "" {
		return fmt.Errorf("touch session: empty namespace or id")
	}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO sessions (replica, namespace, id, created_at, last_used_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (replica, namespace, id) DO UPDATE SET last_used_at = excluded.last_used_at`),
		s.replica, ns, id, nanos(t), nanos(t))
	if err != nil {
		return fmt.Errorf("touch session %s: %w", id, err)
	}
	return nil
}

// Replica is the replica name this Store records sessions under
// (Options.Replica).
func (s *Store) Replica() string { return s.replica }

// ClearSessions deletes every session record of this Store's replica: on
// start-up, as no interpreter outlives the process that ran it. Other
// replicas' records are theirs.
func (s *Store) ClearSessions(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, s.q("DELETE FROM sessions WHERE replica = ?"), s.replica); err != nil {
		return fmt.Errorf("clear sessions: %w", err)
	}
	return nil
}

// ListSessions returns the sessions of ns on every replica, most recently
// used first.
func (s *Store) ListSessions(ctx context.Context, ns string) ([]Session, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT id, namespace, replica, created_at, last_used_at FROM sessions
		WHERE namespace = ? ORDER BY last_used_at DESC, id, replica`), ns)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var se Session
		var c, u int64
		if err := rows.Scan(&se.ID, &se.Namespace, &se.Replica, &c, &u); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		se.CreatedAt, se.LastUsedAt = fromNanos(c), fromNanos(u)
		out = append(out, se)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// DeleteSession deletes session id of ns on this Store's replica. It
// returns an error wrapping ErrNotFound if there is no such session.
func (s *Store) DeleteSession(ctx context.Context, ns, id string) error {
	res, err := s.w.ExecContext(ctx, s.q("DELETE FROM sessions WHERE replica = ? AND namespace = ? AND id = ?"), s.replica, ns, id)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("delete session %s: %w", id, ErrNotFound)
	}
	return nil
}

// SetEnvironment stores the environment configuration of ns, a JSON
// document whose shape belongs to the caller, replacing any earlier one.
func (s *Store) SetEnvironment(ctx context.Context, ns string, config json.RawMessage) error {
	if ns == "" {
		return fmt.Errorf("set environment: empty namespace")
	}
	if !json.Valid(config) {
		return fmt.Errorf("set environment: config is not valid JSON")
	}
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO environments (namespace, config) VALUES (?, ?)
		ON CONFLICT (namespace) DO UPDATE SET config = excluded.config`), ns, string(config))
	if err != nil {
		return fmt.Errorf("set environment: %w", err)
	}
	return nil
}

// Environment returns the environment configuration of ns, and false if
// none was set.
func (s *Store) Environment(ctx context.Context, ns string) (json.RawMessage, bool, error) {
	var c string
	err := s.r.QueryRowContext(ctx, s.q("SELECT config FROM environments WHERE namespace = ?"), ns).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("environment: %w", err)
	}
	return json.RawMessage(c), true, nil
}
