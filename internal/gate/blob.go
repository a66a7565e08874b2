package gate

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Blobs (an image's data, a resource's or a file page's bytes) reach the
// model as base64, which no detector reads. So the gate reads every blob
// in the form its bytes mean before it lets it through:
//
//   - Text, in any encoding it can recognize (UTF-8; UTF-16 and UTF-32 with
//     a byte order mark or, without one, mostly ASCII; else Latin-1 when no
//     byte is a control character): decoded, tokenized, and encoded again
//     in the same encoding when a value was found. An SVG is text, whatever
//     its MIME type says.
//   - A raster image (PNG, JPEG, GIF, WebP, BMP, TIFF, ICO, by its magic
//     number, not the MIME type it claims): its pixels hold no text, but
//     its metadata may (PNG tEXt, zTXt and iTXt chunks; EXIF, XMP and
//     comments in the others). A PNG's text chunks are decompressed and
//     tokenized, each rewritten as plain text when a value was found; the
//     readable runs of every image's other bytes (ASCII, UTF-8, UTF-16)
//     are examined, and an image with a value there is withheld whole
//     rather than cut into.
//   - Anything else (an archive, a PDF, audio, a compressed stream, part
//     of an image) the gate cannot read: it is withheld while the gate is
//     on, never sent raw.
//
// A blob in which nothing is found is sent as it is, byte for byte.

// errUnreadable says why a blob was withheld; its message is the short
// explanation the model gets in the blob's place.
type errUnreadable struct{ what string }

func (e *errUnreadable) Error() string {
	return fmt.Sprintf("withheld by the privacy gate: %s; read or convert it with execute_code, whose output is tokenized", e.what)
}

// isUnreadable reports whether err withheld a blob.
func isUnreadable(err error) bool {
	var u *errUnreadable
	return errors.As(err, &u)
}

// blob tokenizes a blob of the given MIME type (a hint only).
func (g *Gate) blob(ctx context.Context, ns, mimeType string, b []byte) ([]byte, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	if g.Off() || len(b) == 0 {
		return b, nil
	}
	if kind := rasterKind(b); kind != "" {
		return g.raster(ctx, ns, kind, b)
	}
	if enc, text, ok := decodeText(b); ok {
		out, err := g.Text(ctx, ns, text)
		if err != nil || out == text {
			return b, err
		}
		return enc.encode(out), nil
	}
	what := http.DetectContentType(b)
	if mimeType != "" {
		what = mimeType
	}
	return nil, &errUnreadable{what: fmt.Sprintf("%d bytes of %s, which it cannot read", len(b), what)}
}

// rasterKind is the format of a raster image by its magic number, or "".
func rasterKind(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	case bytes.HasPrefix(b, []byte("BM")) && len(b) >= 26:
		return "bmp"
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "tiff"
	case bytes.HasPrefix(b, []byte("\x00\x00\x01\x00")):
		return "ico"
	}
	return ""
}

// raster tokenizes an image's text chunks (PNG) and withholds an image
// with a value elsewhere in its readable bytes.
func (g *Gate) raster(ctx context.Context, ns, kind string, b []byte) ([]byte, error) {
	var rest []byte
	switch kind {
	case "png":
		var err error
		if b, rest, err = g.pngText(ctx, ns, b); err != nil {
			return nil, err
		}
	case "jpeg":
		rest = jpegMeta(b)
	case "webp":
		rest = webpMeta(b)
	default:
		rest = b
	}
	if runs := readableRuns(rest); runs != "" {
		if g.det.Find(runs) != nil || len(scopeOf(ctx).knownValues()) > 0 && g.holdsKnown(ctx, runs) {
			return nil, &errUnreadable{what: fmt.Sprintf("a %s image whose metadata holds personal data", kind)}
		}
	}
	return b, nil
}

// holdsKnown reports whether text holds a value restored for the request.
func (g *Gate) holdsKnown(ctx context.Context, text string) bool {
	for _, k := range scopeOf(ctx).knownValues() {
		if len(k.Value) >= 4 && strings.Contains(text, k.Value) {
			return true
		}
	}
	return false
}

// pngText tokenizes a PNG's text chunks, rewriting as uncompressed text
// each one in which a value was found. It returns the image and its bytes
// other than the text chunks, for the caller to examine. A PNG it cannot
// walk (cut short, a chunk's length past the end) is withheld.
func (g *Gate) pngText(ctx context.Context, ns string, b []byte) (img, rest []byte, err error) {
	const sig = 8
	out := append([]byte(nil), b[:sig]...)
	rest = append([]byte(nil), b[:sig]...)
	for i := sig; i < len(b); {
		n, typ := 0, ""
		if i+8 <= len(b) {
			n, typ = int(binary.BigEndian.Uint32(b[i:])), string(b[i+4:i+8])
		}
		end := i + 12 + n
		if i+12 > len(b) || end > len(b) || end < i {
			// Cut short: the rest is examined as bytes, unless it is a
			// text chunk that may be compressed, which is not readable so.
			if typ == "zTXt" || typ == "iTXt" {
				return nil, nil, &errUnreadable{what: "a PNG image cut short in a text chunk"}
			}
			return append(out, b[i:]...), append(rest, b[i:]...), nil
		}
		chunk := b[i:end]
		data := b[i+8 : i+8+n]
		i = end
		switch typ {
		case "tEXt", "zTXt", "iTXt":
			key, text, ok := pngChunkText(typ, data)
			if !ok {
				return nil, nil, &errUnreadable{what: "a PNG image with a text chunk it cannot read"}
			}
			t, err := g.labelled(ctx, ns, key, text)
			if err != nil {
				return nil, nil, err
			}
			if t != text {
				chunk = pngITXt(key, t)
			}
			out = append(out, chunk...)
		case "IDAT", "fdAT":
			// Compressed pixels: no text, and random enough to look like
			// some by chance.
			out = append(out, chunk...)
		default:
			out = append(out, chunk...)
			rest = append(rest, chunk...)
		}
	}
	return out, rest, nil
}

