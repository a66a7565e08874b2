package sandbox

import (
	"context"
	"testing"
	"time"
)

// BenchmarkExec is a trivial execution straight on the Manager, without MCP,
// per level: the sandbox's share of execute_code latency.
func BenchmarkExec(b *testing.B) {
	for _, level := range []Level{Development, Production, Hardened} {
		b.Run(string(level), func(b *testing.B) {
			m, ws := newTestManager(b, level, Limits{}, 2)
			exec1(b, m, ws, "pass", 20*time.Second)
			for b.Loop() {
				r := m.Exec(context.Background(), Request{Workspace: ws, Code: "print(1)", Timeout: 20 * time.Second})
				if !r.OK {
					b.Fatalf("%+v", r.Error)
				}
			}
		})
	}
}

// BenchmarkSessionExec is a trivial execution in a live session, beside
// BenchmarkExec's fresh process per execution.
func BenchmarkSessionExec(b *testing.B) {
	m, ws := newTestManager(b, Production, Limits{}, 1)
	s, err := m.OpenSession(context.Background(), Request{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		r := s.Exec(context.Background(), Request{Workspace: ws, Code: "n = globals().get('n', 0) + 1\nprint(n)", Timeout: 20 * time.Second})
		if !r.OK {
			b.Fatalf("%+v", r.Error)
		}
	}
}
