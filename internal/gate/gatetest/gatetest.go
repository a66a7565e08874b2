// Package gatetest builds what the gate's tests and the server's data-path
// tests feed the gate: images and text in the encodings of real files. Only
// tests import it.
package gatetest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
)

// noisyImage is an image of random pixels, so that its compressed data
// has every byte value.
func noisyImage() image.Image {
	r := rand.New(rand.NewPCG(1, 2))
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	for i := range img.Pix {
		img.Pix[i] = byte(r.IntN(256))
	}
	return img
}

// PNG is a PNG of random pixels.
func PNG(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, noisyImage()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// JPEG is a JPEG of random pixels.
func JPEG(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, noisyImage(), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// WithPNGChunk inserts a chunk after a PNG's IHDR.
func WithPNGChunk(p []byte, typ string, data []byte) []byte {
	c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	c = append(c, typ...)
	c = append(c, data...)
	c = binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
	at := 8 + 25 // signature, IHDR
	return append(append(append([]byte(nil), p[:at]...), c...), p[at:]...)
}

// WithJPEGComment inserts a COM segment after a JPEG's SOI.
func WithJPEGComment(j []byte, text string) []byte {
	seg := []byte{0xff, 0xfe}
	seg = binary.BigEndian.AppendUint16(seg, uint16(len(text)+2))
	seg = append(seg, text...)
	return append(append(append([]byte(nil), j[:2]...), seg...), j[2:]...)
}

// UTF16 encodes s in UTF-16 in the byte order given, after a BOM if bom.
func UTF16(s string, order binary.AppendByteOrder, bom bool) []byte {
	var out []byte
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xfeff}, units...)
	}
	for _, u := range units {
		out = order.AppendUint16(out, u)
	}
	return out
}

// NoneOf fails the test if text holds any of raw.
func NoneOf(t testing.TB, where, text string, raw ...string) {
	t.Helper()
	for _, r := range raw {
		if strings.Contains(text, r) {
			t.Errorf("%s holds %q:\n%s", where, r, text)
		}
	}
}

// FromUTF16 decodes b as UTF-16 after its byte-order mark; false when b has
// none.
func FromUTF16(b []byte) (string, bool) {
	var order binary.ByteOrder
	switch {
	case len(b) >= 2 && b[0] == 0xff && b[1] == 0xfe:
		order = binary.LittleEndian
	case len(b) >= 2 && b[0] == 0xfe && b[1] == 0xff:
		order = binary.BigEndian
	default:
		return "", false
	}
	units := make([]uint16, 0, len(b)/2)
	for i := 2; i+1 < len(b); i += 2 {
		units = append(units, order.Uint16(b[i:]))
	}
	return string(utf16.Decode(units)), true
}
