// Package httpapitest is the client side of the tests of codecell's HTTP
// routes: one request, read whole, and a GET of a JSON answer with a bearer
// token. Only tests import it.
package httpapitest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Answer is an HTTP answer with its body read whole.
type Answer struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a request without a body and reads the answer. Each header entry
// is set on the request, but "Host", which sets the request's Host. It fails
// the test when the request cannot be sent.
func Do(t testing.TB, method, url string, header map[string]string) Answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return Answer{res.StatusCode, res.Header, string(b)}
}

// GetJSON sends GET url with the bearer token (none when "") and, when the
// answer is 200 and v is not nil, decodes its body into v, failing the test
// unless it is application/json that decodes. It returns the status.
func GetJSON(t testing.TB, url, token string, v any) int {
	t.Helper()
	var header map[string]string
	if token != "" {
		header = map[string]string{"Authorization": "Bearer " + token}
	}
	a := Do(t, "GET", url, header)
	if a.Status == http.StatusOK && v != nil {
		if ct := a.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", url, ct)
		}
		if err := json.Unmarshal([]byte(a.Body), v); err != nil {
			t.Fatalf("%s: %v: %s", url, err, a.Body)
		}
	}
	return a.Status
}

// BearerClient is an HTTP client that sends token as a bearer token with
// every request (an MCP client's HTTPClient, say).
func BearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token}}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
