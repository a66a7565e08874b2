package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codecell/codecell/internal/egress"
	"github.com/codecell/codecell/internal/textcut"
)

// Error types that are not Python exception names (docs/tools.md, execute_code).
const (
	ErrTimeout       = "Timeout"
	ErrMemoryLimit   = "MemoryLimit"
	ErrOutputLimit   = "OutputLimit"
	ErrToolCallLimit = "ToolCallLimit"
	ErrKilled        = "Killed"
	ErrSandbox       = "SandboxError"
)

// Request is one execution.
type Request struct {
	Workspace string         // host directory mounted read-write as the working directory
	Code      string         // Python source
	Context   map[string]any // JSON values bound as globals before the code runs
	Args      []string       // sys.argv[1:]
	// Filename names the code in tracebacks and sys.argv[0] (a workspace
	// code file's path); "" means "<cell>".
	Filename string
	// CodecellTools names codecell's own tools the code can call (from
	// codecell import ...): the runner leaves the codecell package's other
	// functions out of its help (help(codecell), __all__). nil means every
	// one.
	CodecellTools []string
	Timeout       time.Duration // wall clock for the whole execution; zero means 30s
	// Python is the interpreter to run, e.g. a venv's bin/python; "" means
	// the Manager's. ReadOnly are host directories it needs (the venv),
	// shown read-only at their own paths; only used with Python.
	Python   string
	ReadOnly []string
	// Skills is the host directory of the namespace's saved skills, the
	// root of the code's "skills" package, shown read-only at SkillsMount
	// (development: imported from where it is). "" means none.
	Skills string
	// Network is what the code may reach; nil means nothing (no network
	// at all). Sandboxes are pooled per Network, so a namespace's is one
	// value for all its requests.
	Network *Network

	// Calls answers the code's calls to the host (tool calls, tool search);
	// nil means the code can make none.
	Calls CallHandler
	// OnOutput, when set, is called with each piece of output as it
	// arrives, for progress reports. It runs on the reader's goroutine and
	// must return quickly, and must not keep data (its buffer is reused).
	OnOutput func(stream string, data []byte)

	// MaxToolCalls bounds the code's channel.MethodTool calls; past it the execution
	// ends with ToolCallLimit. Zero means no bound.
	MaxToolCalls int

	// FileSize, when positive and below Limits.FileSize, is the largest
	// file this execution may write (RLIMIT_FSIZE): what is left of its
	// workspace's quota. In a session it is the soft limit, the hard one
	// staying Limits.FileSize, so that a later execution can have more;
	// the code can raise it there, which is why it is not the quota's only
	// guard. Zero means Limits.FileSize.
	FileSize int64

	// Cut, when set, says where to cut an output stream, a result's repr
	// or an error's message or traceback that is over the output limit:
	// it returns a position at most limit in text, a character boundary.
	// The caller makes it a cut that leaves no value the detectors find
	// (package pii); to let it see the value that crosses the limit whole,
	// the sandbox keeps CutMargin bytes past the limit. Whether set or
	// not, no cut splits a run of the characters values are made of
	// (package textcut).
	Cut func(text string, limit int) int
}

// CutMargin is how far past the output limit the sandbox keeps output for
// Request.Cut to look at.
const CutMargin = 16 << 10

