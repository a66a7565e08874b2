package sandbox

import (
	"errors"
	"fmt"
	"io"

	"github.com/codecell/codecell/internal/channel"
)

// execFrame is the request the host sends on a fresh channel.
type execFrame struct {
	Type    string         `json:"type"`
	Code    string         `json:"code"`
	Context map[string]any `json:"context,omitempty"`
	Args    []string       `json:"args,omitempty"`
	Limits  runnerLimits   `json:"limits"`
}

// outputFrame carries a piece of stdout or stderr.
type outputFrame struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// exchange is the host's half of one execution's conversation.
type exchange struct {
	stdout, stderr capture
	result         *resultFrame
	// fault is set when the sandbox broke the protocol or a limit the host
	// enforces; the sandbox is then killed and the execution fails with it.
	fault *ExecError
}

func newExchange(lim Limits) *exchange {
	return &exchange{stdout: capture{limit: lim.Output}, stderr: capture{limit: lim.Output}}
}

// run sends req and reads frames until the channel ends or a fault. It
// returns true if it stopped on a fault, in which case the caller must kill
// the sandbox (the code may still be writing).
func (x *exchange) run(r io.Reader, w io.Writer, req execFrame, lim Limits) bool {
	if err := channel.NewWriter(w).Write(req); err != nil {
		x.fault = failure(ErrSandbox, "send code to sandbox: %v", err)
		return true
	}
	flood := lim.Output * floodFactor
	var total int64
	fr := channel.NewReader(r, 0)
	for {
		m, err := fr.Read()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, errClosed) {
				return false
			}
			if errors.Is(err, channel.ErrFrameTooLarge) || errors.Is(err, channel.ErrBadFrame) || errors.Is(err, io.ErrUnexpectedEOF) {
				x.fault = failure(ErrSandbox, "the code broke the sandbox channel: %v", err)
				return true
			}
			return false // the sandbox went away; the exit status tells why
		}
		switch m.Type {
		case "output":
			var o outputFrame
			if err := m.Decode(&o); err != nil {
				x.fault = failure(ErrSandbox, "the code broke the sandbox channel: %v", err)
				return true
			}
			total += int64(len(o.Data))
			switch o.Stream {
			case "stdout":
				x.stdout.add(o.Data)
			case "stderr":
				x.stderr.add(o.Data)
			default:
				x.fault = failure(ErrSandbox, "the code broke the sandbox channel: unknown stream %q", o.Stream)
				return true
			}
			if total > flood {
				x.fault = failure(ErrOutputLimit, "the code wrote more than %d bytes of output (the limit keeps %d per stream); it was stopped", flood, lim.Output)
				return true
			}
		case "result":
			if x.result != nil {
				x.fault = failure(ErrSandbox, "the code broke the sandbox channel: second result frame")
				return true
			}
			var f resultFrame
			if err := m.Decode(&f); err != nil {
				x.fault = failure(ErrSandbox, "the code broke the sandbox channel: %v", err)
				return true
			}
			x.result = &f
		default:
			x.fault = failure(ErrSandbox, "the code broke the sandbox channel: unknown frame type %q", m.Type)
			return true
		}
	}
}

var errClosed = errors.New("use of closed file")

// exitInfo is how the code's main process ended, as far as the host knows.
type exitInfo struct {
	status int // exit status, when signal == 0
	signal int // terminating signal, or 0
	known  bool
}

// finish turns what the host saw into a Result.
func (x *exchange) finish(res *Result, exit exitInfo, lim Limits) {
	res.Stdout, res.Stderr = x.stdout.text(), x.stderr.text()
	res.Truncated = Truncated{Stdout: x.stdout.dropped > 0, Stderr: x.stderr.dropped > 0}
	switch {
	case res.Error != nil: // timeout or cancellation, decided by the caller
	case x.fault != nil:
		res.Error = x.fault
	case x.result != nil && exit.signal == 0:
		res.OK = x.result.OK
		res.Error = x.result.Error
		res.Result = x.result.value()
		if !res.OK && res.Error == nil {
			res.Error = failure(ErrSandbox, "the runner reported a failure without an error")
		}
	case exit.signal == sigXCPU:
		res.Error = failure(ErrTimeout, "the code used its CPU time limit of %s", lim.CPUTime)
	case exit.signal == sigXFSZ:
		res.Error = failure("OSError", "the code wrote a file larger than the file size limit of %d bytes", lim.FileSize)
	case exit.signal != 0:
		res.Error = failure(ErrKilled, "the code's process was killed by signal %d (%s)", exit.signal, signalName(exit.signal))
	case exit.known:
		res.Error = failure("SystemExit", "the code's process exited with status %d before returning a result", exit.status)
	default:
		res.Error = failure(ErrSandbox, "the sandbox ended before returning a result")
	}
	if res.Error != nil {
		res.OK = false
	}
}

func signalName(sig int) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return fmt.Sprintf("signal %d", sig)
}
