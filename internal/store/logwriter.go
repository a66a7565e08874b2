package store

import (
	"context"
	"errors"
	"time"
)

// The execution log's writer: one goroutine owns every INSERT into
// executions, and writes what has queued while it was busy as one
// transaction (a group commit).
//
// Two costs of recording an execution led here (issue 16). Each commit is
// a WAL write and an fsync (synchronous=FULL): concurrent executions now
// share them, where before each paid its own. And modernc's SQLite runs
// deep in Go stacks: each request's goroutine grew its stack to record
// its execution (a tenth of the server's CPU went to copying stacks); this
// goroutine's stack has grown once.
//
// A caller still returns only once its row is committed, so a returned
// RecordExecution is as durable as before. One execution alone is written
// as before, in a transaction of its own, with no wait for company.

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
	if len(batch) > 1 && s.insertTogether(ctx, batch) == nil {
		s.logCommits.Add(1)
		return
	}
	for _, r := range batch {
		r.id = 0
		r.err = s.insertExecution.QueryRowContext(ctx, r.args...).Scan(&r.id)
		s.logCommits.Add(1)
	}
}

func (s *Store) insertTogether(ctx context.Context, batch []*logRecord) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // after Commit, a no-op
	ins := tx.StmtContext(ctx, s.insertExecution)
	for _, r := range batch {
		if err := ins.QueryRowContext(ctx, r.args...).Scan(&r.id); err != nil {
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
