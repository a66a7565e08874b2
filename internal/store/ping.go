package store

import (
	"context"
	"fmt"
)

// Ping checks that the database answers: a trivial query on the read pool
// and on the writer's connection. The writer is the one that matters for
// executions (each is logged before its result returns); if it is busy with
// a long write, Ping waits for it, up to ctx.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	if err := s.w.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping database (writer): %w", err)
	}
	return nil
}
