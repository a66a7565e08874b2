package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// SchemaTooNewError reports a database whose schema version is newer than
// this binary knows: it was written by a newer codecell, and opening it
// could misread or damage data.
type SchemaTooNewError struct {
	OnDisk int // highest version recorded in the file
	Known  int // highest version this binary embeds
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this codecell supports (%d); upgrade codecell", e.OnDisk, e.Known)
}

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. Files are
// named NNNN_description.sql; versions must run 1, 2, 3... without gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", base)
		}
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the pending migrations, each in its own transaction
// together with its schema_migrations row, so a crash leaves the schema at
// a whole version. The version is re-read inside each transaction, which
// two processes cannot run at once (SQLite's IMMEDIATE transactions; an
// advisory lock in PostgreSQL, where DDL is transactional too), so
// replicas opening a new database at once do not apply a migration twice.
func migrate(ctx context.Context, db *sql.DB, pg bool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	dialect := func(s string) string { return s }
	bind := func(s string) string { return s }
	if pg {
		dialect = pgSchema
		bind = (&Store{pg: true}).q
	}
	// inTx runs fn in a transaction that, in PostgreSQL, first waits for
	// the migration lock (released at commit or rollback).
	inTx := func(fn func(*sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if pg {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
				return fmt.Errorf("take the migration lock: %w", err)
			}
		}
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit()
	}
	err = inTx(func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, dialect(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`))
		return err
	})
	if err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range ms {
		err := inTx(func(tx *sql.Tx) error {
			var cur int
			if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&cur); err != nil {
				return err
			}
			if cur > len(ms) {
				return &SchemaTooNewError{OnDisk: cur, Known: len(ms)}
			}
			if cur >= m.version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, dialect(m.sql)); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if _, err := tx.ExecContext(ctx, bind("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"),
				m.version, m.name, nanos(time.Now())); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// SchemaVersion returns the highest migration version applied to the file.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v)
	return v, err
}
