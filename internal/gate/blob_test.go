package gate

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/gate/gatetest"
)

// anyToken matches a token of any kind.
var anyToken = regexp.MustCompile(`\[[A-Z][A-Z0-9_]*_[0-9a-f]{6,32}\]`)

// The gate over content types and blobs (issue 28, items 1 to 3): every
// string of every content type, and every blob in the form its bytes mean.

// TestGateBlobs: a blob is read in the form its bytes mean; where a value
// is found, it comes back in the same encoding with the value as a token,
// or is withheld; genuine images pass byte for byte.
func TestGateBlobs(t *testing.T) {
	g := testGate(t, nil)
	ctx := context.Background()
	const addr = "alice@example.com"
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>` + addr + `</text></svg>`)
	pngImg, jpegImg := gatetest.PNG(t), gatetest.JPEG(t)
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
		{"utf-16le bom", "text/plain", gatetest.UTF16(excel, binary.LittleEndian, true), false, false, "utf-16le"},
		{"utf-16be bom", "text/plain", gatetest.UTF16(excel, binary.BigEndian, true), false, false, "utf-16be"},
		{"utf-16le no bom", "application/octet-stream", gatetest.UTF16(excel, binary.LittleEndian, false), false, false, "utf-16le"},
		{"utf-32be bom", "text/plain", utf32, false, false, "utf-32be"},
		{"latin-1", "text/csv", []byte("Name;E-Mail\nJos\xe9;" + addr + "\n"), false, false, "latin-1"},
		{"utf-8 bom", "text/csv", []byte("\xef\xbb\xbfmail;" + addr), false, false, "utf-8"},
		{"png", "image/png", pngImg, true, false, ""},
		{"jpeg", "image/jpeg", jpegImg, true, false, ""},
		{"png text chunk", "image/png", gatetest.WithPNGChunk(pngImg, "tEXt", []byte("Author\x00"+addr)), false, false, "png"},
		{"png utf-16 chunk", "image/png", gatetest.WithPNGChunk(pngImg, "prVt", gatetest.UTF16("owner "+addr, binary.LittleEndian, false)), false, true, ""},
		{"jpeg comment", "image/jpeg", gatetest.WithJPEGComment(jpegImg, "shot by "+addr), false, true, ""},
		{"binary", "application/octet-stream", []byte("\x00\x01\x02" + addr + "\x00\x03"), false, true, ""},
		{"zip", "application/zip", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00\x8f\x01"), false, true, ""},
		{"no value", "text/plain", gatetest.UTF16("nothing here", binary.LittleEndian, true), true, false, ""},
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
	png := gatetest.PNG(t)
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
	gatetest.NoneOf(t, "the result", string(b), addr, "4155552671")
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
	gatetest.NoneOf(t, "the result", string(b), phone)
	// The premise: alone, under its key, the id passes the detectors, so
	// only the rule tokenized it above. (If they come to find it, this
	// test needs a value they still pass.)
	only := &mcp.CallToolResult{StructuredContent: map[string]any{"session_id": phone}}
	if out, err := g.Result(context.Background(), "ns", only); err != nil {
		t.Fatal(err)
	} else if b, _ := json.Marshal(out); !strings.Contains(string(b), phone) {
		t.Errorf("the detectors find %s under session_id alone: the test no longer shows the rule", phone)
	}
}
