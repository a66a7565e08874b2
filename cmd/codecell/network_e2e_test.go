package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/egress"
	"github.com/codecell/codecell/internal/httpapi/httpapitest"
	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/testnet"
)

// TestNetworkE2E drives sandbox.network through the binary over HTTP: a
// namespace with an allowlist reaches api.test.example over HTTPS (a host
// in a network namespace, its name pinned, its CA the operator's root) with
// a secret header the code never sees, and is refused elsewhere, with the
// answer listing what went out; another namespace has none; the execution
// log, the metrics and doctor show it.
func TestNetworkE2E(t *testing.T) {
	requireProduction(t)
	ca := testnet.NewCA(t)
	api := testnet.Start(t, testnet.Options{Name: "api.test.example", CA: ca})
	// A package index that pip, run by the code, reaches through the proxy.
	wheels := t.TempDir()
	buildWheel(t, wheels, "demo_pkg", "1.0", map[string]string{"demo_pkg/__init__.py": "VALUE = 42\n"})
	index := testnet.Start(t, testnet.Options{Name: "pypi.test.example", CA: ca, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/demo-pkg/":
			fmt.Fprint(w, `<html><body><a href="/files/demo_pkg-1.0-py3-none-any.whl">demo_pkg-1.0-py3-none-any.whl</a></body></html>`)
		case "/files/demo_pkg-1.0-py3-none-any.whl":
			http.ServeFile(w, r, filepath.Join(wheels, "demo_pkg-1.0-py3-none-any.whl"))
		default:
			http.NotFound(w, r)
		}
	})})
	roots := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "Bearer e2e-secret-value-0123456789"
	t.Setenv("CODECELL_TEST_API_TOKEN", secret)
	cfg, _ := json.Marshal(map[string]any{
		"sandbox": map[string]any{"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "20s",
			"network": map[string]any{
				"mode":       "allowlist",
				"allow":      []string{"api.test.example:443", "pypi.test.example"},
				"hosts":      map[string]any{"api.test.example": []string{api.Addr.String()}, "pypi.test.example": []string{index.Addr.String()}},
				"roots":      roots,
				"headers":    map[string]any{"api.test.example": map[string]string{"Authorization": "${CODECELL_TEST_API_TOKEN}"}},
				"namespaces": map[string]any{"team-b": map[string]any{"allow": []string{}}},
			}},
		"http": map[string]any{"tokens": map[string]string{tokenA: "team-a", tokenB: "team-b"}},
	})
	log := &jsonLog{}
	base := startHTTP(t, string(cfg), log.add, "--log-format", "json", "--log-level", "debug")
	a, b := connectWithToken(t, base, tokenA), connectWithToken(t, base, tokenB)

	_, out := call(t, a, map[string]any{"code": `
import urllib.request, urllib.parse
print(urllib.request.urlopen("https://api.test.example/auth?want=" + urllib.parse.quote(WANT), timeout=10).read().decode())
try:
    urllib.request.urlopen("https://other.test.example/", timeout=10)
except Exception as e:
    print("refused:", e)
`, "context": map[string]any{"WANT": secret}})
	if !out.OK || !strings.Contains(out.Stdout, "authorized") || !strings.Contains(out.Stdout, "refused: <urlopen error Tunnel connection failed: 403 Forbidden by codecell: other.test.example:443 is not allowed") {
		t.Fatalf("team-a: %+v", out)
	}
	if len(out.Network) != 2 || out.Network[0].Host != "api.test.example" || out.Network[0].Refused != "" || out.Network[0].Received == 0 ||
		out.Network[1].Host != "other.test.example" || !strings.Contains(out.Network[1].Refused, "is not allowed") {
		t.Errorf("team-a's network: %+v", out.Network)
	}
	if raw, _ := json.Marshal(out); strings.Contains(string(raw), "e2e-secret") {
		t.Errorf("the answer holds the secret: %s", raw)
	}

	_, out = call(t, a, map[string]any{"code": `
import subprocess, sys
p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--index-url", "https://pypi.test.example/simple/",
                    "-d", "/tmp/dl", "demo_pkg"], capture_output=True, text=True, timeout=90)
print(p.returncode, p.stdout[-500:], p.stderr[-500:])
import os
print(os.listdir("/tmp/dl"))
`, "timeout_seconds": 100})
	if !strings.Contains(out.Stdout, "demo_pkg-1.0-py3-none-any.whl']") {
		t.Errorf("pip through the proxy: %+v", out)
	}

	_, out = call(t, b, map[string]any{"code": `
import urllib.request
try:
    urllib.request.urlopen("https://api.test.example/", timeout=5)
except Exception as e:
    print("no network:", type(e).__name__)
`})
	if !strings.Contains(out.Stdout, "no network: URLError") || len(out.Network) != 0 {
		t.Errorf("team-b: %+v", out)
	}

	var page server.ExecutionsPage
	if code := httpapitest.GetJSON(t, base+"/api/v1/executions", tokenA, &page); code != 200 || len(page.Executions) != 2 {
		t.Fatalf("executions: %d %+v", code, page)
	}
	var flows []egress.Flow
	if err := json.Unmarshal(page.Executions[1].Network, &flows); err != nil || len(flows) != 2 || flows[1].Refused == "" {
		t.Errorf("the log's network: %s (%v)", page.Executions[0].Network, err)
	}
	if raw, _ := json.Marshal(page); strings.Contains(string(raw), "e2e-secret") {
		t.Errorf("the execution log holds the secret")
	}
	if raw, _ := json.Marshal(log.snapshot()); strings.Contains(string(raw), "e2e-secret") {
		t.Errorf("the server's log holds the secret")
	}
	got := scrapeMetrics(t, base, tokenA)
	if got[`codecell_egress_connections_total{outcome="allowed"}`] < 2 || got[`codecell_egress_connections_total{outcome="refused"}`] != 1 ||
		got[`codecell_egress_bytes_total{direction="received"}`] == 0 {
		t.Errorf("metrics: %v", got)
	}
}
