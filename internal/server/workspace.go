package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/gate"
	"github.com/codecell/codecell/internal/pii"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/textcut"
	"github.com/codecell/codecell/internal/workspace"
)

// maxWrite bounds the content of one write_workspace_file call, after
// base64 decoding; the workspace's quota bounds the total. The SDK's
// transports as codecell configures them refuse a larger call first (a
// frame over 16 MiB on stdio, a body over 4 MiB over HTTP); this holds for
// any transport that takes more.
const maxWrite = 16 << 20

// WriteWorkspaceFileInput is the input of write_workspace_file.
type WriteWorkspaceFileInput struct {
	Path     string `json:"path" jsonschema:"File path relative to the workspace; missing directories are created."`
	Content  string `json:"content" jsonschema:"The file's new content."`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (default) or base64."`
}

// WorkspaceEntry is a file or directory of the workspace.
type WorkspaceEntry struct {
	Path    string `json:"path" jsonschema:"Relative to the workspace."`
	Size    int64  `json:"size" jsonschema:"Bytes; 0 for a directory."`
	ModTime string `json:"mod_time" jsonschema:"Last modification, RFC 3339."`
	IsDir   bool   `json:"is_dir"`
	Symlink bool   `json:"symlink,omitempty"`
}

// ReadWorkspaceFileInput is the input of read_workspace_file.
type ReadWorkspaceFileInput struct {
	Path   string `json:"path" jsonschema:"File path relative to the workspace."`
	Offset int64  `json:"offset,omitempty" jsonschema:"Byte offset to start at; default 0."`
	Limit  int64  `json:"limit,omitempty" jsonschema:"Bytes to read, at most 1048576; default: a page that fits the answer budget."`
}

// ReadWorkspaceFileOutput is the result of read_workspace_file.
type ReadWorkspaceFileOutput struct {
	Path       string `json:"path"`
	Content    string `json:"content" jsonschema:"The bytes read, as text or base64."`
	Encoding   string `json:"encoding" jsonschema:"text, or base64 for binary data."`
	MIMEType   string `json:"mime_type"`
	Size       int64  `json:"size" jsonschema:"The whole file's size in bytes."`
	Offset     int64  `json:"offset"`
	Length     int64  `json:"length" jsonschema:"Bytes read."`
	More       bool   `json:"more" jsonschema:"True when bytes remain: read on at next_offset."`
	NextOffset int64  `json:"next_offset,omitempty"`
}

// ListWorkspaceFilesInput is the input of list_workspace_files.
type ListWorkspaceFilesInput struct {
	Path    string `json:"path,omitempty" jsonschema:"Directory to list, relative to the workspace; default all of it."`
	Pattern string `json:"pattern,omitempty" jsonschema:"Glob on each path or base name, e.g. *.csv."`
}

// ListWorkspaceFilesOutput is the result of list_workspace_files.
type ListWorkspaceFilesOutput struct {
	Files     []WorkspaceEntry `json:"files"`
	Truncated bool             `json:"truncated" jsonschema:"More matched than are listed (at most 1000, and what fits the answer budget)."`
	Usage     *WorkspaceUsage  `json:"usage,omitempty" jsonschema:"What the whole workspace holds against its quota."`
}

// WorkspaceUsage is what a workspace holds against its limits.
type WorkspaceUsage struct {
	Bytes       int64  `json:"bytes" jsonschema:"Disk space used, in allocated bytes (a small file takes a whole 4 KiB block)."`
	Quota       int64  `json:"quota" jsonschema:"The quota in bytes; 0 means none."`
	Entries     int64  `json:"entries" jsonschema:"Files, directories and links."`
	MaxEntries  int64  `json:"max_entries" jsonschema:"The cap on entries; 0 means none."`
	Enforcement string `json:"enforcement" jsonschema:"kernel: a write past the limits fails with an OSError (ENOSPC); watcher: an execution that passes them is stopped and what it wrote past them removed."`
}

