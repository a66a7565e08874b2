package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/textcut"
	"github.com/codecell/codecell/internal/workspace"
)

// The answer budget (docs/tools.md, execute_code): what one execution returns to the model,
// structured content and text content together, is at most
// sandbox.answerBudget bytes of JSON. Past it stdout, stderr, the result,
// the error's message and traceback each keep their head and tail, the cut
// marked in them; the files list keeps the files that fit, the others
// counted; and the whole output goes to a workspace file that the result
// links to, where code (or the host) reads it. A model reads the answer in
// every later turn, so a print of a whole data set costs it once per turn;
// the budget keeps that to what a model can use. Images are outside it:
// the runner bounds their number and size.

// SavedOutputLimit is the most bytes of an execution's output, both
// streams together, that the workspace file of a cut answer keeps whole
// (docs/tools.md, README "Limits"): far above the answer, which the model
// reads, and the sandbox's output limit (sandbox.output), which bounds
// what the host holds in memory. Past it the file keeps each stream's last
// bytes (as many as the output limit keeps) and says what was dropped
// before them.
const SavedOutputLimit = 64 << 20

// OutputFlood is the sandbox's Limits.Flood for an output limit: past it
// the execution is ended with OutputLimit. It is far past
// SavedOutputLimit, so that output up to that bound reaches the saved
// file whole, and what comes after it reaches the file's tail, while the
// execution goes on; only a runaway is stopped before its timeout.
func OutputFlood(output int64) int64 {
	return max(8*output, 4*SavedOutputLimit)
}

// outputDir is the workspace directory of the whole outputs of cut
// answers; keptOutputs is how many of them it keeps, newest first.
const (
	outputDir   = ".codecell/output"
	keptOutputs = 10
)

// fitTries bounds how often boundAnswer measures a cut answer and cuts
// again by what it is over: the first reckoning is close (a value kept
// whole across a cut, or a hint the text adds, can pass it).
const fitTries = 4

// wholeOutput is an execution's output before any cut, as the code made it.
type wholeOutput struct {
	Stdout, Stderr string
	Result         any
	Error          *sandbox.ExecError
	Files          []workspace.File
	Deleted        []string
	// Spill holds the streams as the code wrote them, past the sandbox's
	// output limit, which Stdout and Stderr were cut to; nil when none.
	Spill *outputSpill
}

// outputSpill keeps an execution's output streams as the code wrote them,
// up to limit bytes together (SavedOutputLimit): in memory up to memory
// bytes, then in a temporary file. Past the limit each stream keeps its
// last memory bytes, in memory. Its add is a sandbox.Request.OnOutput; it
// is safe for concurrent use.
type outputSpill struct {
	mu      sync.Mutex
	memory  int64
	limit   int64
	streams map[string]*spilled
	total   int64 // bytes kept, both streams
}

// spilled is one stream's spill.
type spilled struct {
	buf  []byte
	f    *os.File
	size int64 // bytes kept, before the limit
	// lost are bytes before the limit that could not be kept (no
	// temporary file, a failed write).
	lost int64
	// past counts the bytes after the limit; tail holds their last ones
	// (at least memory of them once there are that many).
	past int64
	tail []byte
}

// tailOf is the last keep bytes of s's output past the limit, starting at
// a character.
func (s *spilled) tailOf(keep int64) []byte {
	t := s.tail
	if int64(len(t)) > keep {
		t = t[int64(len(t))-keep:]
	}
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return t
}

// dropped is how many bytes of s the spill does not hold.
func (s *spilled) dropped(keep int64) int64 {
	return s.lost + s.past - int64(len(s.tailOf(keep)))
}

func newOutputSpill(memory, limit int64) *outputSpill {
	return &outputSpill{memory: memory, limit: limit, streams: map[string]*spilled{}}
}

