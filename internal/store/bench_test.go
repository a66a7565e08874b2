package store

import (
	"context"
	"path/filepath"
	"syscall"
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
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		if _, err := s.RecordExecution(context.Background(), e); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	// CPU time (user and system, GC included): steadier than the time per
	// row on a shared machine.
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/op")
}
