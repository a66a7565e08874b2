package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/httpapi"
	"github.com/codecell/codecell/internal/httpapi/httpapitest"
	"github.com/codecell/codecell/internal/server"
)

// TestErrorsHaveCodes: a request that fails for a reason of the server's
// (here, a namespace's workspace that cannot be opened) answers a JSON-RPC
// error with the code for an internal error, over both generations; the
// SDK gives an error that carries no code of its own the code 0, which is
// none of JSON-RPC's.
func TestErrorsHaveCodes(t *testing.T) {
	dataDir := t.TempDir()
	srv, err := server.New(server.Options{Config: config.Default(), Executor: lineExecutor{}, DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h, err := httpapi.Handler(httpapi.Options{Server: srv.MCP(), Tokens: map[string]string{"tok": "alice"}, API: srv.API(), Metrics: srv.MetricsHandler(), Gate: srv.Gate()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	// A file where the namespace's workspace directory goes.
	ws := srv.Workspace("alice")
	os.RemoveAll(ws)
	os.MkdirAll(filepath.Dir(ws), 0o700)
	if err := os.WriteFile(ws, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A 2025 client: its MCP session answers on a 200 event stream.
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: ts.URL + "/mcp", HTTPClient: httpapitest.BearerClient("tok")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	_, err = cs.ListResources(ctx, nil)
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInternalError {
		t.Errorf("resources/list of a broken workspace, 2025 client: %#v", err)
	}

	// A 2026-07-28 request, read raw.
	body := `{"jsonrpc":"2.0","id":7,"method":"resources/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/list", "Authorization": "Bearer tok"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(raw)
	if i := strings.Index(text, "data: "); i >= 0 { // an event stream
		text = strings.TrimSpace(text[i+len("data: "):])
	}
	var msg struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &msg); err != nil || msg.Error == nil || msg.Error.Code != jsonrpc.CodeInternalError || msg.Error.Message == "" {
		t.Errorf("resources/list of a broken workspace, 2026 request: %d %s", resp.StatusCode, raw)
	}
}
