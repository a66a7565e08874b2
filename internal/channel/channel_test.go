package channel

import (
	"bytes"
	"encoding/binary"
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