// jpegMeta is a JPEG's bytes but its entropy-coded scans (compressed
// pixels, which hold no text): its markers and segments, where EXIF, XMP
// and comments are. A JPEG it cannot walk is returned whole.
func jpegMeta(b []byte) []byte {
	var out []byte
	i := 2
	for i+4 <= len(b) {
		if b[i] != 0xff {
			return b
		}
		marker := b[i+1]
		if marker == 0xd9 { // end of image
			return out
		}
		if marker == 0xff || marker >= 0xd0 && marker <= 0xd7 || marker == 0x01 {
			i++
			continue
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		end := i + 2 + n
		if n < 2 || end > len(b) {
			return b
		}
		out = append(out, b[i+4:end]...)
		i = end
		if marker == 0xda { // start of scan: skip the scan's data
			for i+1 < len(b) && !(b[i] == 0xff && b[i+1] != 0 && (b[i+1] < 0xd0 || b[i+1] > 0xd7)) {
				i++
			}
		}
	}
	return append(out, b[min(i, len(b)):]...)
}

// webpMeta is a WebP's chunks but its compressed frames: EXIF, XMP and
// any other chunk. A WebP it cannot walk is returned whole.
func webpMeta(b []byte) []byte {
	var out []byte
	for i := 12; i < len(b); {
		if i+8 > len(b) {
			return b
		}
		n := int(binary.LittleEndian.Uint32(b[i+4:]))
		end := i + 8 + n + n%2
		if end > len(b) || end < i {
			return b
		}
		switch string(b[i : i+4]) {
		case "VP8 ", "VP8L", "ALPH", "ANMF":
		default:
			out = append(out, b[i:end]...)
		}
		i = end
	}
	return out
}

// pngChunkText is the keyword and text of a PNG text chunk (tEXt Latin-1,
// zTXt Latin-1 compressed, iTXt UTF-8, compressed or not).
func pngChunkText(typ string, data []byte) (key, text string, ok bool) {
	k, body, found := bytes.Cut(data, []byte{0})
	if !found {
		return "", "", false
	}
	key = latin1(k)
	switch typ {
	case "tEXt":
		return key, latin1(body), true
	case "zTXt":
		if len(body) < 1 {
			return "", "", false
		}
		t, err := inflate(body[1:])
		return key, latin1(t), err == nil
	}
	// iTXt: compression flag, method, language tag NUL, translated keyword NUL, text.
	if len(body) < 2 {
		return "", "", false
	}
	compressed := body[0] == 1
	parts := bytes.SplitN(body[2:], []byte{0}, 3)
	if len(parts) != 3 {
		return "", "", false
	}
	t := parts[2]
	if compressed {
		var err error
		if t, err = inflate(t); err != nil {
			return "", "", false
		}
	}
	// The translated keyword is text too: examine it with the text.
	return key, string(parts[1]) + "\n" + string(t), utf8.Valid(t) && utf8.Valid(parts[1])
}

// maxInflate bounds a decompressed text chunk: a larger one is not read
// (and the image is withheld) rather than let a small image expand
// without bound.
const maxInflate = 8 << 20

func inflate(b []byte) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, maxInflate+1))
	if err == nil && len(out) > maxInflate {
		err = errors.New("text chunk too large")
	}
	return out, err
}

// pngITXt is an uncompressed iTXt chunk of key and text.
func pngITXt(key, text string) []byte {
	var data []byte
	data = append(data, toLatin1(key)...)
	data = append(data, 0, 0, 0, 0, 0) // NUL, not compressed, method, no language, no translated keyword
	data = append(data, text...)
	out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	out = append(out, "iTXt"...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[4:]))
}

