package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/workspace"
)

// A namespace's workspace files are its MCP resources (docs/tools.md, "workspace"), at
// file:///workspace/<path>, the path the sandbox's code sees them at; the
// resource links execute_code returns point at them. The SDK keeps one
// resource list for every client, so the list is answered here per
// namespace, and reads go through a template whose handler opens only the
// caller's workspace.

const (
	workspaceURIPrefix = "file:///workspace/"
	// resourcePage is how many files one resources/list page holds.
	resourcePage = 100
	// maxResourceRead bounds one resources/read: base64 makes it about 11
	// MiB on the wire, under the stdio transport's 16 MiB frame.
	maxResourceRead = 8 << 20
)

func (s *Server) addResources() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: workspaceURIPrefix + "{+path}",
		Name:        "workspace",
		Title:       "Workspace files",
		Description: "A file of the workspace, the sandbox's working directory, by its path.",
	}, s.readResource)
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if lr, ok := req.(*mcp.ListResourcesRequest); ok && method == "resources/list" {
				return s.listResources(ctx, lr)
			}
			return next(ctx, method, req)
		}
	})
}

// namespaceOfExtra is namespaceOf for any request's extra information.
func namespaceOfExtra(extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	return DefaultNamespace
}

// listResources lists the caller's workspace files, a page at a time; the
// cursor is the number of files before the page.
func (s *Server) listResources(ctx context.Context, req *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	ns := namespaceOfExtra(req.Extra)
	offset := 0
	if req.Params != nil && req.Params.Cursor != "" {
		n, err := strconv.Atoi(req.Params.Cursor)
		if err != nil || n < 0 {
			return nil, invalidParams(fmt.Sprintf("invalid cursor %q: pass the nextCursor of the previous page", req.Params.Cursor))
		}
		offset = n
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	files, more, err := ws.Files(offset, resourcePage)
	if err != nil {
		return nil, s.wsError(ctx, ns, "cursor", err)
	}
	// (Answered here, not by the SDK, so the cache hints are set here.)
	res := &mcp.ListResourcesResult{Resources: make([]*mcp.Resource, 0, len(files)), Cacheable: workspaceCache}
	for _, f := range files {
		size := f.Size
		res.Resources = append(res.Resources, &mcp.Resource{
			URI: fileURI(f.Path), Name: f.Path, MIMEType: mime.TypeByExtension(path.Ext(f.Path)), Size: size,
			Annotations: &mcp.Annotations{LastModified: f.ModTime.UTC().Format(time.RFC3339)},
		})
	}
	if more {
		res.NextCursor = strconv.Itoa(offset + len(files))
	}
	return res, nil
}

// readResource reads a workspace file of the caller's namespace: text (its
// personal data as tokens, like every answer), or a base64 blob with its
// MIME type.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	ns := namespaceOfExtra(req.Extra)
	uri := req.Params.URI
	rel, err := workspacePathOf(uri)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	p, err := s.pathArg(ctx, ns, rel)
	if err != nil {
		return nil, err
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	data, err := ws.ReadFile(p, maxResourceRead)
	if err != nil {
		if errors.Is(err, workspace.ErrNotExist) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		msg := s.wsError(ctx, ns, "uri", err).Error()
		if errors.Is(err, workspace.ErrTooLarge) {
			msg += "; read_workspace_file reads it in pages"
		}
		return nil, invalidParams(msg)
	}
	mimeType, text := contentType(p, data)
	c := &mcp.ResourceContents{URI: uri, MIMEType: mimeType}
	if text {
		c.Text = string(data)
	} else {
		c.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// workspacePathOf is the workspace path a file:///workspace/ URI names.
func workspacePathOf(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Host != "" || !strings.HasPrefix(u.Path, "/workspace/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("uri %q is not a workspace file: want %s<path>", uri, workspaceURIPrefix)
	}
	rel := strings.TrimPrefix(u.Path, "/workspace/")
	if rel == "" {
		return "", fmt.Errorf("uri %q names no file", uri)
	}
	return rel, nil
}

// contentType is a file's MIME type, by its extension, else sniffed, and
// whether its content is text (UTF-8 without NUL bytes).
func contentType(name string, data []byte) (string, bool) {
	text := utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t, text && !isImage(t)
	}
	if text {
		return "text/plain; charset=utf-8", true
	}
	return http.DetectContentType(data), false
}

// isImage says whether a MIME type is one hosts show as an image.
func isImage(mimeType string) bool {
	t, _, _ := mime.ParseMediaType(mimeType)
	return strings.HasPrefix(t, "image/")
}

// invalidParams is the JSON-RPC error of a bad argument to a resource
// method, whose failures are protocol errors (a tool's are results).
func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}
