package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codecell/codecell/internal/dashboard/browsertest"
	"github.com/codecell/codecell/internal/httpapi/httpapitest"
)

// TestDashboardInBrowser opens the web dashboard of a real `codecell serve
// --http` with a token in headless Chromium: it lists the executions made
// through /mcp with their code, output (personal data as tokens, markup as
// text) and errors, and a skill saved there; its tool search finds an
// upstream's tool. Set
// DASHBOARD_SCREENSHOT_DIR to keep the screenshot.
func TestDashboardInBrowser(t *testing.T) {
	requireProduction(t)
	ctx := browsertest.Start(t) // skips without chromium, before the server starts
	const token = "dashboard-token-0123456789abcdef"
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"fake": map[string]any{"command": fakeUpstream(t)}},
		"sandbox":    map[string]any{"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "20s"},
		"http":       map[string]any{"tokens": map[string]string{token: "team-a"}},
	})
	base := startHTTP(t, string(cfg), nil)
	cs := connectWithToken(t, base, token)
	waitUpstream(context.Background(), cs)

	// The code spells the marker and the email in pieces, so that only
	// output can show them whole.
	okCode := "marker = 'dashboard' + '-e2e-' + str(6 * 7)\nprint(marker)\nprint('<img src=x onerror=\"window.pwned=1\">')\nprint('mail ' + 'ada.lovelace' + '@example.org')"
	if _, out := call(t, cs, map[string]any{"code": okCode}); !out.OK || !strings.Contains(out.Stdout, "dashboard-e2e-42") {
		t.Fatalf("execution: %+v", out)
	}
	badCode := "def check(x):\n    raise ValueError('no dashboard ' + x)\ncheck('today')"
	if _, out := call(t, cs, map[string]any{"code": badCode}); out.OK || out.Error == nil || out.Error.Type != "ValueError" {
		t.Fatalf("failing execution: %+v", out)
	}

	if res, _ := callTool(t, cs, "save_skill", map[string]any{"name": "shout", "code": "def shout(s):\n    return s.upper()\n",
		"description": "Upper-case a string.", "tags": []string{"text"}}); res.IsError {
		t.Fatalf("save_skill: %s", textOf(res))
	}

	// The page and its assets need no token; the data does.
	for path, want := range map[string]int{"/": 200, "/static/app.js": 200, "/api/v1/executions": 401} {
		if a := httpapitest.Do(t, "GET", base+path, nil); a.Status != want {
			t.Errorf("GET %s without a token: %d, want %d", path, a.Status, want)
		}
	}

	console := browsertest.WatchConsole(t, ctx)
	do := browsertest.Steps(t, ctx, 15*time.Second)
	start := time.Now()
	do("the token form without a token",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token-panel")),
		browsertest.WaitText("executions", "Needs a token."))
	do("the executions, collapsed",
		chromedp.Navigate("about:blank"),
		chromedp.Navigate(base+"/#token="+token),
		chromedp.WaitNotVisible(chromedp.CSS("#token-panel")),
		browsertest.WaitText("executions", "marker = 'dashboard' + '-e2e-' + str(6 * 7)", "dashboard-e2e-42",
			"def check(x):", "ValueError: no dashboard today"),
		browsertest.WaitText("isolation", "production"),
		browsertest.WaitText("upstreams", "fake", "connected"),
		browsertest.WaitText("stats", "ValueError 1"),
		browsertest.WaitText("skills", "shout", "v1", "Upper-case a string.", "text"))
	do("the executions, expanded",
		chromedp.Click(chromedp.CSS("details.exec.ok summary")),
		chromedp.Click(chromedp.CSS("details.exec.failed summary")),
		browsertest.WaitText("executions", "print(marker)", `<img src=x onerror="window.pwned=1">`, "[EMAIL_",
			"raise ValueError('no dashboard ' + x)", "check('today')",
			// the traceback, not only the type and message
			`File "<cell>", line 2, in check`))
	// Before a query the list starts with fake.add_numbers, by name; a
	// search puts the best match first.
	do("the tool search",
		browsertest.WaitJS("the tool list", `document.querySelector('#tools .tool .name')?.textContent === 'fake.add_numbers'`),
		chromedp.SendKeys(chromedp.CSS("#tool-query"), "sleep then answer"),
		browsertest.WaitJS("fake.sleep first", `document.querySelector('#tools .tool .name')?.textContent === 'fake.sleep'`),
		browsertest.WaitText("tools", "sleep(*, seconds: float)", "Sleep, then answer."))
	t.Logf("the page showed everything in %v", time.Since(start).Round(time.Millisecond))

	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, "ada.lovelace@example.org") {
		t.Error("the page shows the email address, not its token")
	}
	injected, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned === 1 || document.querySelector('#executions img') !== null`))
	if err != nil || injected {
		t.Errorf("output became markup (injected=%v, %v)", injected, err)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || strings.Contains(loc, token) {
		t.Errorf("address bar %q (%v), want the token gone", loc, err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("DASHBOARD_SCREENSHOT_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "dashboard.png"), shot, 0o644)
	}
	desc, err := browsertest.NonBlank(shot)
	if err != nil {
		t.Error(err)
	}
	t.Logf("screenshot: %s", desc)
	console()
}
