package sandbox

import (
	"fmt"
	"time"
)

// Limits bound one execution. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	Memory    int64         // address space of the code's processes, bytes
	Pids      int           // processes and threads the code may have at once
	CPUTime   time.Duration // CPU time of the execution's main process
	FileSize  int64         // largest file the code may write, bytes
	OpenFiles int           // descriptors per process
	Output    int64         // bytes kept of stdout and of stderr, each
	TmpSize   int64         // size of the private /tmp (and /dev/shm), bytes
	// Flood is the output, both streams together, past which the
	// execution is ended with OutputLimit rather than read until its
	// timeout; below it, output past Output is cut (head and tail kept)
	// and the execution goes on. Zero means 8 x Output (floodFactor); it
	// is never less than Output.
	Flood int64
}

// DefaultLimits are the limits used where a field is zero (the config's
// defaults). Pids leaves room for a ThreadPoolExecutor of 64 or 100 workers,
// threads being how code runs upstream calls concurrently.
var DefaultLimits = Limits{
	Memory:    512 << 20,
	Pids:      128,
	CPUTime:   60 * time.Second,
	FileSize:  256 << 20,
	OpenFiles: 256,
	Output:    1 << 20,
	TmpSize:   64 << 20,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Memory > 0 {
		d.Memory = l.Memory
	}
	if l.Pids > 0 {
		d.Pids = l.Pids
	}
	if l.CPUTime > 0 {
		d.CPUTime = l.CPUTime
	}
	if l.FileSize > 0 {
		d.FileSize = l.FileSize
	}
	if l.OpenFiles > 0 {
		d.OpenFiles = l.OpenFiles
	}
	if l.Output > 0 {
		d.Output = l.Output
	}
	if l.TmpSize > 0 {
		d.TmpSize = l.TmpSize
	}
	d.Flood = max(l.Flood, d.Output)
	if l.Flood <= 0 {
		d.Flood = d.Output * floodFactor
	}
	return d
}

// gvisorAddressSpace is the address space gVisor itself accounts to a
// process beyond what the code allocates.
const gvisorAddressSpace = 1 << 30

// floodFactor is the default Flood: this many times the Output limit.
const floodFactor = 8

// runnerLimits is what the runner applies to itself with setrlimit after the
// fork, before it reads any code.
type runnerLimits struct {
	Memory   int64 `json:"memory"`
	FileSize int64 `json:"file_size"`
	// FileSizeSoft, when set, is RLIMIT_FSIZE's soft limit under the hard
	// FileSize (a session's execution).
	FileSizeSoft int64 `json:"file_size_soft,omitempty"`
	OpenFiles    int   `json:"open_files"`
	NProc        int   `json:"nproc"`
	Pids         int   `json:"pids"`  // sandbox.pids, for messages
	Level        Level `json:"level"` // for messages
	CPUSeconds   int64 `json:"cpu_seconds"`
	ResultBytes  int64 `json:"result_bytes"`
}

// forRunner is what the runner applies for one execution at level;
// fileSize is Request.FileSize.
func (l Limits) forRunner(level Level, fileSize int64, session bool) runnerLimits {
	r := runnerLimits{
		Memory:     l.Memory,
		FileSize:   l.FileSize,
		OpenFiles:  l.OpenFiles,
		CPUSeconds: int64((l.CPUTime + time.Second - 1) / time.Second),
		// The runner cuts a long repr past CutMargin, so that capResult,
		// host-side, sees the value that crosses the limit whole.
		ResultBytes: l.Output + CutMargin,
		Pids:        l.Pids,
		Level:       level,
	}
	// RLIMIT_NPROC counts per user: in production that user exists only in
	// the sandbox's own user namespace, where the zygote (its init) and the
	// code's main process are there before the code starts any. In
	// development it would count every process of the host user, so it is
	// not set there.
	if level != Development {
		r.NProc = l.Pids + 2
	}
	if level == Hardened {
		// Under gVisor the code's process also has its output forwarder
		// thread (the host cannot pass it the output pipes), which counts
		// as one of RLIMIT_NPROC's tasks too.
		r.NProc = l.Pids + 3
	}
	if fileSize > 0 && fileSize < l.FileSize {
		if session {
			r.FileSizeSoft = fileSize
		} else {
			r.FileSize = fileSize
		}
	}
	if level == Hardened {
		// gVisor maps much more address space per process than Linux
		// does (a bare Python shows ~450 MB of VmSize), so the address-space
		// limit gets that much headroom there; allocations past it still
		// fail with MemoryError.
		r.Memory += gvisorAddressSpace
	}
	return r
}

func (l Limits) String() string {
	return fmt.Sprintf("memory=%d pids=%d cpu=%s file=%d files=%d output=%d tmp=%d",
		l.Memory, l.Pids, l.CPUTime, l.FileSize, l.OpenFiles, l.Output, l.TmpSize)
}
