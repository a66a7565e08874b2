package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/sandbox"
)

// The gate over content types and blobs (issue 28, items 1 to 3): every
// string of every content type, and every blob in the form its bytes mean.

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

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, noisyImage()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, noisyImage(), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withPNGChunk inserts a chunk after a PNG's IHDR.
func withPNGChunk(p []byte, typ string, data []byte) []byte {
	c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	c = append(c, typ...)
	c = append(c, data...)
	c = binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
	at := 8 + 25 // signature, IHDR
	return append(append(append([]byte(nil), p[:at]...), c...), p[at:]...)
}

// withJPEGComment inserts a COM segment after a JPEG's SOI.
func withJPEGComment(j []byte, text string) []byte {
	seg := []byte{0xff, 0xfe}
	seg = binary.BigEndian.AppendUint16(seg, uint16(len(text)+2))
	seg = append(seg, text...)
	return append(append(append([]byte(nil), j[:2]...), seg...), j[2:]...)
}

func utf16Bytes(s string, order binary.AppendByteOrder, bom bool) []byte {
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

// TestGateBlobs: a blob is read in the form its bytes mean; where a value
// is found, it comes back in the same encoding with the value as a token,
// or is withheld; genuine images pass byte for byte.
func TestGateBlobs(t *testing.T) {
	g := testGate(t, nil)
	ctx := context.Background()
	const addr = "alice@example.com"
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>` + addr + `</text></svg>`)
	pngImg, jpegImg := pngBytes(t), jpegBytes(t)
	excel := "Name\tE-Mail\tPhone\r\nJosé\t" + addr + "\t+44 20 7946 0958\r\n" // Excel's "Unicode text"
	utf32 := binary.BigEndian.AppendUint32(nil, 0xfeff)
	for _, r := range "mail " + addr {
		utf32 = binary.BigEndian.AppendUint32(utf32, uint32(r))
	}
	for _, tc := range []struct {
		name, mime string
		in         []byte
		same       bool   // comes back unchanged
		withheld   bool   // is withheld
		decode     string // the encoding to decode the result with to check it
	}{
		{"svg", "image/svg+xml", svg, false, false, "utf-8"},
		{"svg claiming png", "image/png", svg, false, false, "utf-8"},
		{"utf-16le bom", "text/plain", utf16Bytes(excel, binary.LittleEndian, true), false, false, "utf-16le"},
		{"utf-16be bom", "text/plain", utf16Bytes(excel, binary.BigEndian, true), false, false, "utf-16be"},
		{"utf-16le no bom", "application/octet-stream", utf16Bytes(excel, binary.LittleEndian, false), false, false, "utf-16le"},
		{"utf-32be bom", "text/plain", utf32, false, false, "utf-32be"},
		{"latin-1", "text/csv", []byte("Name;E-Mail\nJos\xe9;" + addr + "\n"), false, false, "latin-1"},
		{"utf-8 bom", "text/csv", []byte("\xef\xbb\xbfmail;" + addr), false, false, "utf-8"},
		{"png", "image/png", pngImg, true, false, ""},
		{"jpeg", "image/jpeg", jpegImg, true, false, ""},
		{"png text chunk", "image/png", withPNGChunk(pngImg, "tEXt", []byte("Author\x00"+addr)), false, false, "png"},
		{"png utf-16 chunk", "image/png", withPNGChunk(pngImg, "prVt", utf16Bytes("owner "+addr, binary.LittleEndian, false)), false, true, ""},
		{"jpeg comment", "image/jpeg", withJPEGComment(jpegImg, "shot by "+addr), false, true, ""},
		{"binary", "application/octet-stream", []byte("\x00\x01\x02" + addr + "\x00\x03"), false, true, ""},
		{"zip", "application/zip", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00\x8f\x01"), false, true, ""},
		{"no value", "text/plain", utf16Bytes("nothing here", binary.LittleEndian, true), true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := g.blob(ctx, "ns", tc.mime, tc.in)
			if tc.withheld {
				if !isUnreadable(err) || out != nil {
					t.Fatalf("got %d bytes, %v; want it withheld", len(out), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.same {
				if !bytes.Equal(out, tc.in) {
					t.Fatal("changed; want it byte for byte")
				}
				return
			}
			var text string
			switch tc.decode {
			case "png":
				if _, err := png.Decode(bytes.NewReader(out)); err != nil {
					t.Fatalf("the PNG no longer decodes: %v", err)
				}
				text = string(out)
			case "latin-1":
				text = latin1(out)
			default:
				enc, s, ok := decodeText(out)
				if !ok || enc.name != tc.decode {
					t.Fatalf("decodes as %q (%v), want %s", enc.name, ok, tc.decode)
				}
				text = s
			}
			if strings.Contains(text, addr) || !anyToken.MatchString(text) {
				t.Errorf("decoded: %q; want the address as a token", text)
			}
		})
	}
}

// TestGateEveryString: every string of every content type goes through
// the gate, not only the text: MIME types, annotations, a link's fields,
// icons, _meta, the result's _meta.
func TestGateEveryString(t *testing.T) {
	g := testGate(t, nil)
	const addr = "alice@example.com"
	meta := mcp.Meta{"owner": addr, "nested": map[string]any{"list": []any{addr}}, "phone": 4155552671.0}
	ann := &mcp.Annotations{LastModified: addr}
	png := pngBytes(t)
	res := &mcp.CallToolResult{
		Meta: meta,
		Content: []mcp.Content{
			&mcp.TextContent{Text: "hi", Meta: meta, Annotations: ann},
			&mcp.ImageContent{Data: png, MIMEType: "image/png; name=" + addr, Meta: meta, Annotations: ann},
			&mcp.AudioContent{Data: []byte("ID3\x03\x00\x00\x00" + addr + "\xff\xfb\x90\x00"), MIMEType: "audio/mpeg; name=" + addr, Meta: meta},
			&mcp.ResourceLink{URI: "file:///workspace/" + addr, Name: addr, Title: addr, Description: addr, MIMEType: "text/plain; x=" + addr,
				Meta: meta, Annotations: ann, Icons: []mcp.Icon{{Source: "https://x.example/" + addr, MIMEType: "image/png; " + addr, Sizes: []string{addr}}}},
			&mcp.EmbeddedResource{Meta: meta, Annotations: ann, Resource: &mcp.ResourceContents{URI: "file:///" + addr, MIMEType: "text/x-" + addr, Text: addr, Meta: meta}},
		},
	}
	out, err := g.Result(context.Background(), "ns", res)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	noneOf(t, "the result", string(b), addr, "4155552671")
	im := out.(*mcp.CallToolResult).Content[1].(*mcp.ImageContent)
	if !bytes.Equal(im.Data, png) || !strings.HasPrefix(im.MIMEType, "image/png; name=[EMAIL_") {
		t.Errorf("image: %d bytes, MIME type %q; want the image as it was, its MIME type tokenized", len(im.Data), im.MIMEType)
	}
	if _, ok := out.(*mcp.CallToolResult).Content[2].(*mcp.TextContent); !ok {
		t.Errorf("audio the gate cannot read: %T, want a text saying it was withheld", out.(*mcp.CallToolResult).Content[2])
	}
	// The original is left as it was.
	if res.Content[1].(*mcp.ImageContent).MIMEType != "image/png; name="+addr || meta["owner"] != addr {
		t.Error("the gate changed the result it was given")
	}
}

// TestDataPathImageMIME: display_image(png, mime_type='image/png;
// name=alice@example.com') sends the MIME type tokenized in the image
// content too, not only in the structured copy.
func TestDataPathImageMIME(t *testing.T) {
	png := pngBytes(t)
	l := newLeakServer(t, nil, func(context.Context, sandbox.Request) *sandbox.Result {
		return &sandbox.Result{OK: true, Images: []sandbox.Image{{MIMEType: "image/png; name=alice@example.com", Data: png}}}
	}, nil)
	res, all := l.call(t, "execute_code", map[string]any{"code": "display_image(png, mime_type='image/png; name=alice@example.com')"})
	noneOf(t, "execute_code's answer", all, "alice@example.com")
	n := 0
	for _, c := range res.Content {
		if im, ok := c.(*mcp.ImageContent); ok && bytes.Equal(im.Data, png) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d images as they were, want 1", n)
	}
}

// TestDataPathBlobFiles: an SVG, a UTF-16 text file (Excel's "Unicode
// text") and a PNG with a text chunk, read by read_workspace_file and by
// resources/read, come back with their values as tokens in their own
// encoding; a file the gate cannot read is withheld.
func TestDataPathBlobFiles(t *testing.T) {
	l := newLeakServer(t, nil, nil, nil)
	const addr = "alice@example.com"
	files := map[string][]byte{
		"chart.svg":   []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>` + addr + `</text></svg>`),
		"export.txt":  utf16Bytes("Name\tE-Mail\r\nAlice\t"+addr+"\r\n", binary.LittleEndian, true),
		"plot.png":    withPNGChunk(pngBytes(t), "tEXt", []byte("Author\x00"+addr)),
		"archive.bin": []byte("\x00\x01" + addr + "\x00"),
	}
	for name, data := range files {
		l.call(t, "write_workspace_file", map[string]any{"path": name, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
	}
	for name := range files {
		res, all := l.call(t, "read_workspace_file", map[string]any{"path": name})
		var r ReadWorkspaceFileOutput
		if res.StructuredContent != nil {
			structured(t, res, &r)
		}
		decoded := ""
		if r.Encoding == "base64" {
			b, _ := base64.StdEncoding.DecodeString(r.Content)
			_, decoded, _ = decodeText(b)
			decoded += string(b)
		}
		for _, c := range res.Content {
			if im, ok := c.(*mcp.ImageContent); ok {
				decoded += string(im.Data)
			}
		}
		noneOf(t, "read_workspace_file "+name, all+decoded, addr)

		rr, err := l.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///workspace/" + name})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rr)
		blob := ""
		for _, c := range rr.Contents {
			_, s, _ := decodeText(c.Blob)
			blob += s + string(c.Blob)
		}
		noneOf(t, "resources/read "+name, string(b)+blob, addr)
	}
}

// TestGateOperatorResolver: the host's DNS resolver, named in a log line
// (a lookup that failed on it), is the operator's own address, not
// personal data: the log shows it; other addresses stay tokens, and so
// does the resolver in what a namespace sees.
func TestGateOperatorResolver(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("# generated\nnameserver 10.20.30.40\noptions ndots:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := resolvConf
	resolvConf = conf
	t.Cleanup(func() { resolvConf = old })
	g := testGate(t, nil)
	line := "egress: lookup api.example.net on 10.20.30.40:53: no such host (client 10.20.30.41)"
	got := g.Redact(line)
	if !strings.Contains(got, "on 10.20.30.40:53") || strings.Contains(got, "10.20.30.41") {
		t.Errorf("log line %q: want the resolver as it is, the client as a token", got)
	}
	if text, _ := g.Text(context.Background(), "ns", line); strings.Contains(text, "10.20.30.40") {
		t.Errorf("a namespace's text %q shows the resolver", text)
	}
}

// TestGateFoundAnywhere: a value found in an answer's text is tokenized in
// its structured content too, where its key alone would have let it pass
// (an id under session_id is no phone number).
func TestGateFoundAnywhere(t *testing.T) {
	g := testGate(t, nil)
	const phone = "212-555-0143"
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: `[new session "` + phone + `" started]`}},
		StructuredContent: map[string]any{"session_id": phone, "ok": true},
	}
	out, err := g.Result(context.Background(), "ns", res)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	noneOf(t, "the result", string(b), phone)
	// Alone, under its key, the id passes: what the rule is for.
	only := &mcp.CallToolResult{StructuredContent: map[string]any{"session_id": phone}}
	if out, err := g.Result(context.Background(), "ns", only); err != nil {
		t.Fatal(err)
	} else if b, _ := json.Marshal(out); !strings.Contains(string(b), phone) {
		t.Logf("note: the detectors now find %s under session_id alone too", phone)
	}
}
