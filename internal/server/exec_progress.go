package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/textcut"
)

// Progress reports: how often, and how much of the latest output they
// carry.
const (
	progressEvery = 500 * time.Millisecond
	progressLines = 5
	progressLine  = 200  // characters kept of one line
	progressTail  = 8192 // bytes of recent output kept to find the lines in
)

// progress sends MCP progress notifications while an execution runs, to a
// client that asked for them with a progress token: the elapsed time as the
// progress value, and the latest output lines, tokenized like all output.
type progress struct {
	s     *Server
	ns    string
	ss    *mcp.ServerSession
	token any
	start time.Time

	mu    sync.Mutex // guards tail and whole
	tail  []byte     // the end of stdout and stderr, interleaved as they came
	whole bool       // tail holds the output from its start
}

// startProgress starts reporting the execution req asked for, if it gave a
// progress token. It returns the sandbox.Request.OnOutput to feed it (nil
// when there is nothing to report) and a stop function to call when the
// execution has ended.
func (s *Server) startProgress(ctx context.Context, req *mcp.CallToolRequest, ns string) (func(string, []byte), func()) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil, func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil, func() {}
	}
	p := &progress{s: s, ns: ns, ss: req.Session, token: token, start: time.Now(), whole: true}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				// A run that became a task reports in the task's status,
				// not to the request that has returned.
				if r := runOf(ctx); r == nil || !r.isTask() {
					p.send(ctx)
				}
			}
		}
	}()
	return p.output, func() {
		close(done)
		<-stopped
	}
}

// output keeps the end of the output; it is the sandbox's OnOutput.
func (p *progress) output(_ string, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tail = append(p.tail, data...)
	if len(p.tail) > progressTail {
		p.tail = append(p.tail[:0], p.tail[len(p.tail)-progressTail:]...)
		p.whole = false
	}
}

// lines returns the latest complete output lines. A line still being
// written is left for a later report, and so is the first line of the
// tail when the tail starts inside it: a value written in two parts
// ("4111 1111" then " 1111 1111\n") would show as two halves no detector
// finds. A line longer than progressLine characters is cut where no
// value is cut (package textcut).
func (p *progress) lines() []string {
	p.mu.Lock()
	text := string(p.tail)
	whole := p.whole
	p.mu.Unlock()
	end := strings.LastIndexByte(text, '\n')
	if end < 0 {
		return nil
	}
	text = text[:end]
	if !whole {
		nl := strings.IndexByte(text, '\n')
		if nl < 0 {
			return nil
		}
		text = text[nl+1:]
	}
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if utf8.RuneCountInString(l) > progressLine {
			limit := 0
			for range progressLine {
				_, size := utf8.DecodeRuneInString(l[limit:])
				limit += size
			}
			l = l[:textcut.Cut(l, limit, p.s.gate.Cut)] + "…"
		}
		out = append(out, l)
	}
	return out[max(0, len(out)-progressLines):]
}

// message says how long the execution has run and its latest output
// lines, untokenized: its way out passes the gate.
func (p *progress) message() string {
	msg := fmt.Sprintf("running for %.1fs", time.Since(p.start).Seconds())
	if lines := p.lines(); len(lines) > 0 {
		msg += "; latest output:\n" + strings.Join(lines, "\n")
	}
	return msg
}

func (p *progress) send(ctx context.Context) {
	elapsed := time.Since(p.start)
	// The gate tokenizes the message on its way (gateSending).
	msg := p.message()
	if err := p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: elapsed.Seconds(), Message: msg,
	}); err != nil && ctx.Err() == nil {
		p.s.log.Debug("progress notification", "error", err)
	}
}
