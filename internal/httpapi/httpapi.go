package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure the HTTP handler.
type Options struct {
	Server *mcp.Server // required
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed to
	// call /mcp besides same-origin requests. Requests without an Origin
	// header (non-browser clients) are always allowed.
	AllowedOrigins []string
	Logger         *slog.Logger // nil means silent
}

// Handler returns the HTTP routes.
func Handler(opts Options) (http.Handler, error) {
	if opts.Server == nil {
		return nil, errors.New("httpapi: Server is required")
	}
	// Origin checks (DNS rebinding and cross-site requests, as the MCP spec
	// requires): the SDK rejects requests to a loopback listener whose Host
	// is not loopback, and the standard library's cross-origin protection
	// rejects browser requests from other origins.
	cop := http.NewCrossOriginProtection()
	for _, o := range opts.AllowedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("allowed origin %q: %w", o, err)
		}
	}
	server := opts.Server
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Logger: opts.Logger})
	mux := http.NewServeMux()
	mux.Handle("/mcp", cop.Handler(mcpHandler))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return mux, nil
}

// IsLoopback reports whether a listen address binds only loopback
// interfaces. An empty host (":8080") binds every interface.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, nil // a name other than localhost may resolve anywhere
	}
	return ip.IsLoopback(), nil
}
