package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// quotaInterval is how often a running execution's workspace is measured:
// between two looks the code can write at most what the disk takes in that
// time (and no single file past Limits.FileSize). A workspace slow to
// measure is measured less often, so the watcher uses at most about a tenth
// of a core.
const quotaInterval = 50 * time.Millisecond

// errQuota is the cause of an execution stopped for its workspace's size.
var errQuota = errors.New("workspace quota exceeded")

// QuotaError reports a workspace over its quota.
type QuotaError struct {
	Used, Quota int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("the workspace holds %d bytes, over its quota of %d: delete files to go on", e.Used, e.Quota)
}

// usage is the size of the regular files under dir (symlinks not followed).
func usage(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file deleted while walking, a directory the code made unreadable
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// watchQuota cancels ctx (with errQuota) once the workspace passes the
// quota, until ctx ends. The caller waits for the returned channel.
func (m *Manager) watchQuota(ctx context.Context, cancel context.CancelCauseFunc, dir string) <-chan struct{} {
	quota := m.opts.WorkspaceQuota
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := quotaInterval
		for {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
				start := time.Now()
				if usage(dir) > quota {
					cancel(errQuota)
					return
				}
				wait = max(quotaInterval, 10*time.Since(start))
			}
		}
	}()
	return done
}
