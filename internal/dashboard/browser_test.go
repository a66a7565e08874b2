package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codecell/codecell/internal/dashboard/browsertest"
)

// hostile is sandbox output that would run script if the page inserted it
// as markup.
const hostile = `<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>`

// fakeAPI serves the dashboard and a fake of the /api/v1 routes it reads,
// behind a bearer token. It records the tool searches it answered.
type fakeAPI struct {
	token string
	mu    sync.Mutex
	// searches are the queries of /api/v1/tools/search, in order.
	searches []string
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	page := Handler()
	for _, p := range Paths {
		mux.Handle(p, page)
	}
	api := http.NewServeMux()
	execs := make([]map[string]any, 0, 60)
	for id := 60; id >= 1; id-- {
		e := map[string]any{"id": id, "session_id": "", "code": fmt.Sprintf("print(%d)", id),
			"stdout": fmt.Sprintf("%d\n", id), "stderr": "", "result": nil, "error_type": "", "error_message": "",
			"duration_ms": 20 + id*7%90, "tool_calls": []any{}, "isolation": "production",
			"created_at": time.Date(2026, 1, 2, 15, 4, id%60, 0, time.UTC).Format(time.RFC3339)}
		switch id {
		case 60:
			e["code"], e["stdout"] = "print(secret)", hostile+"\n"
			e["tool_calls"] = []any{map[string]any{"name": "files.read_file", "ok": true, "duration_ms": 12}}
			e["network"] = []any{
				map[string]any{"host": "api.test.example", "port": 443, "connections": 2, "sent": 1800, "received": 52000},
				map[string]any{"host": "other.test.example", "port": 443, "connections": 1, "sent": 0, "received": 0, "refused": "other.test.example:443 is not allowed"},
			}
		case 59:
			e["code"], e["stdout"] = "1/0", ""
			e["error_type"], e["error_message"] = "ZeroDivisionError", "division by zero"
			e["error_traceback"] = "Traceback (most recent call last):\n  File \"<cell>\", line 1, in <module>\n    1/0\nZeroDivisionError: division by zero\n"
		case 58:
			// Multi-line output and results: their first line alone is "[" or "{".
			e["stdout"], e["result"] = "", map[string]any{"rows": 3, "region": "north"}
		case 57:
			e["stdout"] = "[\n  1,\n  2\n]\n"
		case 56:
			e["code"], e["stdout"] = "import pandas", ""
			e["error_type"] = "ModuleNotFoundError"
			e["error_message"] = "No module named 'pandas'; to install it, call install_dependencies"
			e["error_traceback"] = "Traceback (most recent call last):\n  File \"<cell>\", line 1, in <module>\nModuleNotFoundError: No module named 'pandas'\n"
		case 1:
			e["code"] = "print('the oldest')"
		}
		execs = append(execs, e)
	}
	api.HandleFunc("GET /api/v1/executions", func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit <= 0 || limit > 100 {
			limit = 50
		}
		before, _ := strconv.Atoi(r.URL.Query().Get("before"))
		page := []map[string]any{}
		for _, e := range execs {
			if before == 0 || e["id"].(int) < before {
				page = append(page, e)
			}
		}
		var next any
		if len(page) > limit {
			page = page[:limit]
			next = page[limit-1]["id"]
		}
		writeJSON(w, map[string]any{"executions": page, "next_before": next})
	})
	tools := []map[string]any{
		{"name": "files.read_file", "summary": "Read a file.", "signature": "read_file(path: str) -> str", "server": "files"},
		{"name": "files.write_file", "summary": "Write a file.", "signature": "write_file(path: str, content: str) -> dict", "server": "files"},
		{"name": "web.fetch", "summary": "Fetch a URL.", "signature": "fetch(url: str) -> str", "server": "web"},
	}
	api.HandleFunc("GET /api/v1/tools/search", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		f.mu.Lock()
		f.searches = append(f.searches, q)
		f.mu.Unlock()
		found := []map[string]any{}
		for _, t := range tools {
			if strings.Contains(t["summary"].(string), q) || strings.Contains(t["name"].(string), q) {
				found = append(found, t)
			}
		}
		writeJSON(w, map[string]any{"total": len(found), "tools": found})
	})
	api.HandleFunc("GET /api/v1/skills", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"skills": []any{map[string]any{"name": "summarize_csv", "version": 2,
			"description": "Summarize a CSV file.", "tags": []string{"csv"}, "created_at": "2026-01-02T15:04:05Z"}}})
	})
	upstreams := []any{
		map[string]any{"name": "files", "state": "connected", "tool_count": 2},
		map[string]any{"name": "web", "state": "failed", "tool_count": 0, "error": "connection refused"},
	}
	api.HandleFunc("GET /api/v1/upstreams", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"upstreams": upstreams})
	})
	api.HandleFunc("GET /api/v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"tasks": []any{map[string]any{"id": "task-abcdef123", "tool": "execute_code",
			"status": "input_required", "status_message": "running for 3.0s; latest output:\nstep 2", "replica": "r2",
			"created_at": "2026-01-02T15:04:05Z", "updated_at": "2026-01-02T15:04:08Z"}}})
	})
	api.HandleFunc("GET /api/v1/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"total": 60, "ok": 59, "failed": 1,
			"errors_by_type":  map[string]int{"ZeroDivisionError": 1},
			"latency_ms":      map[string]int{"p50": 60, "p95": 100, "p99": 108},
			"tool_calls":      map[string]any{"count": 1, "errors": 0, "top": []any{map[string]any{"name": "files.read_file", "count": 1, "errors": 0}}},
			"context_savings": map[string]int{"tool_result_bytes": 50000, "returned_bytes": 300},
			"pool":            map[string]int{"size": 2, "idle": 2, "starting": 0, "busy": 0},
			"isolation":       "production", "upstreams": upstreams})
	})
	mux.Handle("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		api.ServeHTTP(w, r)
	}))
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// TestDashboardAgainstFakeAPI drives the page against a fake of the API in
// headless Chromium: the token form after a 401, executions as text (never
// markup), paging, the chart, the debounced tool search, and the token
// taken from the URL fragment.
func TestDashboardAgainstFakeAPI(t *testing.T) {
	ctx := browsertest.Start(t)
	fake := &fakeAPI{token: "s3+cret"}
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()

	console := browsertest.WatchConsole(t, ctx)
	do := browsertest.Steps(t, ctx, 15*time.Second)
	do("token form after a 401",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token-panel")),
		browsertest.WaitText("executions", "Needs a token."))
	do("enter the token",
		chromedp.SendKeys(chromedp.CSS("#token-input"), "s3+cret\r"),
		chromedp.WaitNotVisible(chromedp.CSS("#token-panel")))
	do("every panel filled",
		// Executions, newest first; the hostile one as text.
		browsertest.WaitText("executions", "print(secret)", "<img src=x", "1/0", "ZeroDivisionError: division by zero", "#11"),
		browsertest.WaitText("stats", "60", "ZeroDivisionError 1", "48.8 KB"),
		browsertest.WaitText("upstreams", "files", "connected", "failed", "connection refused"),
		browsertest.WaitText("skills", "summarize_csv", "v2", "Summarize a CSV file."),
		browsertest.WaitText("tasks", "execute_code", "input_required", "task-abc", "r2"),
		browsertest.WaitText("isolation", "production"),
		browsertest.WaitText("tools", "files.read_file", "web.fetch"))
	do("expand an execution",
		chromedp.Click(chromedp.CSS(`details.exec[data-id="60"] summary`)),
		browsertest.WaitText("executions", "Tool calls", "files.read_file",
			"Network", "api.test.example:443", "other.test.example:443 is not allowed", "refused"))
	do("multi-line output and results preview on one line",
		browsertest.WaitJS("the outcome of #58", `document.querySelector('details.exec[data-id="58"] .outcome').textContent === '{ "region": "north", "rows": 3 }'`),
		browsertest.WaitJS("the outcome of #57", `document.querySelector('details.exec[data-id="57"] .outcome').textContent === '[ 1, 2 ]'`))
	do("an expanded error shows its traceback",
		chromedp.Click(chromedp.CSS(`details.exec[data-id="59"] summary`)),
		browsertest.WaitJS("the traceback of #59", `document.querySelector('details.exec[data-id="59"] pre.error').textContent.startsWith('Traceback (most recent call last):\n  File "<cell>", line 1, in <module>\n    1/0\nZeroDivisionError: division by zero')`))
	do("and the hint codecell added to the message",
		chromedp.Click(chromedp.CSS(`details.exec[data-id="56"] summary`)),
		browsertest.WaitJS("the error of #56", `document.querySelector('details.exec[data-id="56"] pre.error').textContent.endsWith("ModuleNotFoundError: No module named 'pandas'\nModuleNotFoundError: No module named 'pandas'; to install it, call install_dependencies")`))
	do("load older executions",
		chromedp.Click(chromedp.CSS("#more")),
		browsertest.WaitText("executions", "print('the oldest')"),
		chromedp.WaitNotVisible(chromedp.CSS("#more")))
	injected, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned === 1 || document.querySelector('#executions img, #executions script') !== null`))
	if err != nil || injected {
		t.Fatalf("sandbox output became markup (injected=%v, %v)", injected, err)
	}
	// The chart is drawn.
	painted, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
		const c = document.getElementById('latency'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; })()`))
	if err != nil || painted < 1000 {
		t.Fatalf("latency chart painted %d pixels (%v)", painted, err)
	}

	// Typing a query sends a search once the typing stops, not one per key
	// (a slow machine may pause between keys for longer than the debounce).
	fake.mu.Lock()
	before := len(fake.searches)
	fake.mu.Unlock()
	do("search tools",
		chromedp.SendKeys(chromedp.CSS("#tool-query"), "Write a"),
		browsertest.WaitText("tools", "files.write_file"),
		browsertest.WaitText("tools-count", "1 tool"))
	time.Sleep(300 * time.Millisecond)
	fake.mu.Lock()
	typed := fake.searches[before:]
	fake.mu.Unlock()
	if len(typed) == 0 || len(typed) > len("Write a")/2 || typed[len(typed)-1] != "Write a" {
		t.Errorf("searches while typing %q, want about one, for the whole query", typed)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("DASHBOARD_SCREENSHOT_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "dashboard-fake.png"), shot, 0o644)
	}
	if _, err := browsertest.NonBlank(shot); err != nil {
		t.Error(err)
	}

	// A token in the fragment replaces the stored one and leaves the
	// address bar, on load and on a hash change; a wrong one brings the
	// token form back.
	do("a wrong token in the fragment",
		chromedp.Navigate("about:blank"),
		chromedp.Navigate(srv.URL+"/#token=wrong"),
		chromedp.WaitVisible(chromedp.CSS("#token-panel")),
		browsertest.WaitText("token-message", "did not accept"))
	do("a right token in the fragment",
		chromedp.Evaluate[chromedp.Void](`location.hash = 'token=s3+cret'`),
		chromedp.WaitNotVisible(chromedp.CSS("#token-panel")),
		browsertest.WaitText("executions", "print(secret)"))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || strings.Contains(loc, "token") {
		t.Errorf("address bar %q (%v), want the token gone", loc, err)
	}
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('codecell.token')`))
	if err != nil || stored != "s3+cret" {
		t.Errorf("sessionStorage holds %q (%v)", stored, err)
	}

	console()

	// The browser enforces the Content-Security-Policy: markup that did
	// reach the page could not run inline script. (After console(): the
	// refusal is logged as an error.)
	ran, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const s = document.createElement('script');
		s.textContent = 'window.inlineRan = true';
		document.body.append(s);
		return window.inlineRan === true; })()`))
	if err != nil || ran {
		t.Errorf("an inline script ran (%v, %v): the policy is not in force", ran, err)
	}
}