// readableRuns are the runs of readable characters in binary data, one a
// line, as strings(1) finds them: UTF-8 and UTF-16 (both byte orders) of
// four characters or more. A value in an image's metadata is written so.
func readableRuns(b []byte) string {
	var out strings.Builder
	var run strings.Builder
	n := 0
	flush := func() {
		if n >= 4 {
			out.WriteString(run.String())
			out.WriteByte('\n')
		}
		run.Reset()
		n = 0
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && (unicode.IsPrint(r) || r == '\t') {
			run.WriteRune(r)
			n++
		} else {
			flush()
		}
		i += size
	}
	flush()
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for start := 0; start < 2; start++ {
			for i := start; i+1 < len(b); i += 2 {
				r := rune(order.Uint16(b[i:]))
				if r < 0x80 && (unicode.IsPrint(r) || r == '\t') || r >= 0xA0 && r < 0x2000 && unicode.IsLetter(r) {
					run.WriteRune(r)
					n++
				} else {
					flush()
				}
			}
			flush()
		}
	}
	return out.String()
}

// textEncoding is how a blob's text was encoded, to encode it back.
type textEncoding struct {
	name  string // "utf-8", "utf-16le", "utf-16be", "utf-32le", "utf-32be", "latin-1"
	bom   []byte
	trail []byte // bytes after the last whole code unit, kept as they were
}

// decodeText decodes b if it is text: with a byte order mark, valid UTF-8
// without NUL bytes, UTF-16 or UTF-32 that is mostly ASCII, or Latin-1
// without control characters.
func decodeText(b []byte) (textEncoding, string, bool) {
	boms := []struct {
		bom  string
		name string
	}{
		{"\xef\xbb\xbf", "utf-8"}, {"\xff\xfe\x00\x00", "utf-32le"}, {"\x00\x00\xfe\xff", "utf-32be"},
		{"\xff\xfe", "utf-16le"}, {"\xfe\xff", "utf-16be"},
	}
	for _, m := range boms {
		if bytes.HasPrefix(b, []byte(m.bom)) {
			enc := textEncoding{name: m.name, bom: []byte(m.bom)}
			if m.name == "utf-8" {
				rest := b[len(m.bom):]
				return enc, string(rest), utf8.Valid(rest) && bytes.IndexByte(rest, 0) < 0
			}
			text, trail, ok := decodeAs(m.name, b[len(m.bom):], false)
			enc.trail = trail
			return enc, text, ok
		}
	}
	if utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		return textEncoding{name: "utf-8"}, string(b), true
	}
	for _, name := range []string{"utf-32le", "utf-32be", "utf-16le", "utf-16be"} {
		if text, trail, ok := decodeAs(name, b, true); ok {
			return textEncoding{name: name, trail: trail}, text, true
		}
	}
	if !utf8.Valid(b) && latin1Text(b) {
		return textEncoding{name: "latin-1"}, latin1(b), true
	}
	return textEncoding{}, "", false
}

// decodeAs decodes b as UTF-16 or UTF-32 of a byte order. Without a byte
// order mark (sniff), the text must be mostly ASCII, as text without a
// mark is in practice, so that binary data is not taken for it. What
// follows the last whole code unit is returned apart.
func decodeAs(name string, b []byte, sniff bool) (string, []byte, bool) {
	var order binary.ByteOrder = binary.LittleEndian
	if strings.HasSuffix(name, "be") {
		order = binary.BigEndian
	}
	unit := 2
	if strings.HasPrefix(name, "utf-32") {
		unit = 4
	}
	whole := len(b) / unit * unit
	trail := b[whole:]
	var runes []rune
	if unit == 2 {
		units := make([]uint16, whole/2)
		for i := range units {
			units[i] = order.Uint16(b[2*i:])
		}
		runes = utf16.Decode(units)
	} else {
		runes = make([]rune, whole/4)
		for i := range runes {
			runes[i] = rune(order.Uint32(b[4*i:]))
		}
	}
	ascii := 0
	for _, r := range runes {
		if r == utf8.RuneError || !utf8.ValidRune(r) || r == 0 || unicode.IsControl(r) && !unicode.IsSpace(r) {
			return "", nil, false
		}
		if r < 0x80 {
			ascii++
		}
	}
	if sniff && (len(runes) == 0 || 2*ascii < len(runes)) {
		return "", nil, false
	}
	return string(runes), trail, true
}

// latin1Text reports whether b reads as Latin-1 text: no control
// characters but white space.
func latin1Text(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
			return false
		}
	}
	return true
}

func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// toLatin1 encodes s in Latin-1; a character outside it (none in what the
// gate writes: tokens are ASCII) becomes '?'.
func toLatin1(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

// encode encodes text as the blob was.
func (e textEncoding) encode(text string) []byte {
	out := append([]byte(nil), e.bom...)
	switch e.name {
	case "utf-8":
		out = append(out, text...)
	case "latin-1":
		out = append(out, toLatin1(text)...)
	case "utf-16le", "utf-16be":
		var order binary.AppendByteOrder = binary.LittleEndian
		if e.name == "utf-16be" {
			order = binary.BigEndian
		}
		for _, u := range utf16.Encode([]rune(text)) {
			out = order.AppendUint16(out, u)
		}
	case "utf-32le", "utf-32be":
		var order binary.AppendByteOrder = binary.LittleEndian
		if e.name == "utf-32be" {
			order = binary.BigEndian
		}
		for _, r := range text {
			out = order.AppendUint32(out, uint32(r))
		}
	}
	return append(out, e.trail...)
}
