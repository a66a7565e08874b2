package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The answer budget (SPEC §4.1): what one execution returns to the model is
// at most sandbox.answerBudget characters of stdout, stderr and result
// together. Past it each part keeps its head and tail, the cut marked in
// it, and the whole output goes to a workspace file that the result links
// to, where code (or the host) reads it. A model reads the answer in every
// later turn, so a print of a whole data set costs it once per turn; the
// budget keeps that to what a model can use.

// outputDir is the workspace directory of the whole outputs of cut
// answers; keptOutputs is how many of them it keeps, newest first.
const (
	outputDir   = ".codecell/output"
	keptOutputs = 10
)

// cutWindow is how far either side of a cut the gate looks for a value
// the cut would split: more than any value is long but a private key's
// block (about 3.3 KB for a 4096-bit RSA key).
const cutWindow = 4 << 10

// markerRoom is what a cut's marker costs of a part's share, about.
const markerRoom = 120

// wholeOutput is an execution's output before any cut, as the code made it.
type wholeOutput struct {
	Stdout, Stderr string
	Result         any
}

// answerPart is one part of the answer that the budget may cut.
type answerPart struct {
	text  string
	runes int
	keep  int // runes kept
}

// boundAnswer cuts out's stdout, stderr and result to the answer budget,
// head and tail with the cut marked, and writes whole to a workspace file
// named in out.OutputFile. It returns a resource link to that file, or nil
// when nothing was cut. whole stays in the namespace's workspace as the code
// made it, where code sees the same data anyway; what reaches the model
// passes the gate.
func (s *Server) boundAnswer(ctx context.Context, ns string, out *ExecuteCodeOutput, whole wholeOutput) (*mcp.ResourceLink, error) {
	budget := s.cfg.Sandbox.AnswerBudget
	if budget <= 0 {
		return nil, nil
	}
	result, resultIsText := resultText(out.Result)
	parts := []*answerPart{
		{text: out.Stdout, runes: utf8.RuneCountInString(out.Stdout)},
		{text: out.Stderr, runes: utf8.RuneCountInString(out.Stderr)},
		{text: result, runes: utf8.RuneCountInString(result)},
	}
	if !share(parts, budget) {
		return nil, nil
	}
	file, err := s.saveWholeOutput(ctx, ns, whole)
	where := "the whole output is in the workspace file " + file
	if err != nil {
		s.log.Warn("save the whole output", "namespace", ns, "error", err)
		where = "the whole output could not be saved: " + err.Error()
		file = ""
	}
	if out.Truncated == nil {
		out.Truncated = &Truncated{}
	}
	if parts[0].keep < parts[0].runes {
		out.Stdout, out.Truncated.Stdout = s.cut(parts[0], where), true
	}
	if parts[1].keep < parts[1].runes {
		out.Stderr, out.Truncated.Stderr = s.cut(parts[1], where), true
	}
	if parts[2].keep < parts[2].runes {
		// A JSON value cut in the middle is no longer JSON: the result
		// becomes the text of its head and tail.
		out.Result, out.Truncated.Result = s.cut(parts[2], where), true
		if !resultIsText {
			out.Result = "[codecell: the result's JSON, cut] " + out.Result.(string)
		}
	}
	if file == "" {
		return nil, nil
	}
	out.OutputFile = file
	return &mcp.ResourceLink{URI: fileURI(file), Name: file, MIMEType: "text/plain"}, nil
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
// equally (water filling). It reports whether any part must be cut.
func share(parts []*answerPart, budget int) bool {
	total := 0
	for _, p := range parts {
		total += p.runes
		p.keep = p.runes
	}
	if total <= budget {
		return false
	}
	byLen := slices.Clone(parts)
	slices.SortStableFunc(byLen, func(a, b *answerPart) int { return a.runes - b.runes })
	left := budget
	for i, p := range byLen {
		fair := left / (len(byLen) - i)
		if p.runes > fair {
			p.keep = max(fair-markerRoom, 0)
		}
		left -= min(p.runes, fair)
	}
	return true
}

// cut keeps p's head (two thirds of its share) and tail (one third) and
// marks what it dropped, and where the rest is. It cuts where no value the
// gate finds is cut in two, so that the gate, which reads the answer after
// it, sees every value kept whole; the head may be a little shorter and
// the tail a little longer than their shares.
func (s *Server) cut(p *answerPart, where string) string {
	head := p.keep * 2 / 3
	tail := p.keep - head
	h := s.cutNear(p.text, byteIndex(p.text, head))
	t := max(h, s.cutNear(p.text, byteIndex(p.text, p.runes-tail)))
	return fmt.Sprintf("%s\n[codecell: %d of %d characters cut here, to the answer budget; %s]\n%s",
		p.text[:h], utf8.RuneCountInString(p.text[h:t]), p.runes, where, p.text[t:])
}

// cutNear returns a place at or before byte i of text that cuts no value
// in two. The gate looks at cutWindow bytes either side, not at the whole
// text: a 1 MiB output costs what 8 KiB does.
func (s *Server) cutNear(text string, i int) int {
	lo := max(0, i-cutWindow)
	for lo > 0 && !utf8.RuneStart(text[lo]) {
		lo--
	}
	hi := min(len(text), i+cutWindow)
	return lo + s.gate.Cut(text[lo:hi], i-lo)
}

// byteIndex is the byte offset of rune n of text.
func byteIndex(text string, n int) int {
	for i := range text {
		if n == 0 {
			return i
		}
		n--
	}
	return len(text)
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
	section("stdout", whole.Stdout)
	section("stderr", whole.Stderr)
	if whole.Result != nil {
		r, _ := resultText(whole.Result)
		section("result", r)
	}
	var suffix [3]byte
	rand.Read(suffix[:])
	name := fmt.Sprintf("%s/%s-%s.txt", outputDir, time.Now().UTC().Format("20060102-150405.000"), hex.EncodeToString(suffix[:]))
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return "", err
	}
	defer ws.Close()
	if _, err := ws.Write(name, []byte(b.String())); err != nil {
		return "", err
	}
	// The names sort by time: keep the newest.
	if l, err := ws.List(outputDir, "*.txt", 0); err == nil {
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
