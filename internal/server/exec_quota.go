package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/textcut"
	"github.com/codecell/codecell/internal/workspace"
)

// The workspace quota's part in an execution: an execution that passed
// its workspace's limits where the kernel does not hold them fails, and
// says what was undone (see runCode, exec.go, and package workspace).

// ErrWorkspaceQuota is the error type of an execution that took its
// workspace past its quota or its cap on entries where the kernel does not
// enforce them (a plain directory): it was stopped, and what it wrote past
// them removed.
const ErrWorkspaceQuota = "WorkspaceQuota"

// errQuotaPassed is the cause of an execution stopped for its workspace.
var errQuotaPassed = errors.New("the workspace passed its quota")

// quotaOutcome makes an execution that passed its workspace's limits fail
// with ErrWorkspaceQuota, saying what was removed (and that its session
// ended, when sessionLost); and a write the kernel
// refused for the quota (an OSError: ENOSPC, or EFBIG at the file size the
// quota left) say so.
func quotaOutcome(out *ExecuteCodeOutput, rep workspace.Report, run *workspace.Run, vol *workspace.Volume, sessionLost bool) {
	if b := rep.Breach; b != nil {
		msg := fmt.Sprintf("the code took the workspace past its limits (it reached %s) and was stopped", b.Reached)
		if n := len(b.Removed) + len(b.Truncated); n > 0 {
			msg += "; what it wrote past them was undone"
			if len(b.Removed) > 0 {
				msg += fmt.Sprintf(": %d entries it created removed (%s)", len(b.Removed), listSome(b.Removed))
			}
			if len(b.Truncated) > 0 {
				msg += fmt.Sprintf("; %d files it grew cut back to their size before (%s)", len(b.Truncated), listSome(b.Truncated))
			}
		}
		msg += fmt.Sprintf(". The workspace holds %s and works as before: delete files to make room", b.Usage)
		if sessionLost {
			msg += "; the session's interpreter ended with it and its state is lost (the next execution with this session id starts a new one)"
		}
		out.OK = false
		out.Error = &sandbox.ExecError{Type: ErrWorkspaceQuota, Message: msg}
		return
	}
	e := out.Error
	if e == nil || e.Type != "OSError" {
		return
	}
	u, err := vol.Usage()
	if err != nil {
		return
	}
	full := (u.Quota > 0 && u.Bytes+64<<10 >= u.Quota) || (u.MaxEntries > 0 && u.Entries >= u.MaxEntries)
	efbig := strings.Contains(e.Message, "[Errno 27]") && run.FileSizeLimit() >= 0
	nospace := strings.Contains(e.Message, "[Errno 28]") || strings.Contains(e.Message, "[Errno 122]")
	if full && (nospace || efbig) {
		e2 := *e
		e2.Message += fmt.Sprintf(" (the workspace is at its quota: %s; delete files to make room)", u)
		out.Error = &e2
	}
}

// listSome names the first few paths of a list, each cut short.
func listSome(paths []string) string {
	const some, long = 5, 120
	var shown []string
	for _, p := range paths[:min(some, len(paths))] {
		if len(p) > long {
			p = p[:textcut.Cut(p, long/2, nil)] + "..." + p[textcut.Resume(p, len(p)-long/2, nil):]
		}
		shown = append(shown, p)
	}
	out := strings.Join(shown, ", ")
	if len(paths) > some {
		out += fmt.Sprintf(" and %d more", len(paths)-some)
	}
	return out
}
