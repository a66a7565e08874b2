package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestIsModern: each request goes to the handler of its generation, and
// its body reaches that handler whole.
func TestIsModern(t *testing.T) {
	const discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`
	const metaCall = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	const plainCall = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for _, tc := range []struct {
		name   string
		method string
		header map[string]string
		body   string
		modern bool
	}{
		{"GET stream", "GET", nil, "", false},
		{"DELETE", "DELETE", map[string]string{"Mcp-Session-Id": "abc"}, "", false},
		{"2025 session", "POST", map[string]string{"Mcp-Session-Id": "abc", "Mcp-Protocol-Version": "2026-07-28"}, metaCall, false},
		{"2025 version header", "POST", map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, plainCall, false},
		{"2026 version header", "POST", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, plainCall, true},
		{"a later revision: the stateless handler says which it speaks", "POST", map[string]string{"Mcp-Protocol-Version": "2099-01-01"}, plainCall, true},
		{"initialize", "POST", nil, initialize, false},
		{"server/discover without a header", "POST", nil, discover, true},
		{"_meta names a version, the header is missing", "POST", nil, metaCall, true},
		{"no hint", "POST", nil, plainCall, false},
		{"a batch", "POST", nil, "[" + plainCall + "]", false},
		{"not JSON", "POST", nil, "nonsense", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			var bodies []string
			handler := func(name string) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					got = name
					b, _ := io.ReadAll(r.Body)
					bodies = append(bodies, string(b))
				})
			}
			r := httptest.NewRequest(tc.method, "/mcp", strings.NewReader(tc.body))
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			byGeneration(handler("stateful"), handler("stateless"), 1<<20).ServeHTTP(httptest.NewRecorder(), r)
			want := "stateful"
			if tc.modern {
				want = "stateless"
			}
			if got != want {
				t.Errorf("served by the %s handler, want the %s one", got, want)
			}
			if len(bodies) != 1 || bodies[0] != tc.body {
				t.Errorf("the handler read %q, want %q", bodies, tc.body)
			}
		})
	}
}

// TestIsModernBodyBound: a body past the bound is not read past it, and the
// stateful handler, which answers it as it always has, reads it whole.
func TestIsModernBodyBound(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"pad":"` + strings.Repeat("x", 100) + `"}}`
	var got string
	var read string
	byGeneration(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = "stateful"
		b, _ := io.ReadAll(r.Body)
		read = string(b)
	}), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = "stateless" }), 50).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/mcp", strings.NewReader(body)))
	if got != "stateful" || read != body {
		t.Errorf("served by %s, which read %d of %d bytes", got, len(read), len(body))
	}
}
