package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/gate/gatetest"
	"github.com/codecell/codecell/internal/sandbox"
)

// The gate over content types and blobs, end to end through the server's
// tools and resources (issue 28, items 1 to 3).

// TestDataPathImageMIME: display_image(png, mime_type='image/png;
// name=alice@example.com') sends the MIME type tokenized in the image
// content too, not only in the structured copy.
func TestDataPathImageMIME(t *testing.T) {
	png := gatetest.PNG(t)
	l := newLeakServer(t, nil, func(context.Context, sandbox.Request) *sandbox.Result {
		return &sandbox.Result{OK: true, Images: []sandbox.Image{{MIMEType: "image/png; name=alice@example.com", Data: png}}}
	})
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
	l := newLeakServer(t, nil, nil)
	const addr = "alice@example.com"
	files := map[string][]byte{
		"chart.svg":   []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>` + addr + `</text></svg>`),
		"export.txt":  gatetest.UTF16("Name\tE-Mail\r\nAlice\t"+addr+"\r\n", binary.LittleEndian, true),
		"plot.png":    gatetest.WithPNGChunk(gatetest.PNG(t), "tEXt", []byte("Author\x00"+addr)),
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
			decoded, _ = gatetest.FromUTF16(b)
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
			s, _ := gatetest.FromUTF16(c.Blob)
			blob += s + string(c.Blob)
		}
		noneOf(t, "resources/read "+name, string(b)+blob, addr)
	}
}