// CallHandler answers a call the code makes to the host over the channel.
// Method is what the code asked for (channel.MethodTool, ...); params are
// the code's JSON, untrusted. HandleCall is called from several goroutines at
// once (the code may call concurrently) and must honour ctx, which ends with
// the execution. Its result is sent back to the code as JSON; an error goes
// back as a CallError when it is one (its Kind picks the Python exception),
// else as a plain error message.
type CallHandler interface {
	HandleCall(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// CallError is an error the code sees as a Python exception of kind Kind
// ("ToolError", "PermissionError", "TimeoutError", "ValueError", ...).
type CallError struct {
	Kind    string
	Message string
	Data    any // extra fields for the exception, e.g. server and tool
}

func (e *CallError) Error() string { return e.Kind + ": " + e.Message }

// Result is the outcome of one execution. Failures of the code, limits and
// sandbox faults are all Results with OK false; Exec itself never fails.
type Result struct {
	OK        bool      `json:"ok"`
	Stdout    string    `json:"stdout"`
	Stderr    string    `json:"stderr"`
	Truncated Truncated `json:"truncated"`
	Result    any       `json:"result"`
	// Table is a small DataFrame or Series result as data, beside its text
	// in Result (see the runner's codecell._tables); nil otherwise.
	Table *Table     `json:"table,omitempty"`
	Error *ExecError `json:"error"`
	// Images are what the code showed: display_image calls, matplotlib
	// figures left open, an Image result. ImagesDropped describes those
	// past the runner's bounds.
	Images        []Image       `json:"images,omitempty"`
	ImagesDropped []string      `json:"images_dropped,omitempty"`
	Duration      time.Duration `json:"-"`
	Isolation     Level         `json:"isolation"`
	// Network is what went out through the egress proxy, one Flow per
	// destination and outcome; NetworkDropped counts the destinations
	// past the list's bound.
	Network        []egress.Flow `json:"network,omitempty"`
	NetworkDropped int           `json:"network_dropped,omitempty"`
}

// Truncated says which output streams were cut at the output limit.
type Truncated struct {
	Stdout bool `json:"stdout"`
	Stderr bool `json:"stderr"`
}

// ExecError describes why an execution failed.
type ExecError struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
}

func failure(typ, format string, args ...any) *ExecError {
	return &ExecError{Type: typ, Message: fmt.Sprintf(format, args...)}
}

// capture keeps a stream's head and its tail, limit bytes together, and
// counts what it drops between them: runaway output keeps its last lines,
// where a program says how it ended. It keeps margin more on each side of
// the cut, to see what crosses it: the run of value characters a cut there
// would split (package textcut), and, with cut, the values a detector finds.
type capture struct {
	limit  int64
	margin int64
	cut    func(string, int) int
	head   []byte // the first limit/2 + margin bytes
	tail   []byte // the last limit - limit/2 + margin bytes after head, at most
	total  int64  // bytes added
}

// newCapture is a stream's capture under the output limit.
func newCapture(limit int64, cut func(string, int) int) capture {
	return capture{limit: limit, margin: CutMargin, cut: cut}
}

func (c *capture) headLimit() int64 { return c.limit / 2 }
func (c *capture) tailLimit() int64 { return c.limit - c.limit/2 }

func (c *capture) add(p []byte) {
	c.total += int64(len(p))
	if room := c.headLimit() + c.margin - int64(len(c.head)); room > 0 {
		n := min(room, int64(len(p)))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	keep := int(c.tailLimit() + c.margin)
	if len(p) >= keep {
		c.tail = append(c.tail[:0], p[len(p)-keep:]...)
		return
	}
	// The tail grows to twice what it keeps before it drops its front, so
	// that a stream of small writes costs a copy per keep bytes.
	if len(c.tail)+len(p) > 2*keep {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)+len(p)-keep:]...)
	}
	c.tail = append(c.tail, p...)
}

// truncated reports whether the stream was cut at the limit.
func (c *capture) truncated() bool {
	return c.total > c.limit
}

