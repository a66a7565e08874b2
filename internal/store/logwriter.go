package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"
)

// The execution log's writer: one goroutine owns every INSERT into
// executions, and writes what has queued while it was busy as one
// transaction (a group commit).
//
// Three costs of recording an execution led here (issue 16):
//
//   - Each commit was a WAL write and an fsync: concurrent executions now
//     share one transaction.
//   - The fsync (synchronous=FULL) took 0.7 to 0.9 ms of each execution's
//     latency on this kind of machine, a quarter of a trivial execution's.
//     The log's transactions run with synchronous=NORMAL instead: in WAL
//     mode a commit is then written but not synced. That keeps the
//     promise the log makes (a kill -9 of codecell loses at most the
//     executions in flight: what is written to the WAL is the kernel's),
//     and an OS crash or power loss can lose the log's last rows, those
//     written since the WAL was last synced (by a checkpoint, or by any
//     other write: skills, the vault and the rest stay synchronous=FULL).
//     PostgreSQL commits as its server is configured.
//   - modernc's SQLite runs deep in Go stacks: each request's goroutine
//     grew its stack to record its execution (a tenth of the server's CPU
//     went to copying stacks); this goroutine's stack has grown once.
//
// A caller returns once its row is committed. One execution alone is
// written in a transaction of its own, with no wait for company.

// maxLogBatch bounds the rows of one transaction.
const maxLogBatch = 64

// logBatchTimeout bounds one batch's writes; a caller gives up sooner if
// its own context ends.
const logBatchTimeout = time.Minute

// logRecord is one execution on its way into the log.
type logRecord struct {
	args []any // insertExecutionSQL's arguments
	id   int64
	err  error
	done chan struct{} // closed once id or err is set
}

// startLogWriter starts s's writer; stopLogWriter ends it.
func (s *Store) startLogWriter() {
	s.logQueue = make(chan *logRecord, maxLogBatch)
	s.logDone = make(chan struct{})
	go s.writeLog()
}

// stopLogWriter lets the writer finish what is queued, then waits for it.
func (s *Store) stopLogWriter() {
	s.logMu.Lock()
	if !s.logClosed {
		s.logClosed = true
		close(s.logQueue)
	}
	s.logMu.Unlock()
	<-s.logDone
}

func (s *Store) writeLog() {
	defer close(s.logDone)
	batch := make([]*logRecord, 0, maxLogBatch)
	for first := range s.logQueue {
		batch = append(batch[:0], first)
	more:
		for len(batch) < maxLogBatch {
			select {
			case r, ok := <-s.logQueue:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		s.writeBatch(batch)
		for _, r := range batch {
			close(r.done)
		}
	}
}

// writeBatch writes batch in one transaction. If that fails (a row the
// database refuses aborts a PostgreSQL transaction), each row is written
// on its own, so that one bad row fails only its own execution.
func (s *Store) writeBatch(batch []*logRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), logBatchTimeout)
	defer cancel()
	conn, err := s.logConn(ctx)
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	defer s.releaseLogConn(conn)
	if len(batch) > 1 && s.insertTogether(ctx, conn, batch) == nil {
		s.logCommits.Add(1)
		return
	}
	for _, r := range batch {
		if r.err = s.insertTogether(ctx, conn, []*logRecord{r}); r.err != nil {
			r.id = 0
		}
		s.logCommits.Add(1)
	}
}

// logConn takes the writer's connection for the log's transactions, with
// SQLite's commits written but not synced (see above). Other writes wait
// for releaseLogConn, which restores synchronous=FULL.
func (s *Store) logConn(ctx context.Context) (*sql.Conn, error) {
	conn, err := s.w.Conn(ctx)
	if err != nil || s.pg {
		return conn, err
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
		s.releaseLogConn(conn)
		return nil, err
	}
	return conn, nil
}

func (s *Store) releaseLogConn(conn *sql.Conn) {
	if !s.pg {
		ctx, cancel := context.WithTimeout(context.Background(), logBatchTimeout)
		defer cancel()
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=FULL"); err != nil {
			// Never hand other writes a connection that does not sync:
			// the pool drops this one and opens another with the DSN's
			// pragmas.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	conn.Close()
}

func (s *Store) insertTogether(ctx context.Context, conn *sql.Conn, batch []*logRecord) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit, a no-op
	ins := tx.StmtContext(ctx, s.insertExecution)
	for _, r := range batch {
		if s.pg {
			if err := ins.QueryRowContext(ctx, r.args...).Scan(&r.id); err != nil {
				return err
			}
			continue
		}
		res, err := ins.ExecContext(ctx, r.args...)
		if err != nil {
			return err
		}
		if r.id, err = res.LastInsertId(); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// logRow queues one row for the writer and waits until it is committed
// or ctx ends. After ctx ends the row may still be written.
func (s *Store) logRow(ctx context.Context, args []any) (int64, error) {
	r := &logRecord{args: args, done: make(chan struct{})}
	// The read lock keeps the queue open while this sends; the writer
	// drains it meanwhile, so Close waits at most for the queue.
	s.logMu.RLock()
	if s.logClosed {
		s.logMu.RUnlock()
		return 0, errStoreClosed
	}
	select {
	case s.logQueue <- r:
		s.logQueued.Add(1)
	case <-ctx.Done():
		s.logMu.RUnlock()
		return 0, ctx.Err()
	}
	s.logMu.RUnlock()
	select {
	case <-r.done:
		return r.id, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// errStoreClosed is RecordExecution's error after Close.
var errStoreClosed = errors.New("the store is closed")
