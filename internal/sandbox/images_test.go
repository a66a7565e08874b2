package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/internal/textcut"
)

// onePixelPNG is a valid 1x1 PNG, as base64.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// TestImages: display_image, an Image result and matplotlib figures left
// open come back as images; past the bounds they are dropped with a note.
func TestImages(t *testing.T) {
	m, ws := newTestManager(t, Production, Limits{}, 1)
	png := "import base64\npng = base64.b64decode('" + onePixelPNG + "')\n"
	tests := []struct {
		name, code string
		images     []string // MIME types
		dropped    string
	}{
		{name: "display_image bytes", code: png + "display_image(png)", images: []string{"image/png"}},
		{name: "display_image file", code: png + "open('p.png', 'wb').write(png)\ndisplay_image('p.png')", images: []string{"image/png"}},
		{name: "Image result", code: png + "from codecell import Image\nresult = Image(png, 'image/png')", images: []string{"image/png"}},
		{name: "not an image", code: "display_image(b'hello')", images: nil},
		{name: "too many", code: png + "for _ in range(10): display_image(png)", images: []string{"image/png", "image/png", "image/png", "image/png", "image/png", "image/png", "image/png", "image/png"}, dropped: "image/png of 70 bytes"},
	}
	if exec.Command("/usr/bin/python3", "-c", "import matplotlib").Run() == nil {
		tests = append(tests, struct {
			name, code string
			images     []string
			dropped    string
		}{name: "matplotlib figure", code: "import matplotlib.pyplot as plt\nplt.plot([1, 2], [2, 1])\nplt.figure()\nplt.bar([1], [1])", images: []string{"image/png", "image/png"}})
	} else {
		t.Log("matplotlib is not installed (make test installs python3-matplotlib): figures untested")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := exec1(t, m, ws, tt.code, 60*time.Second)
			var got []string
			for _, im := range r.Images {
				got = append(got, im.MIMEType)
				if im.MIMEType == "image/png" && !bytes.HasPrefix(im.Data, []byte("\x89PNG")) {
					t.Errorf("not PNG data: %q", im.Data[:min(8, len(im.Data))])
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.images, ",") {
				t.Fatalf("images %v, want %v (ok %v, error %+v, stderr %q)", got, tt.images, r.OK, r.Error, r.Stderr)
			}
			if tt.dropped != "" && !strings.Contains(strings.Join(r.ImagesDropped, "\n"), tt.dropped) {
				t.Errorf("dropped %q, want it to mention %q", r.ImagesDropped, tt.dropped)
			}
			if tt.name == "not an image" && (r.OK || r.Error.Type != "ValueError") {
				t.Errorf("display_image of text: %+v", r.Error)
			}
			// Caches (matplotlib's, fontconfig's) stay out of the workspace,
			// which is HOME.
			for _, d := range []string{".cache", ".config", ".matplotlib"} {
				if _, err := os.Stat(filepath.Join(ws, d)); err == nil {
					t.Errorf("the workspace gained %s", d)
				}
			}
		})
	}
}

// TestResultFrameImages: the host keeps only what the runner says are
// images, and bounds the notes of dropped ones.
func TestResultFrameImages(t *testing.T) {
	var f resultFrame
	raw := `{"ok": true, "images": [{"mime_type": "image/png", "data": "` + onePixelPNG + `"},
		{"mime_type": "text/html", "data": "PGI+"}, {"mime_type": "image/png", "data": ""}],
		"images_dropped": ["` + strings.Repeat("x", 5000) + `"]}`
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		t.Fatal(err)
	}
	ims, dropped := f.images()
	if len(ims) != 1 || ims[0].MIMEType != "image/png" {
		t.Errorf("images %+v", ims)
	}
	if len(dropped) != 3 || len(dropped[0]) > 200 || !strings.Contains(dropped[1], "text/html") {
		t.Errorf("dropped %q", dropped)
	}
}

// TestResultCappedByHost: a result frame the code writes itself, past the
// runner's own cut, is held to the output limit by the host.
func TestResultCappedByHost(t *testing.T) {
	big := strings.Repeat("x", 5000)
	// One run of value characters longer than textcut.Bound: the window
	// before the limit is dropped with the rest.
	if got := capResult(big, 1000, nil).(string); !strings.HasPrefix(got, big[:1000-textcut.Bound]+"...") || len(got) > 1200 || !strings.Contains(got, "4256 more bytes dropped") {
		t.Errorf("string: %d bytes: %.80q", len(got), got)
	}
	if got := capResult(map[string]any{"a": big}, 1000, nil); !strings.Contains(fmt.Sprint(got), "over the output limit") {
		t.Errorf("object: %.80v", got)
	}
	if got := capResult(map[string]any{"a": "b"}, 1000, nil); fmt.Sprint(got) != "map[a:b]" {
		t.Errorf("small object: %v", got)
	}

	m, ws := newTestManager(t, Production, Limits{Output: 1 << 10}, 1)
	forged := `
import json, os, struct
from codecell import _rpc
frame = json.dumps({"type": "result", "ok": True, "error": None, "result": {"kind": "repr", "value": "y" * 3000000}}).encode()
_rpc._chan.send(json.loads(frame))
os._exit(0)
`
	r := exec1(t, m, ws, forged, 60*time.Second)
	if s, _ := r.Result.(string); len(s) > 2<<10 || !strings.HasPrefix(s, "yyy") || !strings.Contains(s, "dropped") {
		t.Errorf("a forged result frame returned %d bytes past a 1 KiB limit (%.60q, error %+v)", len(s), s, r.Error)
	}
}

// TestCaptureCut: with Request.Cut, a stream keeps CutMargin bytes past the
// limit and Cut decides where the kept part ends, seeing the value that
// crosses the limit whole (issue 13: dave.trunc@example.o).
func TestCaptureCut(t *testing.T) {
	value := "dave.trunc@example.org"
	out := strings.Repeat("x", 90) + " " + value + " and more"
	end := strings.Repeat(" z", 200) // the tail kept, past the cut
	var saw string
	cut := func(text string, limit int) int {
		saw = text
		if i := strings.Index(text, value); i >= 0 && i < limit && limit < i+len(value) {
			return i
		}
		return limit
	}
	c := newCapture(200, cut)
	c.add([]byte(out[:50]))
	c.add([]byte(out[50:] + end))
	got := c.text()
	if saw != out+end {
		t.Fatalf("Cut saw %q, want the whole output", saw)
	}
	if strings.Contains(got, "dave") || !strings.HasPrefix(got, out[:91]+fmt.Sprintf("\n[codecell: output truncated, %d more bytes dropped here", len(out+end)-91-100)) || !strings.HasSuffix(got, end[300:]) {
		t.Errorf("text() = %q", got)
	}
	// Without Cut, no detector finds the address, but the cut still
	// leaves no part of it (package textcut).
	c = newCapture(200, nil)
	c.add([]byte(out + end))
	if got := c.text(); !strings.HasPrefix(got, out[:91]+"\n[codecell: output truncated") {
		t.Errorf("without Cut: %q", got)
	}
	// A result's repr goes the same way.
	if got := capResult(out+strings.Repeat("y", 300), 100, cut).(string); strings.Contains(got, "dave") {
		t.Errorf("capResult = %q", got)
	}
}
