package bench

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fileStore is the state of the storage server. Its methods are safe for
// concurrent use.
type fileStore struct {
	mu      sync.Mutex // guards the fields below
	files   map[string]*storedFile
	folders map[string]bool
	links   int
}

type storedFile struct {
	versions []string // content, oldest first
	tags     []string
	created  time.Time
	modified time.Time
}

// FileInfo describes a stored file.
type FileInfo struct {
	Path       string   `json:"path"`
	SizeBytes  int      `json:"size_bytes"`
	Version    int      `json:"version"`
	Tags       []string `json:"tags"`
	CreatedAt  string   `json:"created_at"`
	ModifiedAt string   `json:"modified_at"`
}

func newFileStore() *fileStore {
	s := &fileStore{files: map[string]*storedFile{}, folders: map[string]bool{"/": true}}
	for _, f := range []struct{ path, content string }{
		{"/contracts/acme-msa-2024.pdf.txt", "Master services agreement between Northwind and Acme Inc. Term: 36 months."},
		{"/meetings/2025-06-offsite-summary.md", "# Offsite summary\n\nRetention, packaging, partners.\n"},
		{"/sales/price-list-2025.csv", "plan,price_per_seat_usd\nstarter,12\npro,29\nteam,45\nenterprise,79\n"},
		{"/support/escalation-policy.md", "# Escalation policy\n\nUrgent tickets of strategic accounts page the on-call manager.\n"},
	} {
		s.put(f.path, f.content, nil, epoch.Add(-30*24*time.Hour))
	}
	return s
}

// cleanPath validates a path given by a caller and returns it absolute and
// clean.
func cleanPath(field, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", fmt.Errorf("%s: must not be empty", field)
	}
	c := path.Clean("/" + p)
	if c == "/" {
		return "", fmt.Errorf("%s: %q names the root, not a file", field, p)
	}
	return c, nil
}

// put stores content at p as a new version. The caller holds s.mu.
func (s *fileStore) put(p, content string, tags []string, at time.Time) *storedFile {
	f, ok := s.files[p]
	if !ok {
		f = &storedFile{created: at, tags: []string{}}
		s.files[p] = f
	}
	f.versions = append(f.versions, content)
	if tags != nil {
		f.tags = tags
	}
	f.modified = at
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		s.folders[dir] = true
		if dir == "/" {
			break
		}
	}
	return f
}

func (f *storedFile) info(p string) FileInfo {
	return FileInfo{Path: p, SizeBytes: len(f.versions[len(f.versions)-1]), Version: len(f.versions), Tags: f.tags,
		CreatedAt: f.created.Format(time.RFC3339), ModifiedAt: f.modified.Format(time.RFC3339)}
}

func (s *fileStore) get(field, p string) (string, *storedFile, error) {
	c, err := cleanPath(field, p)
	if err != nil {
		return "", nil, err
	}
	f, ok := s.files[c]
	if !ok {
		return "", nil, fmt.Errorf("%s: no file at %s", field, c)
	}
	return c, f, nil
}

// content returns the newest version of the file at p.
func (s *fileStore) content(p string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[path.Clean("/"+p)]
	if !ok {
		return "", false
	}
	return f.versions[len(f.versions)-1], true
}

type saveDocumentIn struct {
	Name    string   `json:"name" jsonschema:"Path of the file to write, e.g. meetings/2025-09-12-q3-review.md. Folders are created as needed."`
	Content string   `json:"content" jsonschema:"The whole text of the document."`
	Tags    []string `json:"tags,omitempty" jsonschema:"Labels to attach, e.g. [\"meeting\", \"q3\"]."`
}

type readFileIn struct {
	Path   string `json:"path" jsonschema:"Path of the file."`
	Offset int    `json:"offset,omitempty" jsonschema:"Byte offset to start reading at."`
	Length int    `json:"length,omitempty" jsonschema:"Bytes to read; default the rest of the file."`
}

type readFileOut struct {
	FileInfo
	Content string `json:"content"`
}