// text is the kept output as valid UTF-8 (what is not is replaced, including
// a character cut at the limit): the whole stream when it is within the
// limit, else its head and tail with the cut marked in between.
func (c *capture) text() string {
	if !c.truncated() {
		return strings.ToValidUTF8(string(c.head)+string(c.tail), "\uFFFD")
	}
	var head, tail string
	var h, t int
	if c.total == int64(len(c.head)+len(c.tail)) {
		// Nothing was dropped yet: the tail is the end of the whole, which
		// may be in what head kept past its limit.
		head = strings.ToValidUTF8(string(c.head)+string(c.tail), "\uFFFD")
		tail = head
		h = textcut.Cut(head, int(c.headLimit()), c.cut)
		t = max(h, textcut.Resume(tail, runeAt(tail, len(tail)-int(c.tailLimit())), c.cut))
	} else {
		head = strings.ToValidUTF8(string(c.head), "\uFFFD")
		h = textcut.Cut(head, int(min(c.headLimit(), int64(len(head)))), c.cut)
		// The tail's first bytes may be the rest of a character whose
		// start was dropped.
		raw := c.tail
		for i := 0; i < 3 && len(raw) > 0 && !utf8.RuneStart(raw[0]); i++ {
			raw = raw[1:]
		}
		tail = strings.ToValidUTF8(string(raw), "\uFFFD")
		t = textcut.Resume(tail, runeAt(tail, len(tail)-int(c.tailLimit())), c.cut)
	}
	dropped := c.total - int64(h) - int64(len(tail)-t)
	return head[:h] + fmt.Sprintf("\n[codecell: output truncated, %d more bytes dropped here; the stream's end follows]\n", max(dropped, 0)) + tail[t:]
}

// runeAt is i, at least 0, moved forward to the start of a character.
func runeAt(text string, i int) int {
	i = max(i, 0)
	for i < len(text) && !utf8.RuneStart(text[i]) {
		i++
	}
	return i
}

// Image is an image the code showed.
type Image struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"` // base64 in the frame
}

// resultFrame is the runner's result frame (channel.TypeResult).
type resultFrame struct {
	OK     bool       `json:"ok"`
	Error  *ExecError `json:"error"`
	Result *struct {
		Kind  string          `json:"kind"`
		Value json.RawMessage `json:"value"`
		Table json.RawMessage `json:"table"`
	} `json:"result"`
	Images        []Image  `json:"images"`
	ImagesDropped []string `json:"images_dropped"`
}

// images are the frame's images whose type is an image type, and the
// descriptions of those dropped: the runner is the sandbox's, so what it
// says is checked.
func (f *resultFrame) images() ([]Image, []string) {
	var ok []Image
	var dropped []string
	for _, d := range f.ImagesDropped[:min(len(f.ImagesDropped), 16)] {
		dropped = append(dropped, clip(strings.ToValidUTF8(d, "\uFFFD"), 200))
	}
	for _, im := range f.Images {
		if !strings.HasPrefix(im.MIMEType, "image/") || len(im.MIMEType) > 100 || len(im.Data) == 0 {
			dropped = append(dropped, fmt.Sprintf("an image with MIME type %q", clip(im.MIMEType, 100)))
			continue
		}
		ok = append(ok, im)
	}
	return ok, dropped
}

// value decodes the result: JSON values as themselves, others as their repr.
func (f *resultFrame) value() any {
	if f.Result == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(f.Result.Value, &v); err != nil {
		return nil
	}
	return v
}

// Table is a DataFrame or Series as data, in pandas' "split" orientation
// (a Series as one column).
type Table struct {
	Columns []any   `json:"columns"`
	Index   []any   `json:"index"`
	Data    [][]any `json:"data"`
}

// maxTable bounds a result's table: the runner sends one only up to 32 KiB
// of JSON, but the runner is the sandbox's.
const maxTable = 64 << 10

// table decodes the result's table: a Table of at most maxTable bytes
// nesting no deeper than a result may, else nil.
func (f *resultFrame) table() *Table {
	if f.Result == nil || len(f.Result.Table) == 0 || len(f.Result.Table) > maxTable {
		return nil
	}
	var t Table
	if json.Unmarshal(f.Result.Table, &t) != nil || t.Data == nil {
		return nil
	}
	rows := make([]any, len(t.Data))
	for i, r := range t.Data {
		rows[i] = r
	}
	if nestsDeeper([]any{t.Columns, t.Index, rows}, maxResultDepth) {
		return nil
	}
	return &t
}

