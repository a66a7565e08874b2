package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Tasks takes what the SDK's handlers cannot: the tasks/* methods, and the
// task parameter of a 2025 tools/call (server.Server.InterceptTaskMessage
// is the one).
type Tasks interface {
	InterceptTaskMessage(ctx context.Context, ns string, msg []byte, reply func([]byte)) []byte
}

// interceptTasks answers the tasks/* requests of /mcp itself, in the
// namespace of the request's token, and passes the rest on, a 2025 task
// parameter moved where the SDK keeps it. A task is the namespace's, not an
// MCP session's: tasks/get needs no session, and may reach any replica.
func interceptTasks(h http.Handler, tasks Tasks, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil || int64(len(body)) > maxBody || !bytes.Contains(body, []byte(`"task`)) {
			// The SDK's handler reads what was read, then the rest, and
			// answers a body too large.
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			h.ServeHTTP(w, r)
			return
		}
		ns := ""
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			ns = ti.UserID
		}
		replies := make(chan []byte, 1)
		pass := tasks.InterceptTaskMessage(r.Context(), ns, body, func(b []byte) { replies <- b })
		if pass == nil {
			select {
			case resp := <-replies:
				w.Header().Set("Content-Type", "application/json")
				w.Write(resp)
			case <-r.Context().Done():
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(pass))
		r.ContentLength = int64(len(pass))
		h.ServeHTTP(w, r)
	})
}
