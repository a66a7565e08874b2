package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// ErrNotFound is returned when the asked-for row does not exist in the
// caller's namespace.
var ErrNotFound = errors.New("store: not found")

// busyTimeout bounds how long a statement waits for a lock held by another
// connection (another process opening the same file, or a WAL checkpoint)
// before it fails with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// Store is codecell's database. It is safe for concurrent use by many
// goroutines.
//
// It holds two pools on the same file. w is the only writer: one connection
// (SetMaxOpenConns(1)), so writes from this process queue in database/sql
// instead of racing for SQLite's single write lock and failing with
// SQLITE_BUSY, and read-then-write transactions (next skill version, next
// vault token) need no retry loop. Its transactions begin IMMEDIATE so that
// a second process on the same file waits (busy_timeout) at BEGIN rather
// than failing at its first write. r is a read pool of several connections
// with query_only set: under WAL, readers see the last committed state and
// neither block the writer nor wait for it, so listing executions or stats
// do not queue behind a burst of writes.
type Store struct {
	w *sql.DB
	r *sql.DB
	// insertExecution is RecordExecution's statement, prepared once: every
	// execution writes one row, and parsing the INSERT each time was a
	// fifth of the cost of recording it.
	insertExecution *sql.Stmt
}

// Open opens, creating if needed, the database at path and applies pending
// migrations. path must name a file (not ":memory:"): the two pools must
// share it. It fails with a *SchemaTooNewError if the file was written by a
// newer codecell.
func Open(path string) (*Store, error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("open store: path must name a file, got %q", path)
	}
	w, err := openPool(path, true)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	// The one connection is kept for the life of the Store: reopening it
	// would cost a schema parse per write.
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if mode != "wal" {
		w.Close()
		return nil, fmt.Errorf("open store %s: journal mode is %q, want wal", path, mode)
	}
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}

	r, err := openPool(path, false)
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open store %s: read pool: %w", path, err)
	}
	ins, err := w.PrepareContext(ctx, insertExecutionSQL)
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return &Store{w: w, r: r, insertExecution: ins}, nil
}

// openPool opens a pool whose every connection gets the same pragmas (they
// are per connection in SQLite, so the DSN is the place for them).
//
// synchronous=FULL, not NORMAL: in WAL mode NORMAL skips the fsync at each
// commit, so a power loss or OS crash can roll back transactions whose
// Exec had already returned. SPEC §9 promises that only executions in
// flight are lost, and callers treat a returned RecordExecution or SaveSkill
// as durable, so each commit syncs the WAL. The cost is one fsync per write,
// small beside the cost of running the code being recorded. (A kill -9 of
// the process alone loses nothing with either setting; FULL is about the
// machine going down.)
func openPool(path string, writer bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	if writer {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return db, nil
}

// Close closes both pools. It waits for statements in progress; the Store
// must not be used afterwards.
func (s *Store) Close() error {
	return errors.Join(s.insertExecution.Close(), s.r.Close(), s.w.Close())
}

// tx runs fn inside a write transaction, committing if fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// IntegrityCheck runs SQLite's integrity check and returns its verdict,
// "ok" for a sound database.
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	var res string
	if err := s.r.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil {
		return "", fmt.Errorf("integrity check: %w", err)
	}
	return res, nil
}