// resultSlack is what a result may exceed the output limit by: the
// runner's note of what it cut.
const resultSlack = 256

// capResult holds a result to the output limit. The runner cuts results
// itself, but the runner is in the sandbox: code can write a result frame
// of its own, as large as a frame goes. A string (a repr) is cut to the
// limit in bytes, splitting no value (package textcut); another value past
// it in JSON bytes is replaced by a note, since half a JSON value means
// nothing.
//
// A result that nests deeper than maxResultDepth becomes its JSON text,
// cut like a string: decoders further on refuse such depths, and the whole
// answer would fail with them rather than this result.
func capResult(v any, limit int64, cutAt func(string, int) int) any {
	if v == nil {
		return v
	}
	if nestsDeeper(v, maxResultDepth) {
		b, _ := json.Marshal(v)
		v = fmt.Sprintf("[codecell: the result nests more than %d levels deep; here is its JSON] %s", maxResultDepth, b)
	}
	if limit <= 0 {
		return v
	}
	if s, ok := v.(string); ok {
		if int64(len(s)) > limit+resultSlack {
			k := textcut.Cut(s, int(limit), cutAt)
			return s[:k] + fmt.Sprintf("... [codecell: result cut at the output limit, %d more bytes dropped]", len(s)-k)
		}
		return s
	}
	b, err := json.Marshal(v)
	if err != nil || int64(len(b)) > limit+resultSlack {
		return fmt.Sprintf("[codecell: the result, %d bytes of JSON, is over the output limit of %d bytes and was dropped]", len(b), limit)
	}
	return v
}

// maxErrorType bounds an error's type, a Python class name that code may
// make as long as it likes.
const maxErrorType = 1000

// capError holds an error's message and traceback to the output limit, as
// the runner does: code can raise an exception with a message as long as
// memory allows, or write an error frame of its own. Each part is cut
// like a result's repr, the cut marked.
func capError(e *ExecError, limit int64, cutAt func(string, int) int) *ExecError {
	if e == nil || limit <= 0 {
		return e
	}
	over := func(s string, n int64) bool { return int64(len(s)) > n+resultSlack }
	if !over(e.Type, maxErrorType) && !over(e.Message, limit) && !over(e.Traceback, limit) {
		return e
	}
	c := *e
	if over(c.Type, maxErrorType) {
		c.Type = clip(c.Type, maxErrorType)
	}
	for _, part := range []*string{&c.Message, &c.Traceback} {
		if s := *part; over(s, limit) {
			k := textcut.Cut(s, int(limit), cutAt)
			*part = s[:k] + fmt.Sprintf("... [codecell: cut at the output limit, %d more bytes dropped]", len(s)-k)
		}
	}
	return &c
}

// clip cuts s to at most n bytes, where no run of value characters is
// split (package textcut), the cut marked with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:textcut.Cut(s, n, nil)] + "…"
}

// maxResultDepth bounds how deep a result nests. The MCP SDK checks a
// tool's output with a decoder that stops at 1000 levels (and clients'
// decoders stop somewhere too), so a deeper result would turn the whole
// answer into a protocol error. The runner never nests so deep (Python's
// json gives up near its recursion limit), but code can write a result
// frame of its own, as deep as the host's frame decoder takes (10,000).
const maxResultDepth = 256

// nestsDeeper reports whether a decoded JSON value has arrays or objects
// nested more than max deep. It walks without recursion.
func nestsDeeper(v any, max int) bool {
	type item struct {
		v     any
		depth int
	}
	stack := []item{{v, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := it.v.(type) {
		case []any:
			if it.depth+1 > max {
				return true
			}
			for _, e := range x {
				stack = append(stack, item{e, it.depth + 1})
			}
		case map[string]any:
			if it.depth+1 > max {
				return true
			}
			for _, e := range x {
				stack = append(stack, item{e, it.depth + 1})
			}
		}
	}
	return false
}
