package channel

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func frame(payload string) []byte {
	b := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	copy(b[4:], payload)
	return b
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	type exec struct {
		Type string `json:"type"`
		Code string `json:"code"`
	}
	want := []exec{{"exec", "print(1)"}, {"exec", strings.Repeat("é", 1000)}}
	for _, m := range want {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(&buf, 0)
	for _, m := range want {
		got, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		var e exec
		if err := got.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if e != m || got.Type != m.Type {
			t.Fatalf("got %+v, want %+v", e, m)
		}
	}
	if _, err := r.Read(); err != io.EOF {
		t.Fatalf("at end: %v, want io.EOF", err)
	}
}

func TestReadErrors(t *testing.T) {
	huge := make([]byte, 4)
	binary.BigEndian.PutUint32(huge, 1<<31)
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"too large", huge, ErrFrameTooLarge},
		{"just over limit", frame(`{"type":"x","pad":"` + strings.Repeat("a", 100) + `"}`), ErrFrameTooLarge},
		{"cut header", []byte{0, 0}, io.ErrUnexpectedEOF},
		{"cut payload", frame(`{"type":"x"}`)[:8], io.ErrUnexpectedEOF},
		{"not json", frame(`hello`), ErrBadFrame},
		{"not object", frame(`[1,2]`), ErrBadFrame},
		{"no type", frame(`{"code":1}`), ErrBadFrame},
		{"empty type", frame(`{"type":""}`), ErrBadFrame},
		{"type not string", frame(`{"type":7}`), ErrBadFrame},
		{"empty payload", frame(``), ErrBadFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tt.input), 64).Read()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// FuzzReader feeds arbitrary bytes to the frame parser: it must never panic,
// never return a message without a type, and never allocate past its limit.
func FuzzReader(f *testing.F) {
	f.Add(frame(`{"type":"result","ok":true}`))
	f.Add(append(frame(`{"type":"stdout","data":"x"}`), frame(`{"type":"exit"}`)...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add(frame(`{"type":null}`))
	f.Add(frame(`{"type":"a","type":"b"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), 1024)
		for i := 0; i < 100; i++ {
			m, err := r.Read()
			if err != nil {
				return
			}
			if m.Type == "" || len(m.Raw) > 1024 {
				t.Fatalf("accepted bad message %+v", m)
			}
		}
	})
}

// callHead is a Head for the tests: a call frame's fields.
type callHead struct {
	Type   *string         `json:"type"`
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func (h *callHead) FrameType() string {
	if h.Type == nil {
		return ""
	}
	return *h.Type
}

func TestReadInto(t *testing.T) {
	tests := []struct {
		name, payload string
		typ           string // "" when refused
		decoded       bool
	}{
		{"call", `{"type":"call","id":3,"method":"tool","params":{"a":[1]}}`, "call", true},
		{"other fields", `{"type":"output","stream":"stdout","data":"x"}`, "output", true},
		{"id not an integer", `{"type":"call","id":"x","method":"tool"}`, "call", false},
		{"null after a type", `{"type":"call","type":null}`, "", false},
		{"no type", `{"id":1}`, "", false},
		{"not json", `{"type":"call",`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h callHead
			m, decoded, err := NewReader(bytes.NewReader(frame(tt.payload)), 0).ReadInto(&h)
			if tt.typ == "" {
				if !errors.Is(err, ErrBadFrame) {
					t.Fatalf("err = %v, want ErrBadFrame", err)
				}
				return
			}
			if err != nil || m.Type != tt.typ || decoded != tt.decoded || string(m.Raw) != tt.payload {
				t.Fatalf("got %+v, %v, %v; want type %q, decoded %v", m, decoded, err, tt.typ, tt.decoded)
			}
			if decoded && tt.typ == "call" && (h.ID != 3 || h.Method != "tool" || string(h.Params) != `{"a":[1]}`) {
				t.Errorf("head %+v", h)
			}
		})
	}
}

// FuzzReadInto: ReadInto accepts and refuses what Read does, with the same
// type, whatever the bytes.
func FuzzReadInto(f *testing.F) {
	f.Add(frame(`{"type":"call","id":1,"method":"tool","params":{}}`))
	f.Add(frame(`{"type":"call","type":null}`))
	f.Add(frame(`{"type":"a","type":"b"}`))
	f.Add(frame(`{"TYPE":"call","Id":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r1, r2 := NewReader(bytes.NewReader(data), 1024), NewReader(bytes.NewReader(data), 1024)
		for i := 0; i < 100; i++ {
			m1, err1 := r1.Read()
			var h callHead
			m2, _, err2 := r2.ReadInto(&h)
			if (err1 == nil) != (err2 == nil) || m1.Type != m2.Type || string(m1.Raw) != string(m2.Raw) {
				t.Fatalf("Read: %+v, %v; ReadInto: %+v, %v", m1, err1, m2, err2)
			}
			if err1 != nil {
				return
			}
		}
	})
}

// callPayload is a tool call frame as the sandbox writes it.
var callPayload = `{"type": "call", "id": 15326, "method": "tool", "params": {"server": "bench", "tool": "echo", "arguments": {"text": "x"}}}`

// BenchmarkReadThenDecode and BenchmarkReadInto compare the two ways of
// reading a call frame.
func BenchmarkReadThenDecode(b *testing.B) {
	f := frame(callPayload)
	for b.Loop() {
		m, err := NewReader(bytes.NewReader(f), 0).Read()
		if err != nil {
			b.Fatal(err)
		}
		var h callHead
		if err := m.Decode(&h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadInto(b *testing.B) {
	f := frame(callPayload)
	for b.Loop() {
		var h callHead
		if _, ok, err := NewReader(bytes.NewReader(f), 0).ReadInto(&h); err != nil || !ok {
			b.Fatal(err)
		}
	}
}