func usageOf(u workspace.Usage) *WorkspaceUsage {
	return &WorkspaceUsage{Bytes: u.Bytes, Quota: u.Quota, Entries: u.Entries, MaxEntries: u.MaxEntries, Enforcement: u.Enforcement}
}

// DeleteWorkspaceFileInput is the input of delete_workspace_file.
type DeleteWorkspaceFileInput struct {
	Path      string `json:"path" jsonschema:"File, link or directory, relative to the workspace."`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"Delete a non-empty directory with its contents."`
}

// DeleteWorkspaceFileOutput is the result of delete_workspace_file.
type DeleteWorkspaceFileOutput struct {
	Deleted string `json:"deleted"`
}

func (s *Server) addWorkspaceTools() {
	addTool(s, "workspace", &mcp.Tool{
		Name:        "write_workspace_file",
		Title:       "Write a workspace file",
		Description: "Write a file in the workspace, the sandbox's working directory, replacing it atomically.",
	}, s.writeWorkspaceFile)
	addTool(s, "workspace", &mcp.Tool{
		Name:        "read_workspace_file",
		Title:       "Read a workspace file",
		Description: "Read a workspace file: text, or base64 with a MIME type for binary data. Large files are read in pages.",
	}, s.readWorkspaceFile)
	addTool(s, "workspace", &mcp.Tool{
		Name:        "list_workspace_files",
		Title:       "List workspace files",
		Description: "List workspace files recursively with sizes and modification times.",
	}, s.listWorkspaceFiles)
	addTool(s, "workspace", &mcp.Tool{
		Name:        "delete_workspace_file",
		Annotations: destroys(),
		Title:       "Delete a workspace file",
		Description: "Delete a workspace file, link or directory.",
	}, s.deleteWorkspaceFile)
}

// hostUser is what an Executor that maps its sandbox's user to a host user
// says about it; *sandbox.Manager does.
type hostUser interface{ HostUser() string }

// volumes returns the namespaces' workspaces: Options.Volumes, or plain
// directories with the config's limits, made on first use.
func (s *Server) volumes() (*workspace.Volumes, error) {
	s.volOnce.Do(func() {
		if s.vols != nil {
			return
		}
		opts := workspace.VolumeOptions{
			Quota:      s.cfg.Sandbox.WorkspaceQuota,
			MaxEntries: int64(s.cfg.Sandbox.WorkspaceEntries),
			Logger:     s.log,
		}
		if h, ok := s.exec.(hostUser); ok && h.HostUser() == "nobody" {
			opts.Owner = sandbox.UID
		}
		s.vols, s.volErr = workspace.NewVolumes(opts)
		s.ownVols = s.volErr == nil
	})
	return s.vols, s.volErr
}

// openWorkspace opens a namespace's workspace, creating it if need be. What
// it creates belongs to the host user the sandbox's code runs as, so that
// the code can change it. The caller closes it.
func (s *Server) openWorkspace(ns string) (*workspace.Workspace, error) {
	v, err := s.volume(ns)
	if err != nil {
		return nil, err
	}
	return v.Open()
}

// wsError is the tool error for a failed workspace operation: a bad path is
// a bad argument of field. The message names the path as restored; the
// gate tokenizes it like every answer.
func (s *Server) wsError(ctx context.Context, ns, field string, err error) error {
	if errors.Is(err, workspace.ErrInvalidPath) || errors.Is(err, workspace.ErrOutside) {
		return fieldError(field, "%s", err.Error())
	}
	return err
}

func (s *Server) writeWorkspaceFile(ctx context.Context, req *mcp.CallToolRequest, in WriteWorkspaceFileInput) (*mcp.CallToolResult, WorkspaceEntry, error) {
	ns := namespaceOf(req)
	data := []byte(in.Content)
	switch in.Encoding {
	case "", "text":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, WorkspaceEntry{}, fieldError("content", "is not valid base64: %v", err)
		}
	default:
		return nil, WorkspaceEntry{}, fieldError("encoding", "%q is not text or base64", in.Encoding)
	}
	if len(data) > maxWrite {
		return nil, WorkspaceEntry{}, fieldError("content", "is %d bytes; the limit is %d", len(data), maxWrite)
	}
	p, err := s.pathArg(ctx, ns, in.Path)
	if err != nil {
		return nil, WorkspaceEntry{}, err
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return nil, WorkspaceEntry{}, err
	}
	defer ws.Close()
	e, err := ws.Write(p, data)
	if err != nil {
		return nil, WorkspaceEntry{}, s.wsError(ctx, ns, "path", err)
	}
	out := shownEntry(e)
	return textResult(fmt.Sprintf("wrote %s (%d bytes)\n", out.Path, out.Size)), out, nil
}

func (s *Server) readWorkspaceFile(ctx context.Context, req *mcp.CallToolRequest, in ReadWorkspaceFileInput) (*mcp.CallToolResult, ReadWorkspaceFileOutput, error) {
	ns := namespaceOf(req)
	if in.Offset < 0 {
		return nil, ReadWorkspaceFileOutput{}, fieldError("offset", "must not be negative")
	}
	if in.Limit < 0 || in.Limit > workspace.MaxReadLimit {
		return nil, ReadWorkspaceFileOutput{}, fieldError("limit", "%d is out of range; it must be from 1 to %d", in.Limit, workspace.MaxReadLimit)
	}
	p, err := s.pathArg(ctx, ns, in.Path)
	if err != nil {
		return nil, ReadWorkspaceFileOutput{}, err
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return nil, ReadWorkspaceFileOutput{}, err
	}
	defer ws.Close()
	limit := in.Limit
	if limit == 0 {
		limit = s.readPage(req)
	}
	c, err := ws.Read(p, in.Offset, limit)
	if err != nil {
		return nil, ReadWorkspaceFileOutput{}, s.wsError(ctx, ns, "path", err)
	}
	if in.Limit == 0 && !c.Text && !isImage(c.MIMEType) {
		// Base64 is a third longer than its bytes: the default page of a
		// binary file is a third shorter, to fit the budget as well.
		if n := limit * 3 / 4; int64(len(c.Data)) > n {
			c.Data, c.More = c.Data[:n], true
		}
	}
	if !(isImage(c.MIMEType) && c.Offset == 0 && !c.More) {
		// A page must not end or start inside a value, or two reads would
		// give it back in two halves that no detector finds.
		s.pageBounds(ctx, ws, p, c)
	}
	out := ReadWorkspaceFileOutput{
		Encoding: "text", MIMEType: c.MIMEType, Size: c.Size, Offset: c.Offset,
		Length: int64(len(c.Data)), More: c.More, Path: c.Path,
	}
	if c.More {
		out.NextOffset = c.Offset + out.Length
	}
	if c.Text {
		// The file's text reaches the model with its personal data as
		// tokens, as execute_code's output does (see gate.go): the gate
		// tokenizes the answer.
		out.Content = string(c.Data)
	} else {
		// Base64 hides its bytes from the gate: they are read and
		// tokenized before they are encoded (see Gate.Bytes), images too.
		data, err := s.gate.Bytes(ctx, ns, c.MIMEType, c.Data)
		if err != nil {
			return nil, ReadWorkspaceFileOutput{}, err
		}
		out.Encoding, out.Content = "base64", base64.StdEncoding.EncodeToString(data)
	}
	if !c.Text && isImage(c.MIMEType) && c.Offset == 0 && !c.More {
		// A whole image reaches the model as one, not as base64 text.
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: fmt.Sprintf("[image %s, %d bytes]\n", out.MIMEType, out.Size)},
			&mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType},
		}}, out, nil
	}
	return textResult(renderRead(out)), out, nil
}

// pageMargin is how much of the file around a page is read to find the
// values that cross its bounds: values longer than this (a private key of
// more than 8 KiB) are not kept whole.
const pageMargin = 8 << 10

// pageBounds moves the bounds of the page c so that no value is cut: a
// value the detectors find in the file around it crossing the end is taken
// whole, one crossing the start is left to the page before (which took
// it), one longer than the margin is left out; and neither bound splits a
// run of the characters values are made of (package textcut), which the
// detectors may not know once cut. The values found in the page, with the
// context around it, are given to the gate, which tokenizes them wherever
// the answer holds them, context or not ("SSN:" at the end of one page,
// the number at the start of the next).
func (s *Server) pageBounds(ctx context.Context, ws *workspace.Workspace, p string, c *workspace.Chunk) {
	var before, after []byte
	if c.Offset > 0 {
		from := max(0, c.Offset-pageMargin)
		if b, err := ws.Read(p, from, c.Offset-from); err == nil {
			before = b.Data
			// textPart drops a trailing partial character; keep the bytes
			// adjacent to the page.
			if int64(len(before)) != c.Offset-from {
				before = nil
			}
		}
	}
	end := c.Offset + int64(len(c.Data))
	if end < c.Size {
		if a, err := ws.Read(p, end, pageMargin); err == nil {
			after = a.Data
		}
	}
	window := string(before) + string(c.Data) + string(after)
	a, b := len(before), len(before)+len(c.Data)
	if c.Offset > 0 && len(before) == 0 {
		a = -1 // what precedes the page is unknown: leave its start
	}
	var matches []pii.Match
	if !s.gate.Off() {
		matches = s.gate.Detector().Find(window)
	}
	for moved := true; moved; {
		moved = false
		for _, m := range matches {
			if m.Start < a && a < m.End {
				a, moved = min(m.End, b), true
			}
			if m.Start < b && b < m.End {
				if m.End < len(window) || end+int64(len(after)) == c.Size {
					b = m.End
				} else {
					b = max(m.Start, a)
				}
				moved = true
			}
		}
	}
	a, b = pageRuns(window, max(a, 0), b, a >= 0, len(after) > 0)
	var known []pii.Known
	for _, m := range matches {
		if m.Start >= a && m.End <= b {
			known = append(known, pii.Known{Kind: m.Kind, Value: m.Value})
		}
	}
	gate.Restored(ctx, known)
	c.Offset += int64(a - len(before))
	c.Data = []byte(window[a:b])
	c.More = c.Offset+int64(len(c.Data)) < c.Size
}

// pageRuns moves a page's bounds [a, b) in window off the runs of value
// characters they split. Pages tile the file, so nothing is lost: the end
// backs off to the run's start, where the next page starts, or, when
// that would leave the page empty, takes the run whole; a start inside a
// run (an offset not from next_offset) skips to its end, the run being the
// page before's. A run longer than textcut.Bound is cut: a page does not
// drop part of a file. checkStart and checkEnd say whether window holds
// what is around each bound.
func pageRuns(window string, a, b int, checkStart, checkEnd bool) (int, int) {
	if checkStart && textcut.Splits(window, a) {
		if r := textcut.Resume(window, a, nil); r < b && !textcut.Splits(window, r) {
			a = r
		}
	}
	if checkEnd && textcut.Splits(window, b) {
		if e := textcut.Cut(window, b, nil); e > a && !textcut.Splits(window, e) {
			b = e
		} else if e := textcut.Resume(window, b, nil); !textcut.Splits(window, e) {
			b = e
		}
	}
	return a, b
}

func renderRead(out ReadWorkspaceFileOutput) string {
	var b strings.Builder
	if out.Encoding == "base64" {
		fmt.Fprintf(&b, "[binary %s, %d bytes; base64:]\n", out.MIMEType, out.Size)
	}
	b.WriteString(out.Content)
	if out.More {
		if !strings.HasSuffix(out.Content, "\n") {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[bytes %d-%d of %d; read on at offset %d]\n", out.Offset, out.Offset+out.Length, out.Size, out.NextOffset)
	}
	return b.String()
}

func (s *Server) listWorkspaceFiles(ctx context.Context, req *mcp.CallToolRequest, in ListWorkspaceFilesInput) (*mcp.CallToolResult, ListWorkspaceFilesOutput, error) {
	ns := namespaceOf(req)
	if _, err := path.Match(in.Pattern, ""); err != nil {
		return nil, ListWorkspaceFilesOutput{}, fieldError("pattern", "%q is not a valid glob: %v", in.Pattern, err)
	}
	p, err := s.pathArg(ctx, ns, in.Path)
	if err != nil {
		return nil, ListWorkspaceFilesOutput{}, err
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return nil, ListWorkspaceFilesOutput{}, err
	}
	defer ws.Close()
	l, err := ws.List(p, in.Pattern, workspace.DefaultListLimit)
	if err != nil {
		return nil, ListWorkspaceFilesOutput{}, s.wsError(ctx, ns, "path", err)
	}
	out := ListWorkspaceFilesOutput{Files: make([]WorkspaceEntry, 0, len(l.Entries)), Truncated: l.Truncated}
	var b strings.Builder
	usage := ""
	if v, err := s.volume(ns); err == nil {
		if u, err := v.Usage(); err == nil {
			out.Usage, usage = usageOf(u), u.String()
		}
	}
	// The entries are in the structured content and again in the text: as
	// many as fit the answer budget, the rest counted.
	room, used := s.textRoom(req), 0
	for _, e := range l.Entries {
		we := shownEntry(e)
		if room > 0 {
			raw, _ := json.Marshal(we)
			if used += 2*len(raw) + 8; used > room {
				out.Truncated = true
				break
			}
		}
		out.Files = append(out.Files, we)
		switch {
		case we.IsDir:
			fmt.Fprintf(&b, "%s/\n", we.Path)
		case we.Symlink:
			fmt.Fprintf(&b, "%s@\n", we.Path)
		default:
			fmt.Fprintf(&b, "%s\t%d\t%s\n", we.Path, we.Size, we.ModTime)
		}
	}
	if len(out.Files) == 0 {
		b.WriteString("(no files)\n")
	}
	if out.Truncated {
		fmt.Fprintf(&b, "[%d entries listed, to the answer budget or the cap of 1000: give a path or a pattern to see the others]\n", len(out.Files))
	}
	if usage != "" {
		fmt.Fprintf(&b, "[workspace] %s\n", usage)
	}
	return textResult(b.String()), out, nil
}

func (s *Server) deleteWorkspaceFile(ctx context.Context, req *mcp.CallToolRequest, in DeleteWorkspaceFileInput) (*mcp.CallToolResult, DeleteWorkspaceFileOutput, error) {
	ns := namespaceOf(req)
	p, err := s.pathArg(ctx, ns, in.Path)
	if err != nil {
		return nil, DeleteWorkspaceFileOutput{}, err
	}
	ws, err := s.openWorkspace(ns)
	if err != nil {
		return nil, DeleteWorkspaceFileOutput{}, err
	}
	defer ws.Close()
	if err := ws.Delete(p, in.Recursive); err != nil {
		return nil, DeleteWorkspaceFileOutput{}, s.wsError(ctx, ns, "path", err)
	}
	clean, _ := workspace.Clean(p)
	return textResult("deleted " + clean + "\n"), DeleteWorkspaceFileOutput{Deleted: clean}, nil
}

// shownEntry is an entry as the model sees it.
func shownEntry(e workspace.Entry) WorkspaceEntry {
	return WorkspaceEntry{Path: e.Path, Size: e.Size, ModTime: e.ModTime.UTC().Format(time.RFC3339), IsDir: e.IsDir, Symlink: e.Symlink}
}

// maxReportedFiles bounds the files an execution reports, created or
// changed and deleted alike; the rest are counted in files_omitted. The
// answer budget may list fewer (boundAnswer).
const maxReportedFiles = 100

// reportedFile is a file created or changed as the answer lists it.
type reportedFile struct {
	Path string
	Size int64
}

// listFiles fills out.Files and out.FilesDeleted with what the run
// changed, at most maxReportedFiles of them.
func listFiles(out *ExecuteCodeOutput, rep workspace.Report) {
	files, deleted := rep.Files, rep.Deleted
	if len(files) > maxReportedFiles {
		out.FilesOmitted += len(files) - maxReportedFiles
		files = files[:maxReportedFiles]
	}
	if room := maxReportedFiles - len(files); len(deleted) > room {
		out.FilesOmitted += len(deleted) - room
		deleted = deleted[:room]
	}
	out.Files, out.files = make([]string, 0, len(files)), make([]reportedFile, 0, len(files))
	for _, f := range files {
		if f.Path == out.OutputFile {
			continue // the answer's own output file, linked on its own
		}
		out.Files = append(out.Files, f.Path)
		out.files = append(out.files, reportedFile{Path: f.Path, Size: f.Size})
	}
	out.FilesDeleted = append(out.FilesDeleted, deleted...)
	out.filesIncomplete = rep.Incomplete
}

// answerContent is the result's content: the text rendering with a line
// naming the files listed, then a resource link for each file created or
// changed, then the link to the whole output of a cut answer (nil for
// none). A link's URI is file:///workspace/<path>, where the sandbox's code
// sees the file; read_workspace_file reads it by its path.
func answerContent(out *ExecuteCodeOutput, outputLink *mcp.ResourceLink) []mcp.Content {
	text := render(*out)
	content := []mcp.Content{nil}
	for _, f := range out.files {
		size := f.Size
		content = append(content, &mcp.ResourceLink{URI: fileURI(f.Path), Name: f.Path, MIMEType: mime.TypeByExtension(path.Ext(f.Path)), Size: &size})
	}
	if len(out.Files) > 0 {
		text += "[files] " + strings.Join(out.Files, ", ") + "\n"
	}
	if len(out.FilesDeleted) > 0 {
		text += "[deleted] " + strings.Join(out.FilesDeleted, ", ") + "\n"
	}
	if out.FilesOmitted > 0 {
		text += fmt.Sprintf("[files] and %d more%s\n", out.FilesOmitted, filesElsewhere(*out))
	}
	if out.filesIncomplete {
		// Say so rather than let files read as complete.
		text += "[files] the workspace's changes could not all be tracked; files may be incomplete\n"
	}
	content[0] = &mcp.TextContent{Text: text}
	if outputLink != nil {
		content = append(content, outputLink)
	}
	return content
}

// filesElsewhere says where the files an answer leaves out are listed.
func filesElsewhere(out ExecuteCodeOutput) string {
	if out.OutputFile != "" {
		return " (all are listed in " + out.OutputFile + "; list_workspace_files lists the workspace)"
	}
	return " (list_workspace_files lists them)"
}

// fileURI is the URI of a workspace file: its path in the sandbox.
func fileURI(p string) string {
	parts := strings.Split(p, "/")
	for i, part := range parts {
		parts[i] = url.PathEscape(part)
	}
	return "file:///workspace/" + strings.Join(parts, "/")
}

// readPage is read_workspace_file's page when the call gives no limit: as
// much as fits the answer budget, whose content appears twice (in the
// structured content and in the text); 256 KiB without a budget, or for
// code.
func (s *Server) readPage(req *mcp.CallToolRequest) int64 {
	const withoutBudget, least, overhead = 256 << 10, 1 << 10, 1 << 10
	b := s.cfg.Sandbox.AnswerBudget
	if b <= 0 || !toModel(req) {
		return withoutBudget
	}
	return max(least, int64(b/2-overhead))
}