// add keeps p, written to stream.
func (o *outputSpill) add(stream string, p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.streams[stream]
	if s == nil {
		s = &spilled{}
		o.streams[stream] = s
	}
	room := max(o.limit-o.total, 0)
	if int64(len(p)) > room {
		// Past the limit: the stream's last bytes, kept as the sandbox's
		// capture keeps its tail (it grows to twice what it keeps before
		// it drops its front, a copy per memory bytes).
		after := p[room:]
		s.past += int64(len(after))
		if keep := o.memory; int64(len(after)) >= keep {
			s.tail = append(s.tail[:0], after[int64(len(after))-keep:]...)
		} else {
			if int64(len(s.tail)+len(after)) > 2*keep {
				s.tail = append(s.tail[:0], s.tail[int64(len(s.tail)+len(after))-keep:]...)
			}
			s.tail = append(s.tail, after...)
		}
		p = p[:room]
	}
	if len(p) == 0 {
		return
	}
	o.total += int64(len(p))
	s.size += int64(len(p))
	if s.f == nil && int64(len(s.buf)+len(p)) > o.memory {
		f, err := os.CreateTemp("", "codecell-output-*")
		if err == nil {
			os.Remove(f.Name()) // gone with its last descriptor
			if _, err = f.Write(s.buf); err == nil {
				s.f, s.buf = f, nil
			} else {
				f.Close()
			}
		}
		if s.f == nil {
			// No temporary file: what the sandbox kept is all there is.
			s.lost += int64(len(p))
			s.size -= int64(len(p))
			o.total -= int64(len(p))
			return
		}
	}
	if s.f != nil {
		if _, err := s.f.Write(p); err != nil {
			s.lost += int64(len(p))
		}
		return
	}
	s.buf = append(s.buf, p...)
}

// text is what was kept of stream: its head, up to the limit, and its
// tail past the limit, and how many bytes were dropped between them; ok
// is false when the spill kept nothing of it.
func (o *outputSpill) text(stream string) (head, tail string, dropped int64, ok bool) {
	if o == nil {
		return "", "", 0, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.streams[stream]
	if s == nil {
		return "", "", 0, false
	}
	tail, dropped = string(s.tailOf(o.memory)), s.dropped(o.memory)
	if s.f == nil {
		return string(s.buf), tail, dropped, true
	}
	b := make([]byte, s.size)
	if _, err := s.f.ReadAt(b, 0); err != nil && err != io.EOF {
		return "", "", 0, false
	}
	return string(b), tail, dropped, true
}

// dropped is how many bytes of output the spill does not hold.
func (o *outputSpill) dropped() int64 {
	if o == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	for _, s := range o.streams {
		n += s.dropped(o.memory)
	}
	return n
}

// Close removes the spill's temporary files.
func (o *outputSpill) Close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.streams {
		if s.f != nil {
			s.f.Close()
		}
		s.f, s.buf = nil, nil
	}
}

// answerPart is one part of the answer that the budget may cut: its text
// appears weight times in the answer (the structured content, and the text
// rendering). Costs are in bytes of JSON.
type answerPart struct {
	text   string
	weight int
	cost   int // weight times the text's JSON
	marker int // what the marker costs when the part is cut
	keep   int // cost kept
}

// boundAnswer holds out to the answer budget: when the answer it would
// make is over, it writes whole to a workspace file named in
// out.OutputFile and cuts each part, head and tail with the cut marked,
// and lists the files that fit. It returns a resource link to that file,
// or nil when nothing was cut. whole stays in the namespace's workspace as
// the code made it, where code sees the same data anyway; what reaches the
// model passes the gate.
func (s *Server) boundAnswer(ctx context.Context, ns string, out *ExecuteCodeOutput, whole wholeOutput) (*mcp.ResourceLink, error) {
	budget := s.cfg.Sandbox.AnswerBudget
	if budget <= 0 {
		return nil, nil
	}
	// The streams and the error alone past the budget put the answer past
	// it (their JSON is at least as long), without the cost of encoding a
	// megabyte of output to say so.
	raw := len(out.Stdout) + len(out.Stderr)
	if out.Error != nil {
		raw += len(out.Error.Message) + len(out.Error.Traceback)
	}
	if raw <= budget && answerSize(out, nil) <= budget {
		return nil, nil
	}
	file, err := s.saveWholeOutput(ctx, ns, whole)
	where := "the whole output is in the workspace file " + file
	if n := whole.Spill.dropped(); n > 0 {
		where = fmt.Sprintf("the output's first %d MiB and its last lines are in the workspace file %s; the %d bytes between them were dropped", SavedOutputLimit>>20, file, n)
	}
	var link *mcp.ResourceLink
	if err != nil {
		s.log.Warn("save the whole output", "namespace", ns, "error", err)
		where = "the whole output could not be saved: " + err.Error()
	} else {
		out.OutputFile = file
		link = &mcp.ResourceLink{URI: fileURI(file), Name: file, MIMEType: "text/plain"}
	}
	// A frame's table is the result's text again, as data: past the
	// budget the text alone stays.
	out.Table = nil
	uncut := *out
	room := budget - answerSize(bare(out), link)
	for range fitTries {
		*out = uncut
		s.fit(out, room, where)
		size := answerSize(out, link)
		if size <= budget {
			break
		}
		room -= size - budget
	}
	return link, nil
}

