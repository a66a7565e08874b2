package server

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestWireError: every error a request answers has a JSON-RPC code (the
// SDK sends 0 for one without), and one that wraps a coded error keeps
// both its code and its own words.
func TestWireError(t *testing.T) {
	coded := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inner", Data: []byte(`{"a":1}`)}
	for _, tc := range []struct {
		name     string
		err      error
		code     int64
		message  string
		sameData bool
	}{
		{"plain", errors.New("open the workspace: not a directory"), jsonrpc.CodeInternalError, "open the workspace: not a directory", false},
		{"a bad argument", fmt.Errorf("read: %w", fieldError("uri", "bad")), jsonrpc.CodeInvalidParams, "read: invalid argument uri: bad", false},
		{"coded", coded, jsonrpc.CodeInvalidParams, "inner", true},
		{"wraps a coded one", fmt.Errorf("outer: %w", coded), jsonrpc.CodeInvalidParams, "outer: inner", true},
	} {
		var je *jsonrpc.Error
		if !errors.As(wireError(tc.err), &je) || je.Code != tc.code || je.Message != tc.message || (string(je.Data) == `{"a":1}`) != tc.sameData {
			t.Errorf("%s: %#v", tc.name, wireError(tc.err))
		}
	}
	if wireError(nil) != nil {
		t.Error("nil is not nil")
	}
}
