package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRecordExecution is one execution's row in the log, one after
// another: the store's share of a trivial execute_code's CPU.
func BenchmarkRecordExecution(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "codecell.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := Execution{Namespace: "default", Code: "print(1)", StdoutExcerpt: "1\n", Duration: 2 * time.Millisecond, Isolation: "production"}
	for b.Loop() {
		if _, err := s.RecordExecution(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
}