type listFilesIn struct {
	Folder    string `json:"folder,omitempty" jsonschema:"Folder to list; default /."`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"Include files in subfolders."`
	Limit     int    `json:"limit,omitempty" jsonschema:"How many files, 1 to 1000. Default 100."`
	Offset    int    `json:"offset,omitempty" jsonschema:"Files to skip, for paging."`
}

type filesOut struct {
	Files []FileInfo `json:"files"`
	Total int        `json:"total"`
}

type pathIn struct {
	Path string `json:"path" jsonschema:"Path of the file, e.g. /meetings/notes.md."`
}

type copyIn struct {
	Source      string `json:"source" jsonschema:"Path of the existing file."`
	Destination string `json:"destination" jsonschema:"Path to copy or move it to. An existing file there gets a new version."`
}

type folderIn struct {
	Path string `json:"path" jsonschema:"Folder to create, e.g. /meetings/2025."`
}

type versionsOut struct {
	Path     string        `json:"path"`
	Versions []versionInfo `json:"versions"`
}

type versionInfo struct {
	Version   int `json:"version"`
	SizeBytes int `json:"size_bytes"`
}

type restoreIn struct {
	Path    string `json:"path" jsonschema:"Path of the file."`
	Version int    `json:"version" jsonschema:"The version to restore; it becomes the newest version."`
}

type tagsIn struct {
	Path string   `json:"path" jsonschema:"Path of the file."`
	Tags []string `json:"tags" jsonschema:"The new labels; they replace the old ones."`
}

type searchFilesIn struct {
	Query string `json:"query,omitempty" jsonschema:"Words that must appear in the path or the content."`
	Tag   string `json:"tag,omitempty" jsonschema:"Only files with this label."`
}

type shareLinkIn struct {
	Path          string `json:"path" jsonschema:"Path of the file."`
	ExpiresInDays int    `json:"expires_in_days,omitempty" jsonschema:"Days until the link stops working, 1 to 90. Default 7."`
	Password      string `json:"password,omitempty" jsonschema:"Require this password to open the link."`
}

type shareLinkOut struct {
	URL       string `json:"url"`
	ExpiresAt string `json:"expires_at"`
	Protected bool   `json:"password_protected"`
}

type quotaOut struct {
	UsedBytes  int `json:"used_bytes"`
	QuotaBytes int `json:"quota_bytes"`
	Files      int `json:"file_count"`
}

func storageServer(s *fileStore) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "storage", Title: "Company file storage", Version: "1.12.4"},
		&mcp.ServerOptions{Instructions: "Versioned file storage shared by the sales and support teams. Paths are absolute (/folder/file); saving to an existing path adds a version."})

	mcp.AddTool(srv, &mcp.Tool{Name: "save_document", Title: "Save a document",
		Description: "Save text as a file in company storage. Creates missing folders; if the file exists, the content becomes its newest version. Returns the stored file's path, size and version."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in saveDocumentIn) (*mcp.CallToolResult, FileInfo, error) {
			p, err := cleanPath("name", in.Name)
			if err != nil {
				return nil, FileInfo{}, err
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			return nil, s.put(p, in.Content, in.Tags, epoch).info(p), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Title: "Read a file",
		Description: "Read a stored file's newest version as text, whole or a byte range of it."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in readFileIn) (*mcp.CallToolResult, readFileOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			p, f, err := s.get("path", in.Path)
			if err != nil {
				return nil, readFileOut{}, err
			}
			text := f.versions[len(f.versions)-1]
			if in.Offset < 0 || in.Offset > len(text) || in.Length < 0 {
				return nil, readFileOut{}, fmt.Errorf("offset: %d is outside the file (%d bytes)", in.Offset, len(text))
			}
			end := len(text)
			if in.Length > 0 {
				end = min(end, in.Offset+in.Length)
			}
			return nil, readFileOut{FileInfo: f.info(p), Content: strings.ToValidUTF8(text[in.Offset:end], "")}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_files", Title: "List files",
		Description: "List the files in a folder, optionally with its subfolders, sorted by path."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in listFilesIn) (*mcp.CallToolResult, filesOut, error) {
			dir := path.Clean("/" + in.Folder)
			s.mu.Lock()
			defer s.mu.Unlock()
			var all []FileInfo
			for p, f := range s.files {
				if path.Dir(p) == dir || (in.Recursive && (dir == "/" || strings.HasPrefix(p, dir+"/"))) {
					all = append(all, f.info(p))
				}
			}
			slices.SortFunc(all, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
			page, err := paged(all, in.Limit, in.Offset, 100, 1000)
			return nil, filesOut{Files: page, Total: len(all)}, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_file_info", Title: "File information",
		Description: "A file's size, version number, labels and times, without its content."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, FileInfo, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			p, f, err := s.get("path", in.Path)
			if err != nil {
				return nil, FileInfo{}, err
			}
			return nil, f.info(p), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_file", Title: "Delete a file",
		Description: "Delete a file and all its versions. This cannot be undone."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, deletedOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			p, _, err := s.get("path", in.Path)
			if err != nil {
				return nil, deletedOut{}, err
			}
			delete(s.files, p)
			return nil, deletedOut{Deleted: p}, nil
		})
	copyOrMove := func(move bool) func(context.Context, *mcp.CallToolRequest, copyIn) (*mcp.CallToolResult, FileInfo, error) {
		return func(ctx context.Context, _ *mcp.CallToolRequest, in copyIn) (*mcp.CallToolResult, FileInfo, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			src, f, err := s.get("source", in.Source)
			if err != nil {
				return nil, FileInfo{}, err
			}
			dst, err := cleanPath("destination", in.Destination)
			if err != nil {
				return nil, FileInfo{}, err
			}
			if dst == src {
				return nil, FileInfo{}, fmt.Errorf("destination: is the source")
			}
			g := s.put(dst, f.versions[len(f.versions)-1], slices.Clone(f.tags), epoch)
			if move {
				delete(s.files, src)
			}
			return nil, g.info(dst), nil
		}
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "copy_file", Title: "Copy a file",
		Description: "Copy a file's newest version to another path."}, copyOrMove(false))
	mcp.AddTool(srv, &mcp.Tool{Name: "move_file", Title: "Move or rename a file",
		Description: "Move a file to another path (this is also how to rename one). Only the newest version moves."}, copyOrMove(true))
	mcp.AddTool(srv, &mcp.Tool{Name: "create_folder", Title: "Create a folder",
		Description: "Create a folder and any missing parents. Creating an existing folder is not an error."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in folderIn) (*mcp.CallToolResult, folderInfo, error) {
			p, err := cleanPath("path", in.Path)
			if err != nil {
				return nil, folderInfo{}, err
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for dir := p; dir != "/"; dir = path.Dir(dir) {
				s.folders[dir] = true
			}
			n := 0
			for q := range s.files {
				if path.Dir(q) == p {
					n++
				}
			}
			return nil, folderInfo{Path: p, Documents: n}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_versions", Title: "List versions",
		Description: "Every stored version of a file, oldest first, with its size."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, versionsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			p, f, err := s.get("path", in.Path)
			if err != nil {
				return nil, versionsOut{}, err
			}
			out := versionsOut{Path: p}
			for i, v := range f.versions {
				out.Versions = append(out.Versions, versionInfo{Version: i + 1, SizeBytes: len(v)})
			}
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "restore_version", Title: "Restore a version",
		Description: "Make an earlier version of a file its newest version again. Later versions are kept."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in restoreIn) (*mcp.CallToolResult, FileInfo, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			p, f, err := s.get("path", in.Path)
			if err != nil {
				return nil, FileInfo{}, err
			}
			if in.Version < 1 || in.Version > len(f.versions) {
				return nil, FileInfo{}, fmt.Errorf("version: the file has versions 1 to %d", len(f.versions))
			}
			return nil, s.put(p, f.versions[in.Version-1], nil, epoch).info(p), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "set_tags", Title: "Label a file",
		Description: "Replace a file's labels. Labels are used by search_files and by retention rules."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in tagsIn) (*mcp.CallToolResult, FileInfo, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			p, f, err := s.get("path", in.Path)
			if err != nil {
				return nil, FileInfo{}, err
			}
			f.tags = append([]string{}, in.Tags...)
			return nil, f.info(p), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "search_files", Title: "Search files",
		Description: "Find files whose path or content contains all the given words, or that carry a label."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in searchFilesIn) (*mcp.CallToolResult, filesOut, error) {
			words := strings.Fields(strings.ToLower(in.Query))
			if len(words) == 0 && in.Tag == "" {
				return nil, filesOut{}, fmt.Errorf("query: give words to look for, or a tag")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			out := filesOut{Files: []FileInfo{}}
			for p, f := range s.files {
				text := strings.ToLower(p + "\n" + f.versions[len(f.versions)-1])
				ok := in.Tag == "" || slices.Contains(f.tags, in.Tag)
				for _, w := range words {
					ok = ok && strings.Contains(text, w)
				}
				if ok {
					out.Files = append(out.Files, f.info(p))
				}
			}
			slices.SortFunc(out.Files, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
			out.Total = len(out.Files)
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create_share_link", Title: "Share link",
		Description: "Create a link that lets anyone with it download the file, optionally password-protected, expiring after some days."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in shareLinkIn) (*mcp.CallToolResult, shareLinkOut, error) {
			days := in.ExpiresInDays
			if days == 0 {
				days = 7
			}
			if days < 1 || days > 90 {
				return nil, shareLinkOut{}, fmt.Errorf("expires_in_days: must be between 1 and 90, not %d", days)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, _, err := s.get("path", in.Path); err != nil {
				return nil, shareLinkOut{}, err
			}
			s.links++
			return nil, shareLinkOut{URL: fmt.Sprintf("https://files.northwind.example/s/%06x", 0x5a17+s.links*7919),
				ExpiresAt: epoch.AddDate(0, 0, days).Format(time.RFC3339), Protected: in.Password != ""}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_storage_quota", Title: "Storage quota",
		Description: "How much of the team's storage quota is used, in bytes, and how many files there are."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, quotaOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			out := quotaOut{QuotaBytes: 100 << 30, Files: len(s.files)}
			for _, f := range s.files {
				for _, v := range f.versions {
					out.UsedBytes += len(v)
				}
			}
			return nil, out, nil
		})
	return srv
}
