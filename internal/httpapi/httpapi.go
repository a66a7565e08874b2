package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/dashboard"
)

// Options configure the HTTP handler.
type Options struct {
	Server *mcp.Server // required
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed to
	// call /mcp besides same-origin requests. Requests without an Origin
	// header (non-browser clients) are always allowed.
	AllowedOrigins []string
	// Tokens maps bearer tokens to namespaces. When it is not empty every
	// route but /healthz needs a valid token, and the request acts in the
	// token's namespace.
	Tokens map[string]string
	// API answers /readyz and the REST API under /api/v1/; nil leaves
	// them out.
	API API
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
	// Gate tokenizes personal data in every answer of /readyz, /metrics
	// and /api/v1/ (and so the dashboard's), in the caller's namespace;
	// server.Gate is the one (its "off" mode passes answers as they are).
	// It is required with API or Metrics: Handler refuses to serve their
	// answers ungated.
	Gate   Gate
	Logger *slog.Logger // nil means silent
	// Replica names this server among replicas behind one balancer: every
	// response carries it in the Codecell-Replica header, and a request for
	// an MCP session this replica does not hold is told where to look. ""
	// leaves the header out.
	Replica string
	// BodyTimeout bounds how long a request's body may take to arrive; 0
	// means 30 s. (Tests shorten it.)
	BodyTimeout time.Duration
	// Tasks answers the tasks/* methods of /mcp; nil leaves them to the
	// SDK, which knows none.
	Tasks Tasks
}

// Gate tokenizes personal data in answers. A namespace "" is the default.
type Gate interface {
	JSON(ctx context.Context, namespace string, raw []byte) ([]byte, error)
	Text(ctx context.Context, namespace, s string) (string, error)
}

// Handler returns the HTTP routes.
func Handler(opts Options) (http.Handler, error) {
	if opts.Server == nil {
		return nil, errors.New("httpapi: Server is required")
	}
	if opts.Gate == nil && (opts.API != nil || opts.Metrics != nil) {
		// Fail closed: a missing gate must not mean answers leave as they
		// are.
		return nil, errors.New("httpapi: Gate is required with API or Metrics (their answers pass it)")
	}
	// Origin checks (DNS rebinding and cross-site requests, as the MCP spec
	// requires): refuseRebinding rejects requests to a loopback listener
	// whose Host is not loopback, and the standard library's cross-origin
	// protection rejects browser requests from other origins.
	cop := http.NewCrossOriginProtection()
	for _, o := range opts.AllowedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("allowed origin %q: %w", o, err)
		}
	}
	// Everything but /healthz sits behind the token check.
	private := http.NewServeMux()
	private.Handle("/mcp", mcpHandler(opts))
	addOperational(private, opts, cop)
	var guarded http.Handler = private
	if len(opts.Tokens) > 0 {
		guarded = auth.RequireBearerToken(tokenVerifier(opts.Tokens), &auth.RequireBearerTokenOptions{
			// codecell's tokens are static secrets from the config.
			AllowMissingExpiration: true,
		})(private)
	}
	mux := http.NewServeMux()
	mux.Handle("/", refuseRebinding(cop.Handler(guarded)))
	bodyBound := opts.BodyTimeout
	if bodyBound == 0 {
		bodyBound = bodyTimeout
	}
	if opts.Replica != "" {
		outer := boundBodies(mux, bodyBound)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(ReplicaHeader, opts.Replica)
			outer.ServeHTTP(w, r)
		}), nil
	}
	// The dashboard's page and assets hold no data (it reads /api/v1 with
	// the user's token), so they are served without one.
	dash := cop.Handler(dashboard.Handler())
	for _, p := range dashboard.Paths {
		mux.Handle(p, dash)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return boundBodies(mux, bodyBound), nil
}

// tokenVerifier checks a bearer token against the configured ones. Tokens
// are compared as SHA-256 digests, so the lookup's timing does not depend on
// how much of a guess matches a real token. The namespace travels as the
// token's UserID: tools read it from there, and the SDK refuses an MCP
// session to a request whose token maps to another namespace.
func tokenVerifier(tokens map[string]string) auth.TokenVerifier {
	byDigest := make(map[[sha256.Size]byte]string, len(tokens))
	for tok, ns := range tokens {
		byDigest[sha256.Sum256([]byte(tok))] = ns
	}
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		ns, ok := byDigest[sha256.Sum256([]byte(token))]
		if !ok {
			return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: ns}, nil
	}
}

// refuseRebinding answers 403 to a request that reached a loopback
// listener under a Host that is not loopback: that is DNS rebinding, a page
// of another site reaching 127.0.0.1 under its own name. (The MCP SDK makes
// the same check for /mcp alone; this one covers every route it wraps.)
func refuseRebinding(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
			if hostIsLoopback(local.String()) && !hostIsLoopback(r.Host) {
				writeJSON(w, http.StatusForbidden, errorBody{Error: fmt.Sprintf("invalid Host header %q", r.Host)})
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// IsLoopback reports whether a listen address binds only loopback
// interfaces. An empty host (":8080") binds every interface.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	return loopbackName(host), nil
}

// hostIsLoopback reports whether a host, with or without a port (a Host
// header, a local address), names only a loopback address.
func hostIsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	return loopbackName(host)
}

// loopbackName reports whether a host without a port is localhost or a
// loopback address; any other name may resolve anywhere.
func loopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
