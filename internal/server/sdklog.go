package server

import (
	"context"
	"log/slog"
)

// SDKLogger is the logger to give the MCP SDK (its server and HTTP
// handler): the SDK logs each session's life (connected, initialized,
// ended) at info, which would bury codecell's own info lines, one per
// execution. Its records go one level down: info to debug, warnings to
// info; errors stay errors.
func SDKLogger(l *slog.Logger) *slog.Logger {
	return slog.New(demoted{l.Handler()})
}

type demoted struct{ h slog.Handler }

func demote(l slog.Level) slog.Level {
	if l >= slog.LevelError {
		return l
	}
	return l - 4
}

func (d demoted) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, demote(l))
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.h.Handle(ctx, r)
}

func (d demoted) WithAttrs(as []slog.Attr) slog.Handler { return demoted{d.h.WithAttrs(as)} }
func (d demoted) WithGroup(name string) slog.Handler    { return demoted{d.h.WithGroup(name)} }
