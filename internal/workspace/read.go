package workspace

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"unicode/utf8"
)

// Bounds on how much one Read returns.
const (
	DefaultReadLimit = 256 << 10
	MaxReadLimit     = 1 << 20
)

// Chunk is a part of a file, as Read returns it.
type Chunk struct {
	Path   string // cleaned, relative to the workspace
	Size   int64  // of the whole file
	Offset int64  // where Data starts in the file
	Data   []byte
	More   bool // bytes remain after Data; read on at Offset+len(Data)
	// Text says that Data is UTF-8 without NUL bytes; otherwise it is
	// binary and wants an encoding such as base64 to travel as text.
	Text     bool
	MIMEType string // from the name's extension, else sniffed from the file's start
}

// Read returns up to limit bytes of the regular file name from offset on
// (limit <= 0 means DefaultReadLimit; more than MaxReadLimit is cut to it).
// A text chunk that would end inside a UTF-8 sequence ends before it.
func (w *Workspace) Read(name string, offset, limit int64) (*Chunk, error) {
	clean, err := Clean(name)
	if err != nil {
		return nil, &Error{Op: "read", Path: name, Err: err}
	}
	switch {
	case limit <= 0:
		limit = DefaultReadLimit
	case limit > MaxReadLimit:
		limit = MaxReadLimit
	}
	if offset < 0 {
		return nil, &Error{Op: "read", Path: name, Err: fmt.Errorf("offset %d is negative", offset)}
	}
	f, fi, err := w.openRegular(clean)
	if err != nil {
		return nil, fail("read", name, err)
	}
	defer f.Close()
	size := fi.Size()
	if offset > size {
		return nil, &Error{Op: "read", Path: name, Err: fmt.Errorf("offset %d is past the end of the file (%d bytes)", offset, size)}
	}
	data := make([]byte, min(limit, size-offset))
	n, err := f.ReadAt(data, offset)
	if err != nil && err != io.EOF {
		return nil, fail("read", name, err)
	}
	data = data[:n]
	c := &Chunk{Path: filepath.ToSlash(clean), Size: size, Offset: offset}
	more := offset+int64(n) < size
	c.Data, c.Text = textPart(data, more)
	c.More = offset+int64(len(c.Data)) < size
	c.MIMEType = mimeType(clean, c, f)
	return c, nil
}

// textPart says whether data is text, cutting an incomplete UTF-8 sequence
// at its end when more follows (the next read then starts with it).
func textPart(data []byte, more bool) ([]byte, bool) {
	if bytes.IndexByte(data, 0) >= 0 {
		return data, false
	}
	if utf8.Valid(data) {
		return data, true
	}
	if more {
		for cut := 1; cut <= utf8.UTFMax-1 && cut < len(data); cut++ {
			if utf8.RuneStart(data[len(data)-cut]) {
				if t := data[:len(data)-cut]; utf8.Valid(t) {
					return t, true
				}
				break
			}
		}
	}
	return data, false
}

// mimeType is the type of a file: by its extension when it has a known one,
// else plain text for a text chunk, else sniffed from the file's first
// bytes, which are read again only when the chunk does not start there.
func mimeType(name string, c *Chunk, f io.ReaderAt) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	if c.Text {
		return "text/plain; charset=utf-8"
	}
	head := c.Data
	if c.Offset != 0 {
		head = make([]byte, 512)
		k, _ := f.ReadAt(head, 0)
		head = head[:k]
	}
	return http.DetectContentType(head)
}
