package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxMessageDepth bounds how deeply a message from the client may nest.
// The SDK refuses messages past 1,000 levels by ending the whole stdio
// session; codecell refuses them sooner, one request at a time.
const maxMessageDepth = 512

// maxLine bounds one message from the client, as the SDK's own stdio
// transport does (mcp.DefaultMaxLineLength).
const maxLine = mcp.DefaultMaxLineLength

// NewStdioTransport is MCP over newline-delimited JSON on in and out, like
// mcp.StdioTransport, except that a message that is not JSON, nests too
// deeply or is too long fails only itself: the client gets a JSON-RPC error
// for it (with its id when one can be read) and the session goes on. The
// SDK's transport ends the session, and every interpreter session in it,
// on the first such message.
func NewStdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	return newStdioTransport(nil, in, out)
}

// StdioTransport is NewStdioTransport for s: it also answers the tasks/*
// methods (InterceptTaskMessage), in the default namespace.
func (s *Server) StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	return newStdioTransport(s, in, out)
}

func newStdioTransport(s *Server, in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	pass := func(line []byte) []byte { return line }
	if s != nil {
		ctx := context.Background()
		pass = func(line []byte) []byte {
			return s.InterceptTaskMessage(ctx, DefaultNamespace, line, func(resp []byte) {
				w.Write(append(resp, '\n'))
			})
		}
	}
	go screen(in, pw, w, pass)
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// lockedWriter serializes writes; the SDK writes each message, newline
// included, in one call, and so does screen.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// screen copies the messages of in that the SDK can take to pw, one per
// line, and answers the others itself; pass sees each message first, and
// returns what goes on to the SDK (nil for nothing: it answered it).
func screen(in io.Reader, pw *io.PipeWriter, out io.Writer, pass func([]byte) []byte) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, end, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			if code, problem := checkMessage(line); problem != "" {
				id := messageID(line)
				if id == nil && end != nil {
					id = endID(end)
				}
				reply := map[string]any{"jsonrpc": "2.0", "id": id,
					"error": map[string]any{"code": code, "message": "invalid message: " + problem}}
				b, _ := json.Marshal(reply)
				out.Write(append(b, '\n'))
			} else if line = pass(line); line == nil {
				// answered
			} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return
			}
		}
		if err != nil {
			pw.CloseWithError(err)
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline; a line over maxLine is
// read to its end and returned as its first maxLine+1 bytes, and end is
// its last tailKept bytes (nil for a line within maxLine): clients put a
// request's id after its params ({...request, jsonrpc, id} in the
// TypeScript SDK), and the error for a line too long must carry it.
func readLine(r *bufio.Reader) (line, end []byte, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line) <= maxLine {
			line = append(line, chunk[:min(len(chunk), maxLine+1-len(line))]...)
		}
		if len(line) > maxLine {
			end = append(end, chunk...)
			if len(end) > 2*tailKept {
				end = append(end[:0], end[len(end)-tailKept:]...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		end = bytes.TrimSuffix(end, []byte("\n"))
		return bytes.TrimSuffix(line, []byte("\n")), end[max(0, len(end)-tailKept):], err
	}
}

// tailKept is how much of the end of a line too long readLine keeps, for
// the id there.
const tailKept = 4 << 10

// trailingID matches an "id" that is the last member of the line's object.
// A member of a nested object is followed by more than one closing brace,
// so this is the top-level id, unless the line is not JSON (then the error
// is for a message that could not be read anyway).
var trailingID = regexp.MustCompile(`"id"\s*:\s*(-?[0-9][0-9.eE+-]*|"(?:[^"\\]|\\.)*")\s*}\s*$`)

// endID is the id at the end of a line too long to read whole, or nil.
func endID(end []byte) any {
	m := trailingID.FindSubmatch(end)
	if m == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(m[1]))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil
	}
	return t
}

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// checkMessage says what is wrong with a line, with its JSON-RPC error
// code, or "" when the SDK can take it.
func checkMessage(line []byte) (int, string) {
	if len(line) > maxLine {
		return codeInvalidRequest, fmt.Sprintf("longer than %d bytes", maxLine)
	}
	if d := depth(line); d > maxMessageDepth {
		return codeInvalidRequest, fmt.Sprintf("nests deeper than %d levels", maxMessageDepth)
	}
	if !json.Valid(line) {
		return codeParseError, "not valid JSON"
	}
	return 0, ""
}

// depth is how deeply the JSON text nests arrays and objects, counting
// brackets outside strings.
func depth(b []byte) int {
	d, most, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			d++
			most = max(most, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return most
}

// messageID is the top-level "id" of a message, read token by token so that
// a value nested too deeply for the SDK is skipped, not decoded; nil when
// there is none or it cannot be read.
func messageID(line []byte) any {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		if key == "id" {
			t, err := dec.Token()
			if err != nil {
				return nil
			}
			switch t.(type) {
			case string, json.Number:
				return t
			}
			return nil
		}
		if skipValue(dec) != nil {
			return nil
		}
	}
	return nil
}

// skipValue reads past one value, however deeply it nests.
func skipValue(dec *json.Decoder) error {
	d := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('['), json.Delim('{'):
			d++
		case json.Delim(']'), json.Delim('}'):
			d--
		}
		if d == 0 {
			return nil
		}
	}
}
