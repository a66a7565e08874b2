package channel

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxFrame is the largest payload a Reader accepts unless told
// otherwise. It bounds what one hostile frame can make the host allocate.
const DefaultMaxFrame = 8 << 20

// headerSize is the length prefix.
const headerSize = 4

// ErrFrameTooLarge reports a length prefix above the reader's limit.
var ErrFrameTooLarge = errors.New("frame too large")

// ErrBadFrame reports a frame whose payload is not a JSON object with a type.
var ErrBadFrame = errors.New("bad frame")

// Message is one decoded frame. Type says how to read the rest; Raw holds the
// whole payload so the receiver can decode the fields its type defines.
type Message struct {
	Type string
	Raw  json.RawMessage
}

// Decode unmarshals the payload into v.
func (m Message) Decode(v any) error {
	if err := json.Unmarshal(m.Raw, v); err != nil {
		return fmt.Errorf("%w: %s payload: %v", ErrBadFrame, m.Type, err)
	}
	return nil
}

// Reader reads frames. It is not safe for concurrent use.
type Reader struct {
	r   io.Reader
	max int
	hdr [headerSize]byte
}

// NewReader returns a Reader that refuses payloads above max bytes (zero means
// DefaultMaxFrame).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	return &Reader{r: r, max: max}
}

// Read returns the next frame. It returns io.EOF only on a clean end between
// frames; a frame cut short is io.ErrUnexpectedEOF.
func (r *Reader) Read() (Message, error) {
	buf, err := r.payload()
	if err != nil {
		return Message{}, err
	}
	return parse(buf)
}

// Head is what ReadInto decodes a frame into: fields of the frames the
// caller expects most, with the frame's type.
type Head interface {
	// FrameType is the decoded "type" field, "" if it had none. It must
	// be decoded into a *string, as Read does, so that a "type" that is
	// null (even after a string: the last key wins) counts as none.
	FrameType() string
}

// ReadInto is Read that also decodes the payload into head, in the pass that
// finds the frame's type: a caller that decodes most frames into the same
// fields need not decode them a second time with Message.Decode. decoded
// reports whether head holds the frame (it may hold part of it otherwise).
// A frame that does not decode into head is checked as Read checks it, and
// is returned, or refused, as Read would.
func (r *Reader) ReadInto(head Head) (m Message, decoded bool, err error) {
	buf, err := r.payload()
	if err != nil {
		return Message{}, false, err
	}
	if json.Unmarshal(buf, head) == nil {
		if t := head.FrameType(); t != "" {
			return Message{Type: t, Raw: buf}, true, nil
		}
	}
	m, err = parse(buf)
	return m, false, err
}

// payload reads the next frame's payload.
func (r *Reader) payload() ([]byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(r.hdr[:])
	if uint64(n) > uint64(r.max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, r.max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r.r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// parse checks that a payload is a JSON object with a non-empty string type.
func parse(buf []byte) (Message, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(buf, &head); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	if head.Type == nil || *head.Type == "" {
		return Message{}, fmt.Errorf("%w: no type", ErrBadFrame)
	}
	return Message{Type: *head.Type, Raw: buf}, nil
}

// Writer writes frames. It is safe for concurrent use: each frame is written
// whole, under a lock, so frames from different goroutines never interleave.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Encode returns v (which must marshal to a JSON object with a "type") as one
// frame, header included.
func Encode(v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode frame: %w", err)
	}
	if len(payload) > 1<<31 {
		return nil, ErrFrameTooLarge
	}
	frame := make([]byte, headerSize+len(payload))
	binary.BigEndian.PutUint32(frame, uint32(len(payload)))
	copy(frame[headerSize:], payload)
	return frame, nil
}

// Write encodes v as one frame and writes it.
func (w *Writer) Write(v any) error {
	frame, err := Encode(v)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.w.Write(frame)
	return err
}
