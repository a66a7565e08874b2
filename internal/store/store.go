package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver
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
//
// With PostgreSQL (OpenWith with a URL) w and r are one pool of several
// connections: the server takes care of concurrent writers, and every
// write that could race with another replica's is a single statement
// guarded by a unique constraint (see SaveSkill and VaultToken), not a
// read followed by a write.
type Store struct {
	w  *sql.DB
	r  *sql.DB
	pg bool // PostgreSQL rather than SQLite: see dialect.go
	// replica names this process among those sharing the database; the
	// session records it writes and clears are its own.
	replica string
	// insertExecution is RecordExecution's statement, prepared once: every
	// execution writes one row, and parsing the INSERT each time was a
	// fifth of the cost of recording it.
	insertExecution *sql.Stmt

	// The execution log's writer (logwriter.go).
	logQueue   chan *logRecord
	logDone    chan struct{}
	logMu      sync.RWMutex // guards logClosed and sends on logQueue against its close
	logClosed  bool
	logQueued  atomic.Int64 // rows handed to the writer, for tests
	logCommits atomic.Int64 // transactions the writer has ended, for tests
}

// Options say which database OpenWith opens.
type Options struct {
	// Path is the SQLite file, used when URL is empty.
	Path string
	// URL, when set, is a PostgreSQL connection URL
	// (postgres://user@host/db?sslmode=...): the store lives there, shared
	// by every replica that names it.
	URL string
	// Replica names this process among the replicas sharing the database
	// (any text; "" for a lone server). Session records are kept per
	// replica, so that one replica starting up does not clear the records
	// of the others' live sessions.
	Replica string
}

// Open opens, creating if needed, the database at path and applies pending
// migrations. path must name a file (not ":memory:"): the two pools must
// share it. It fails with a *SchemaTooNewError if the file was written by a
// newer codecell.
func Open(path string) (*Store, error) {
	return OpenWith(Options{Path: path})
}

// OpenWith opens the store opts name: PostgreSQL when opts.URL is set, else
// the SQLite file at opts.Path. Either way pending migrations are applied
// (by one replica at a time) and a schema newer than this binary is refused
// with a *SchemaTooNewError.
func OpenWith(opts Options) (*Store, error) {
	if opts.URL != "" {
		return openPostgres(opts)
	}
	path := opts.Path
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
	if err := migrate(ctx, w, false); err != nil {
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
	return prepared(ctx, &Store{w: w, r: r, replica: opts.Replica})
}

// prepared prepares s's statements, closing s if that fails.
func prepared(ctx context.Context, s *Store) (*Store, error) {
	insert := insertExecutionSQL
	if s.pg {
		insert += " RETURNING id"
	}
	ins, err := s.w.PrepareContext(ctx, s.q(insert))
	if err != nil {
		s.r.Close()
		s.w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.insertExecution = ins
	s.startLogWriter()
	return s, nil
}

// openPool opens a pool whose every connection gets the same pragmas (they
// are per connection in SQLite, so the DSN is the place for them).
//
// synchronous=FULL, not NORMAL: in WAL mode NORMAL skips the fsync at each
// commit, so a power loss or OS crash can roll back transactions whose
// Exec had already returned. A saved skill or a vault token must survive
// that, so each commit syncs the WAL. (A kill -9 of the process alone
// loses nothing with either setting; FULL is about the machine going
// down.) The execution log's own transactions are the exception: see
// logwriter.go.
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
	s.stopLogWriter()
	return errors.Join(s.insertExecution.Close(), s.r.Close(), s.w.Close())
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// IntegrityCheck runs SQLite's integrity check and returns its verdict,
// "ok" for a sound database. PostgreSQL has no such statement (its checks
// are the operator's: amcheck, pg_checksums); there it reports "ok" when
// the server answers.
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	if s.pg {
		if err := s.Ping(ctx); err != nil {
			return "", fmt.Errorf("integrity check: %w", err)
		}
		return "ok", nil
	}
	var res string
	if err := s.r.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil {
		return "", fmt.Errorf("integrity check: %w", err)
	}
	return res, nil
}
