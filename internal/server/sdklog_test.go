package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestSDKLoggerDemotes(t *testing.T) {
	var buf bytes.Buffer
	l := SDKLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Info("session initialized")
	l.Warn("slow client")
	l.Error("broken", "k", "v")
	got := buf.String()
	if strings.Contains(got, "session initialized") {
		t.Errorf("an SDK info line passed an info-level log: %s", got)
	}
	if !strings.Contains(got, "level=INFO msg=\"slow client\"") || !strings.Contains(got, "level=ERROR msg=broken k=v") {
		t.Errorf("warnings should be info, errors errors: %s", got)
	}
}
