// Package browsertest runs headless Chromium for the dashboard's browser
// tests, through chromedp. Only tests import it, so neither it nor chromedp
// is part of the codecell binary.
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Start starts headless Chromium for the test and returns a chromedp context
// of one tab; the browser is gone when the test ends. It skips the test when
// Debian's chromium is not installed (make test installs it).
func Start(t testing.TB) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("-short (make check) runs no browser; make test does")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (make test installs Debian's chromium package)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // Chromium's own sandbox cannot run as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser, which lives as long as the context
	// of that run: no deadline here.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Steps returns a func that runs named steps in the tab, each within
// timeout; when one fails it fails the test with the page's visible text.
func Steps(t testing.TB, ctx context.Context, timeout time.Duration) func(step string, actions ...chromedp.Action[chromedp.Void]) {
	return func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
			t.Fatalf("%s: %v\nthe page shows:\n%s", step, err, body)
		}
	}
}

// WaitText waits until the visible text of the element with the id holds
// every string.
func WaitText(id string, want ...string) chromedp.Action[chromedp.Void] {
	raw, _ := json.Marshal(want)
	return WaitJS(fmt.Sprintf("#%s to show all of %q", id, want),
		fmt.Sprintf(`(() => { const e = document.getElementById(%q); return !!e && %s.every((w) => e.innerText.includes(w)); })()`, id, raw))
}

// WaitJS waits until a JavaScript expression is true in the page; what
// names the wait in the error.
func WaitJS(what, expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))(ctx, tg); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		return nil
	})
}

// WatchConsole collects the page's uncaught exceptions and console errors,
// but for the failed loads of 401 answers (the dashboard asks for a token
// after one). The returned func stops watching and fails the test on any.
func WatchConsole(t testing.TB, ctx context.Context) func() {
	ctx, stop := context.WithCancel(ctx)
	messages := chromedp.Console(ctx)
	var (
		mu  sync.Mutex
		bad []string
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && !strings.Contains(m.Text, "401")) {
				mu.Lock()
				bad = append(bad, m.String())
				mu.Unlock()
			}
		}
	}()
	return func() {
		t.Helper()
		stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, m := range bad {
			t.Errorf("console: %s", m)
		}
	}
}

// NonBlank reports an error unless a PNG screenshot shows a rendered page:
// more than 20 colours, and at least 2% of the pixels off the most common
// colour (the background). It returns a description of the image.
func NonBlank(shot []byte) (string, error) {
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return "", fmt.Errorf("screenshot: %w", err)
	}
	counts := map[[4]uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			counts[[4]uint32{r, g, bl, a}]++
		}
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	total := b.Dx() * b.Dy()
	desc := fmt.Sprintf("%dx%d, %d colours, %d%% of the pixels off the background", b.Dx(), b.Dy(), len(counts), 100*(total-most)/max(total, 1))
	if len(counts) <= 20 || total-most < total/50 {
		return desc, fmt.Errorf("screenshot looks blank: %s", desc)
	}
	return desc, nil
}