// answerSize is the size of the answer out makes, as JSON, less its images.
func answerSize(out *ExecuteCodeOutput, outputLink *mcp.ResourceLink) int {
	b, err := json.Marshal(&mcp.CallToolResult{Content: answerContent(out, outputLink), StructuredContent: out, IsError: !out.OK})
	if err != nil {
		return math.MaxInt
	}
	return len(b)
}

// bare is out without the parts the budget cuts, as if each were cut to
// nothing: what is left is the answer's cost whatever it holds.
func bare(out *ExecuteCodeOutput) *ExecuteCodeOutput {
	b := *out
	b.Stdout, b.Stderr = "", ""
	if b.Result != nil {
		b.Result = ""
	}
	if b.Error != nil {
		e := *b.Error
		e.Message, e.Traceback = "", ""
		b.Error = &e
	}
	b.Truncated = &Truncated{Stdout: true, Stderr: true, Result: true, Error: true}
	b.Files, b.FilesDeleted, b.files = nil, nil, nil
	return &b
}

// fit cuts out's parts so that they cost at most room together, each cut
// marked with where the rest is.
func (s *Server) fit(out *ExecuteCodeOutput, room int, where string) {
	result, resultIsText := resultText(out.Result)
	var message, traceback string
	if out.Error != nil {
		message, traceback = out.Error.Message, out.Error.Traceback
	}
	// The text rendering repeats every part but the files list, whose
	// cost counts all its places (the list, the text's line, the links).
	marker := 2 * len(cutMarker(math.MaxInt32, math.MaxInt32, where))
	parts := []*answerPart{
		textPart(out.Stdout, marker), textPart(out.Stderr, marker), textPart(result, marker),
		textPart(message, marker), textPart(traceback, marker),
	}
	files := filesPart(out)
	share(append(parts, files), room)
	if listed := listedCost(out, files.keep); listed < files.keep {
		// Files are listed whole or not at all: what their share does not
		// hold goes to the other parts.
		share(parts, room-listed-files.marker)
	}
	if out.Truncated == nil {
		out.Truncated = &Truncated{}
	}
	cut := func(p *answerPart, part *string, flag *bool) {
		if p.keep < p.cost {
			*part, *flag = s.cut(p, where), true
		}
	}
	cut(parts[0], &out.Stdout, &out.Truncated.Stdout)
	cut(parts[1], &out.Stderr, &out.Truncated.Stderr)
	if parts[2].keep < parts[2].cost {
		// A JSON value cut in the middle is no longer JSON: the result
		// becomes the text of its head and tail.
		r := s.cut(parts[2], where)
		if !resultIsText {
			r = "[codecell: the result's JSON, cut] " + r
		}
		out.Result, out.Truncated.Result = r, true
	}
	if out.Error != nil && (parts[3].keep < parts[3].cost || parts[4].keep < parts[4].cost) {
		e := *out.Error
		cut(parts[3], &e.Message, &out.Truncated.Error)
		cut(parts[4], &e.Traceback, &out.Truncated.Error)
		out.Error = &e
	}
	keepFiles(out, files.keep)
	if *out.Truncated == (Truncated{}) {
		out.Truncated = nil
	}
}

// textPart is a part of the answer that appears in the structured content
// and in the text rendering.
func textPart(text string, marker int) *answerPart {
	return &answerPart{text: text, weight: 2, cost: 2 * jsonLen(text), marker: marker}
}

// filesPart is the files list as a part of the answer: each file costs its
// place in files or files_deleted, in the text's line and in its link.
func filesPart(out *ExecuteCodeOutput) *answerPart {
	p := &answerPart{weight: 1, marker: 200}
	for _, f := range out.files {
		p.cost += fileCost(f)
	}
	for _, d := range out.FilesDeleted {
		p.cost += 2*jsonLen(d) + 4
	}
	return p
}

