package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP has two generations on one endpoint, and /mcp serves both:
//
//   - 2025 clients (protocol 2025-11-25 and before) open an MCP session with
//     initialize, carry its Mcp-Session-Id on every request, may hold a GET
//     event stream and end the session with DELETE. The SDK's stateful
//     handler serves them.
//   - 2026 clients (2026-07-28 on) have no session: every POST carries its
//     protocol version in the Mcp-Protocol-Version header and in the
//     request's _meta, server/discover replaces initialize, and a request's
//     notifications (progress) come back on its own response stream. The
//     SDK's stateless handler serves them, one ephemeral session a request.
//
// Nothing codecell keeps lives in an MCP session: a namespace comes from the
// bearer token of each request, and an interpreter session is a handle
// (session_id) of its namespace. So a request of either generation reaches
// the same state, whichever handler serves it.

// modernVersion is the first protocol revision without sessions. Revisions
// are dates, so they order as strings.
const modernVersion = "2026-07-28"

// Header names of the Streamable HTTP transport.
const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	// metaProtocolVersion is the _meta key that carries a 2026 request's
	// protocol version.
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
)

// byGeneration routes each /mcp request to the handler of its protocol
// generation (see above). maxBody bounds what it reads of a body it must
// look into; the handler it picks applies the same bound and answers a
// body past it.
func byGeneration(stateful, stateless http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		modern, err := isModern(r, maxBody)
		if err != nil {
			// The stateful handler answers what cannot be read (a body past
			// the bound: 413) as it always has.
			stateful.ServeHTTP(w, r)
			return
		}
		if modern {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// isModern reports whether r is a 2026 request. The headers decide when they
// can: a session id is 2025's, a protocol version header names the revision.
// A POST with neither is a client's first message, whose method decides:
// initialize is 2025's, server/discover 2026's (a 2026 client may send it
// before it knows the server's versions), and any request whose _meta names
// a protocol version is 2026's (the stateless handler then tells it what
// header it lacks). r's body is restored for the handler.
func isModern(r *http.Request, maxBody int64) (bool, error) {
	if r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "" {
		return false, nil
	}
	if v := r.Header.Get(protocolVersionHeader); v != "" {
		return v >= modernVersion, nil
	}
	if r.Body == nil {
		return false, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	// The handler reads what was read, then the rest.
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil {
		return false, err
	}
	if int64(len(body)) > maxBody {
		return false, errBodyTooLarge
	}
	return firstMessageIsModern(body), nil
}

var errBodyTooLarge = errors.New("request body too large")

// firstMessageIsModern reads the method and _meta of a JSON-RPC message (a
// batch, a 2025 form, is never modern).
func firstMessageIsModern(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return false
	}
	switch msg.Method {
	case "initialize":
		return false
	case "server/discover":
		return true
	}
	v, _ := msg.Params.Meta[metaProtocolVersion].(string)
	return v != ""
}

// mcpHandler is /mcp: both generations' SDK handlers behind byGeneration.
func mcpHandler(opts Options) http.Handler {
	server := opts.Server
	get := func(*http.Request) *mcp.Server { return server }
	common := mcp.StreamableHTTPOptions{
		Logger: opts.Logger,
		// The SDK's own Host check is the one refuseRebinding makes for
		// every route behind the token, /mcp included.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxRequestBody,
	}
	stateful := common
	stateless := common
	stateless.Stateless = true
	// The revision's cancellation: a client that closes a request's
	// response stream cancels the request, and so its execution.
	stateless.PropagateRequestCancellation = true
	h := byGeneration(
		explainUnknownSession(mcp.NewStreamableHTTPHandler(get, &stateful), opts.Replica),
		mcp.NewStreamableHTTPHandler(get, &stateless),
		MaxRequestBody)
	if opts.Tasks != nil {
		h = interceptTasks(h, opts.Tasks, MaxRequestBody)
	}
	return h
}

// MaxRequestBody is the largest MCP request body over HTTP, in bytes (the
// SDK's default, said here so that the README can say it).
const MaxRequestBody = mcp.DefaultMaxRequestBodyBytes
