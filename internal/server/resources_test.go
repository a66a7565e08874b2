package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/sandbox"
)

// pngHeader is the start of a PNG file, enough for a MIME sniff.
var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00")

// TestResources: the workspace's files are resources, listed in pages and
// read as text (personal data as tokens) or as a blob with a MIME type; the
// links execute_code returns read back; bad URIs and missing files fail
// with errors that say so.
func TestResources(t *testing.T) {
	exec := &recordingExec{}
	s, cs := newTestServer(t, func(o *Options) { o.Executor = exec })
	dir := s.Workspace(DefaultNamespace)
	ctx := context.Background()

	init := cs.InitializeResult()
	if init.Capabilities.Resources == nil {
		t.Fatal("no resources capability declared")
	}
	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpls.ResourceTemplates) != 1 || tmpls.ResourceTemplates[0].URITemplate != "file:///workspace/{+path}" {
		t.Fatalf("templates: %+v %v", tmpls, err)
	}

	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "notes/a b.txt", "content": "mail ada@example.org\n"}, nil)
	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "plot.png", "content": base64.StdEncoding.EncodeToString(pngHeader), "encoding": "base64"}, nil)
	if err := os.MkdirAll(filepath.Join(dir, "many"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("many/f%03d.csv", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Listing, every page.
	var all []*mcp.Resource
	pages := 0
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil || res.NextCursor == "" {
		t.Fatalf("first page: %v, next cursor %q", err, res.NextCursor)
	}
	for cursor := ""; ; pages++ {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if len(all) != 152 || pages != 1 {
		t.Fatalf("listed %d resources in %d pages, want 152 in 2", len(all), pages+1)
	}
	uris := map[string]*mcp.Resource{}
	for _, r := range all {
		uris[r.URI] = r
	}
	png := uris["file:///workspace/plot.png"]
	if png == nil || png.MIMEType != "image/png" || png.Size != int64(len(pngHeader)) {
		t.Fatalf("plot.png listed as %+v", png)
	}
	for uri := range uris {
		if strings.Contains(uri, "ada@") {
			t.Errorf("a listed URI shows personal data: %s", uri)
		}
	}

	// Reading.
	text, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///workspace/notes/a%20b.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if c := text.Contents[0]; !strings.HasPrefix(c.Text, "mail [EMAIL_") || c.Blob != nil || !strings.HasPrefix(c.MIMEType, "text/plain") {
		t.Errorf("text resource: %+v", c)
	}
	blob, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///workspace/plot.png"})
	if err != nil {
		t.Fatal(err)
	}
	if c := blob.Contents[0]; !bytes.Equal(c.Blob, pngHeader) || c.MIMEType != "image/png" {
		t.Errorf("blob resource: %+v", c)
	}

	// The link execute_code returns for a file it wrote reads back.
	exec.execFunc = does(func(req sandbox.Request) {
		os.WriteFile(filepath.Join(req.Workspace, "out.json"), []byte(`{"n": 1}`), 0o644)
	})
	run, _ := callTool(t, cs, "execute_code", map[string]any{"code": "write out.json"})
	var links int
	for _, c := range run.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links++
			r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: l.URI})
			if err != nil || r.Contents[0].Text != `{"n": 1}` || r.Contents[0].MIMEType != "application/json" {
				t.Errorf("link %s: %+v %v", l.URI, r, err)
			}
		}
	}
	if links != 1 {
		t.Errorf("execute_code returned %d resource links, want 1", links)
	}

	for _, tc := range []struct{ uri, want string }{
		{"file:///workspace/missing.txt", "not found"},
		{"file:///workspace/../etc/passwd", "leaves the workspace"},
		{"file:///etc/passwd", "not found"},
		{"file:///workspace/many", "is a directory"},
	} {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: tc.uri})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("read %s: %v, want an error saying %q", tc.uri, err, tc.want)
		}
	}
	if _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: "abc"}); err == nil || !strings.Contains(err.Error(), "invalid cursor") {
		t.Errorf("bad cursor: %v", err)
	}
}

// TestImageContent: images an execution shows, and a PNG read from the
// workspace, reach the client as MCP image content, not as base64 text.
func TestImageContent(t *testing.T) {
	// The sandbox returns an image, as the runner does for display_image.
	_, cs := newTestServer(t, func(o *Options) {
		o.Executor = execFunc(func(ctx context.Context, req sandbox.Request) *sandbox.Result {
			r := execFunc(nil).Exec(ctx, req)
			r.Images = []sandbox.Image{{MIMEType: "image/png", Data: pngHeader}}
			r.ImagesDropped = []string{"image/png of 9999999 bytes"}
			return r
		})
	})
	res, text := callTool(t, cs, "execute_code", map[string]any{"code": "display_image(png)"})
	var images []*mcp.ImageContent
	for _, c := range res.Content {
		if im, ok := c.(*mcp.ImageContent); ok {
			images = append(images, im)
		}
	}
	if len(images) != 1 || images[0].MIMEType != "image/png" || !bytes.Equal(images[0].Data, pngHeader) {
		t.Fatalf("image content %+v", images)
	}
	if !strings.Contains(text, "[image] image/png") || !strings.Contains(text, "image not shown: image/png of 9999999 bytes") {
		t.Errorf("text %q does not mention the image and the one dropped", text)
	}

	mustCall(t, cs, "write_workspace_file", map[string]any{"path": "p.png", "content": base64.StdEncoding.EncodeToString(pngHeader), "encoding": "base64"}, nil)
	res, text = callTool(t, cs, "read_workspace_file", map[string]any{"path": "p.png"})
	if len(res.Content) != 2 || strings.Contains(text, base64.StdEncoding.EncodeToString(pngHeader)) {
		t.Fatalf("read of a PNG: %d contents, text %q", len(res.Content), text)
	}
	if im, ok := res.Content[1].(*mcp.ImageContent); !ok || !bytes.Equal(im.Data, pngHeader) {
		t.Errorf("read of a PNG: %+v", res.Content[1])
	}
}