// fileCost is what listing a file created or changed costs the answer.
func fileCost(f reportedFile) int {
	size := f.Size
	link, _ := json.Marshal(&mcp.ResourceLink{URI: fileURI(f.Path), Name: f.Path, MIMEType: mime.TypeByExtension(path.Ext(f.Path)), Size: &size})
	return 2*jsonLen(f.Path) + 4 + len(link) + 40 // the link's "type" and comma
}

// listedCost is what keepFiles lists of out's files at keep costs.
func listedCost(out *ExecuteCodeOutput, keep int) int {
	c := *out
	keepFiles(&c, keep)
	cost := 0
	for _, f := range c.files {
		cost += fileCost(f)
	}
	for _, d := range c.FilesDeleted {
		cost += 2*jsonLen(d) + 4
	}
	return cost
}

// keepFiles lists the files that cost at most keep, in order, and counts
// the others in FilesOmitted. A path is listed whole or not at all.
func keepFiles(out *ExecuteCodeOutput, keep int) {
	n := 0
	for _, f := range out.files {
		if keep -= fileCost(f); keep < 0 {
			break
		}
		n++
	}
	omitted := len(out.files) - n
	out.files, out.Files = out.files[:n], out.Files[:n]
	d := 0
	for _, p := range out.FilesDeleted {
		if keep < 0 {
			break
		}
		if keep -= 2*jsonLen(p) + 4; keep < 0 {
			break
		}
		d++
	}
	omitted += len(out.FilesDeleted) - d
	out.FilesDeleted = out.FilesDeleted[:d]
	out.FilesOmitted += omitted
}

// resultText is the result as the budget counts it: a string as itself,
// anything else as its JSON.
func resultText(v any) (string, bool) {
	if v == nil {
		return "", false
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v), false
	}
	return string(b), false
}

// share divides budget among parts, setting each one's keep: parts that fit
// in an equal share keep all of themselves, and the rest split what is left
// equally (water filling), less their marker. It reports whether any part
// must be cut.
func share(parts []*answerPart, budget int) bool {
	total := 0
	for _, p := range parts {
		total += p.cost
		p.keep = p.cost
	}
	if total <= budget {
		return false
	}
	byLen := slices.Clone(parts)
	slices.SortStableFunc(byLen, func(a, b *answerPart) int { return a.cost - b.cost })
	left := max(budget, 0)
	for i, p := range byLen {
		fair := left / (len(byLen) - i)
		if p.cost > fair {
			p.keep = max(fair-p.marker, 0)
		}
		left -= min(p.cost, fair)
	}
	return true
}

// cut keeps p's head (two thirds of its share) and tail (one third) and
// marks what it dropped, and where the rest is. No cut leaves part of a
// value (package textcut): the gate, which reads the answer after it, sees
// every value kept whole, and no half of one it would not know.
func (s *Server) cut(p *answerPart, where string) string {
	share := p.keep / p.weight
	head := prefixWithin(p.text, share*2/3)
	tail := suffixWithin(p.text, share-share*2/3)
	h := textcut.Cut(p.text, head, s.gate.Cut)
	t := max(h, textcut.Resume(p.text, tail, s.gate.Cut))
	return p.text[:h] + cutMarker(utf8.RuneCountInString(p.text[h:t]), utf8.RuneCountInString(p.text), where) + p.text[t:]
}

// cutMarker is the note that marks a cut.
func cutMarker(cut, of int, where string) string {
	return fmt.Sprintf("\n[codecell: %d of %d characters cut here, to the answer budget; %s]\n", cut, of, where)
}

// jsonLen is the length of text as a JSON string's contents.
func jsonLen(text string) int {
	n := 0
	for i := 0; i < len(text); {
		c, size := jsonRune(text[i:])
		n += c
		i += size
	}
	return n
}

// jsonRune is what the character at the start of text costs in JSON, at
// most (encoding/json escapes <, > and &), and its size in text.
func jsonRune(text string) (cost, size int) {
	r, size := utf8.DecodeRuneInString(text)
	switch {
	case r == utf8.RuneError && size == 1, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return 6, size
	case r == '"', r == '\\', r == '\n', r == '\r', r == '\t':
		return 2, size
	case r < 0x20:
		return 6, size
	}
	return size, size
}

// prefixWithin is the end of the longest prefix of text whose JSON costs at
// most n.
func prefixWithin(text string, n int) int {
	i := 0
	for i < len(text) {
		c, size := jsonRune(text[i:])
		if n -= c; n < 0 {
			break
		}
		i += size
	}
	return i
}

