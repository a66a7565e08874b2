package server

import (
	"context"
	"errors"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/gate"
)

// The gate (package gate) is the one way out for personal data; these two
// middlewares put every MCP answer and notification through it.

// gateMiddleware is the receiving middleware that passes every result and
// error of every request through the gate, and gives the request a scope
// for the values restored for it. It is the outermost middleware.
func (s *Server) gateMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ns := namespaceOfExtra(req.GetExtra())
		ctx = gate.WithScope(ctx, ns)
		if usesNamespace(method) {
			defer s.enter(ns)()
		}
		res, err := next(ctx, method, req)
		if err != nil {
			if s.gate.Off() {
				return nil, wireError(err)
			}
			return nil, wireError(s.gate.Error(ctx, ns, wireError(err)))
		}
		if s.gate.Off() {
			return res, nil
		}
		if res == nil || reflect.ValueOf(res).IsNil() {
			return res, nil
		}
		// restore_pii, listed only when the operator allows it, answers
		// with the originals: that is what it is for (see the README).
		if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil && ct.Params.Name == "restore_pii" {
			return res, nil
		}
		out, gerr := s.gate.Result(ctx, ns, res)
		if gerr != nil {
			s.log.Error("gate: an answer was withheld", "method", method, "error", gerr)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: gate.ErrWithheld.Error()}
		}
		return out, nil
	}
}

// usesNamespace says whether a request of method may touch its namespace's
// workspace or sandboxes, and so keeps the namespace from going idle
// (tenants). Others (lists, pings, a 2026 client's long subscriptions/listen)
// do not.
func usesNamespace(method string) bool {
	switch method {
	case "tools/call", "resources/read", "resources/list":
		return true
	}
	return false
}

// gateSending is the sending middleware that passes every notification
// and request the server sends (progress, log messages) through the gate,
// in the namespace of the request it belongs to, else the operators'.
func (s *Server) gateSending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s.gate.Off() {
			return next(ctx, method, req)
		}
		ns, ok := gate.ScopeNamespace(ctx)
		if !ok {
			ns = gate.OperatorNamespace
		}
		r, ok := req.(*mcp.ServerRequest[mcp.Params])
		if !ok || r.Params == nil || reflect.ValueOf(r.Params).IsNil() {
			return next(ctx, method, req)
		}
		p, err := s.gate.Params(ctx, ns, r.Params)
		if err != nil {
			s.log.Error("gate: a notification was withheld", "method", method, "error", err)
			return nil, gate.ErrWithheld
		}
		return next(ctx, method, &mcp.ServerRequest[mcp.Params]{Session: r.Session, Params: p, Extra: r.Extra})
	}
}

// wireError gives an error its JSON-RPC code: the SDK would send an error
// that carries none with the code 0, which is none of JSON-RPC's. A bad
// argument is invalid params; an error that wraps a coded one keeps its
// code and adds its own words; any other is the server's: internal.
func wireError(err error) error {
	var je *jsonrpc.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &je):
		if je == err {
			return err
		}
		return &jsonrpc.Error{Code: je.Code, Message: err.Error(), Data: je.Data}
	case errors.As(err, new(*FieldError)):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}