// suffixWithin is the start of the longest suffix of text whose JSON costs
// at most n.
func suffixWithin(text string, n int) int {
	i := len(text)
	for i > 0 {
		_, size := utf8.DecodeLastRuneInString(text[:i])
		c, _ := jsonRune(text[i-size:])
		if n -= c; n < 0 {
			break
		}
		i -= size
	}
	return i
}

// saveWholeOutput writes whole to a new file under outputDir in the
// namespace's workspace, drops all but the newest keptOutputs there, and
// returns the file's workspace path.
func (s *Server) saveWholeOutput(ctx context.Context, ns string, whole wholeOutput) (string, error) {
	var b strings.Builder
	section := func(name, text string) {
		if text == "" {
			return
		}
		fmt.Fprintf(&b, "===== %s =====\n%s", name, text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
	}
	stream := func(name, cut string) {
		head, tail, dropped, ok := whole.Spill.text(name)
		if !ok {
			section(name, cut)
			return
		}
		section(name, head)
		if dropped > 0 {
			fmt.Fprintf(&b, "[codecell: %d bytes of %s dropped here, past the %d MiB this file keeps whole; its last %d bytes follow]\n",
				dropped, name, SavedOutputLimit>>20, len(tail))
		}
		b.WriteString(tail)
		if tail != "" && !strings.HasSuffix(tail, "\n") {
			b.WriteString("\n")
		}
	}
	stream("stdout", whole.Stdout)
	stream("stderr", whole.Stderr)
	if whole.Result != nil {
		r, _ := resultText(whole.Result)
		section("result", r)
	}
	if whole.Error != nil {
		section("error", ErrorText(whole.Error))
	}
	var files strings.Builder
	for _, f := range whole.Files {
		files.WriteString(f.Path + "\n")
	}
	section("files", files.String())
	section("files deleted", strings.Join(whole.Deleted, "\n"))
	return s.saveOutputFile(ns, "txt", []byte(b.String()))
}

// saveOutputFile writes data to a new file of the namespace's output
// directory, named by the time and ext, and keeps the newest keptOutputs
// files of that extension there. It returns the file's workspace path.
func (s *Server) saveOutputFile(ns, ext string, data []byte) (string, error) {
	var suffix [3]byte
	rand.Read(suffix[:])
	name := fmt.Sprintf("%s/%s-%s.%s", outputDir, time.Now().UTC().Format("20060102-150405.000"), hex.EncodeToString(suffix[:]), ext)
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return "", err
	}
	defer ws.Close()
	if _, err := ws.Write(name, data); err != nil {
		return "", err
	}
	// The names sort by time: keep the newest.
	if l, err := ws.List(outputDir, "*."+ext, 0); err == nil {
		var names []string
		for _, e := range l.Entries {
			if !e.IsDir {
				names = append(names, e.Path)
			}
		}
		slices.Sort(names)
		for len(names) > keptOutputs {
			if err := ws.Delete(names[0], false); err != nil {
				s.log.Warn("drop an old output", "namespace", ns, "error", err)
			}
			names = names[1:]
		}
	}
	return name, nil
}

// fitText cuts text, which an answer holds twice (its structured content
// and its text), so that the two cost at most room bytes of JSON, the head
// and the tail kept and the cut marked, saying where the whole is; text
// that fits is returned as it is. For the tools whose answer is one large
// text (a skill's code, a code file).
func (s *Server) fitText(text string, room int, where string) string {
	p := textPart(text, len(cutMarker(len(text), len(text), where))*2)
	if room <= 0 || p.cost <= room {
		return text
	}
	p.keep = max(room-p.marker, 2*p.weight)
	return s.cut(p, where)
}

// textRoom is what one large text may cost in the answer to req: the
// budget, less what the rest of the answer takes; 0 (no bound) with the
// budget off, or for a call from code, whose answer reaches the code and
// not the model.
func (s *Server) textRoom(req *mcp.CallToolRequest) int {
	if b := s.cfg.Sandbox.AnswerBudget; b > 0 && toModel(req) {
		return max(b-1024, 1024)
	}
	return 0
}

// toModel says whether req's answer goes to a client, and so to a model:
// a call from code (callFromCode) has no session.
func toModel(req *mcp.CallToolRequest) bool {
	return req != nil && req.Session != nil
}
