package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TranscriptID is the document the document scenario moves.
const TranscriptID = "doc-q3-business-review"

// TranscriptBytes is the size of that document: the automatic transcript
// of a two-hour meeting, about 18,000 spoken words, the case Anthropic's
// code-execution article describes ("a 2-hour sales meeting").
const TranscriptBytes = 110_000

// docStore is the state of the docs server. Its methods are safe for
// concurrent use.
type docStore struct {
	mu   sync.Mutex // guards the fields below
	docs map[string]*document
	seq  int
}

type document struct {
	ID        string
	Title     string
	Folder    string
	Owner     string
	Content   string
	Modified  time.Time
	Revisions []Revision
	Comments  []Comment
	Shares    []Permission
}

// DocumentMeta describes a document without its content.
type DocumentMeta struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Folder     string `json:"folder"`
	Owner      string `json:"owner"`
	ModifiedAt string `json:"modified_at"`
	SizeBytes  int    `json:"size_bytes"`
}

// Document is a document with its content, as get_document returns it.
type Document struct {
	DocumentMeta
	Content string `json:"content"`
}

// Revision is one saved version of a document.
type Revision struct {
	Number    int    `json:"revision"`
	Author    string `json:"author"`
	CreatedAt string `json:"created_at"`
	SizeBytes int    `json:"size_bytes"`
}

// Comment is a comment on a document.
type Comment struct {
	ID        string `json:"id"`
	Author    string `json:"author"`
	Text      string `json:"text"`
	Quote     string `json:"quote,omitempty"`
	CreatedAt string `json:"created_at"`
	Resolved  bool   `json:"resolved"`
}

// Permission is one grant of access to a document.
type Permission struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

func newDocStore() *docStore {
	s := &docStore{docs: map[string]*document{}}
	add := func(id, title, folder, owner, content string, age time.Duration) {
		mod := epoch.Add(-age)
		s.docs[id] = &document{ID: id, Title: title, Folder: folder, Owner: owner, Content: content, Modified: mod,
			Revisions: []Revision{{Number: 1, Author: owner, CreatedAt: mod.Format(time.RFC3339), SizeBytes: len(content)}},
			Shares:    []Permission{{Email: emailOf(owner), Role: "owner"}}}
	}
	add(TranscriptID, "Q3 business review: meeting transcript", "/Meetings/2025", "Maria Alvarez", genTranscript(TranscriptBytes), 72*time.Hour)
	add("doc-q3-review-agenda", "Q3 business review: agenda", "/Meetings/2025", "Maria Alvarez",
		"# Agenda\n\n1. Pipeline and renewals\n2. Support backlog\n3. Pricing change\n4. EU data residency\n5. Hiring plan\n", 96*time.Hour)
	add("doc-pricing-faq", "Pricing change: customer FAQ", "/Sales/Enablement", "Raj Patel",
		"# Pricing FAQ\n\nQ: When does the new pricing apply?\nA: At each customer's next renewal after 1 November.\n", 240*time.Hour)
	add("doc-onboarding-checklist", "Enterprise onboarding checklist", "/Customer Success", "Sofia Lindqvist",
		"# Onboarding\n\n- Kickoff call\n- SSO set-up\n- Data import\n- Admin training\n- 30-day review\n", 500*time.Hour)
	add("doc-security-overview", "Security overview for customers", "/Sales/Enablement", "Kenji Nakamura",
		"# Security overview\n\nData is encrypted at rest and in transit. SOC 2 Type II report available on request.\n", 900*time.Hour)
	add("doc-offsite-notes", "Offsite notes, June", "/Meetings/2025", "Daniel Okafor",
		"# Offsite\n\nThemes: focus on mid-market retention; simplify packaging; invest in the partner channel.\n", 2000*time.Hour)
	return s
}

func emailOf(name string) string {
	return strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(name, ". ", "."), " ", ".")) + "@northwind.example"
}

func (d *document) meta() DocumentMeta {
	return DocumentMeta{ID: d.ID, Title: d.Title, Folder: d.Folder, Owner: d.Owner, ModifiedAt: d.Modified.Format(time.RFC3339), SizeBytes: len(d.Content)}
}

// get returns the document, or an error that names the id.
func (s *docStore) get(id string) (*document, error) {
	d, ok := s.docs[id]
	if !ok {
		return nil, fmt.Errorf("no document has id %q (list_documents or search_documents finds ids)", id)
	}
	return d, nil
}

// change records a new revision after an edit.
func (d *document) change(author string) {
	d.Modified = epoch
	d.Revisions = append(d.Revisions, Revision{Number: len(d.Revisions) + 1, Author: author, CreatedAt: epoch.Format(time.RFC3339), SizeBytes: len(d.Content)})
}

type listDocumentsIn struct {
	Folder string `json:"folder,omitempty" jsonschema:"Only documents in this folder, e.g. /Meetings/2025. Subfolders are not included."`
	Owner  string `json:"owner,omitempty" jsonschema:"Only documents owned by this person (full name)."`
	Limit  int    `json:"limit,omitempty" jsonschema:"How many documents to return, 1 to 100. Default 25."`
	Offset int    `json:"offset,omitempty" jsonschema:"How many documents to skip, for paging."`
}

type listDocumentsOut struct {
	Documents []DocumentMeta `json:"documents"`
	Total     int            `json:"total" jsonschema:"How many documents match in all."`
}

type searchDocumentsIn struct {
	Query string `json:"query" jsonschema:"Words to look for in titles and content; all words must appear."`
	Limit int    `json:"limit,omitempty" jsonschema:"How many results, 1 to 50. Default 10."`
}

// SearchHit is one search_documents result.
type SearchHit struct {
	DocumentMeta
	Snippet string `json:"snippet" jsonschema:"Text around the first match."`
}

type searchDocumentsOut struct {
	Results []SearchHit `json:"results"`
}

type docIDIn struct {
	ID string `json:"id" jsonschema:"The document's id, e.g. doc-pricing-faq."`
}

type createDocumentIn struct {
	Title   string `json:"title" jsonschema:"The new document's title."`
	Content string `json:"content" jsonschema:"The body, in Markdown."`
	Folder  string `json:"folder,omitempty" jsonschema:"Folder to create it in; default /."`
}

type updateDocumentIn struct {
	ID      string `json:"id" jsonschema:"The document's id."`
	Content string `json:"content" jsonschema:"The new body, in Markdown; it replaces the old one and adds a revision."`
}

type appendIn struct {
	ID   string `json:"id" jsonschema:"The document's id."`
	Text string `json:"text" jsonschema:"Markdown to add at the end of the document."`
}

type renameIn struct {
	ID    string `json:"id" jsonschema:"The document's id."`
	Title string `json:"title" jsonschema:"The new title."`
}

type moveIn struct {
	ID     string `json:"id" jsonschema:"The document's id."`
	Folder string `json:"folder" jsonschema:"The destination folder, e.g. /Archive. It is created if missing."`
}

type shareIn struct {
	ID      string `json:"id" jsonschema:"The document's id."`
	Email   string `json:"email" jsonschema:"Who to share with."`
	Role    string `json:"role" jsonschema:"reader, commenter or writer."`
	Notify  bool   `json:"notify,omitempty" jsonschema:"Send the person an email about it."`
	Message string `json:"message,omitempty" jsonschema:"A note to include in the email."`
}

type commentIn struct {
	ID    string `json:"id" jsonschema:"The document's id."`
	Text  string `json:"text" jsonschema:"The comment."`
	Quote string `json:"quote,omitempty" jsonschema:"The passage of the document the comment is about; it must appear in the document."`
}

type exportIn struct {
	ID     string `json:"id" jsonschema:"The document's id."`
	Format string `json:"format" jsonschema:"pdf, docx, html or txt."`
}

type exportOut struct {
	ID          string `json:"id"`
	Format      string `json:"format"`
	DownloadURL string `json:"download_url" jsonschema:"Valid for one hour."`
	SizeBytes   int    `json:"size_bytes"`
}

type foldersOut struct {
	Folders []folderInfo `json:"folders"`
}

type folderInfo struct {
	Path      string `json:"path"`
	Documents int    `json:"document_count"`
}

type deletedOut struct {
	Deleted string `json:"deleted"`
}

func docsServer(s *docStore) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Title: "Team documents", Version: "2.3.0"},
		&mcp.ServerOptions{Instructions: "The team's shared documents (meeting notes, transcripts, plans, FAQs). Find documents with search_documents or list_documents, then read them with get_document."})
	const me = "Bench Agent"

	mcp.AddTool(srv, &mcp.Tool{Name: "list_documents", Title: "List documents",
		Description: "List documents the user can access, newest first, without their content. Filter by folder or owner; page with limit and offset."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in listDocumentsIn) (*mcp.CallToolResult, listDocumentsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			var all []DocumentMeta
			for _, d := range s.docs {
				if (in.Folder == "" || d.Folder == in.Folder) && (in.Owner == "" || d.Owner == in.Owner) {
					all = append(all, d.meta())
				}
			}
			slices.SortFunc(all, func(a, b DocumentMeta) int { return strings.Compare(b.ModifiedAt+b.ID, a.ModifiedAt+a.ID) })
			page, err := paged(all, in.Limit, in.Offset, 25, 100)
			return nil, listDocumentsOut{Documents: page, Total: len(all)}, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "search_documents", Title: "Search documents",
		Description: "Full-text search over document titles and content. Returns matching documents with a snippet around the first match; use get_document for the full text."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in searchDocumentsIn) (*mcp.CallToolResult, searchDocumentsOut, error) {
			words := strings.Fields(strings.ToLower(in.Query))
			if len(words) == 0 {
				return nil, searchDocumentsOut{}, fmt.Errorf("query: give at least one word")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			out := searchDocumentsOut{Results: []SearchHit{}}
			for _, d := range s.docs {
				full := d.Title + "\n" + d.Content
				text := strings.ToLower(full)
				match := true
				for _, w := range words {
					match = match && strings.Contains(text, w)
				}
				if match {
					// Lower-casing can change byte offsets outside ASCII:
					// clamp to the original.
					i := min(len(full), max(0, strings.Index(text, words[0])-60))
					snippet := full[i:min(len(full), i+160)]
					out.Results = append(out.Results, SearchHit{DocumentMeta: d.meta(), Snippet: strings.ToValidUTF8(snippet, "")})
				}
			}
			slices.SortFunc(out.Results, func(a, b SearchHit) int { return strings.Compare(a.ID, b.ID) })
			var err error
			out.Results, err = paged(out.Results, in.Limit, 0, 10, 50)
			return nil, out, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_document", Title: "Read a document",
		Description: "Read one document: its metadata and its full content as Markdown. Large documents are returned whole."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in docIDIn) (*mcp.CallToolResult, Document, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, Document{}, err
			}
			return nil, Document{DocumentMeta: d.meta(), Content: d.Content}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_document_metadata", Title: "Document metadata",
		Description: "A document's title, folder, owner, size and last modification, without its content."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in docIDIn) (*mcp.CallToolResult, DocumentMeta, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, DocumentMeta{}, err
			}
			return nil, d.meta(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create_document", Title: "Create a document",
		Description: "Create a new document with a title and Markdown content. Returns its metadata, including the new id."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in createDocumentIn) (*mcp.CallToolResult, DocumentMeta, error) {
			if strings.TrimSpace(in.Title) == "" {
				return nil, DocumentMeta{}, fmt.Errorf("title: must not be empty")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.seq++
			folder := in.Folder
			if folder == "" {
				folder = "/"
			}
			d := &document{ID: fmt.Sprintf("doc-new-%d", s.seq), Title: in.Title, Folder: folder, Owner: me, Content: in.Content,
				Shares: []Permission{{Email: emailOf(me), Role: "owner"}}}
			d.change(me)
			s.docs[d.ID] = d
			return nil, d.meta(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "update_document", Title: "Replace a document's content",
		Description: "Replace the whole content of a document. The previous content stays available as a revision."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in updateDocumentIn) (*mcp.CallToolResult, DocumentMeta, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, DocumentMeta{}, err
			}
			d.Content = in.Content
			d.change(me)
			return nil, d.meta(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "append_to_document", Title: "Append to a document",
		Description: "Add Markdown at the end of a document, after a blank line. Useful for running notes and logs."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in appendIn) (*mcp.CallToolResult, DocumentMeta, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, DocumentMeta{}, err
			}
			d.Content = strings.TrimRight(d.Content, "\n") + "\n\n" + in.Text
			d.change(me)
			return nil, d.meta(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "rename_document", Title: "Rename a document",
		Description: "Change a document's title. Its id and links to it stay the same."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in renameIn) (*mcp.CallToolResult, DocumentMeta, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, DocumentMeta{}, err
			}
			d.Title = in.Title
			d.change(me)
			return nil, d.meta(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "move_document", Title: "Move a document",
		Description: "Move a document to another folder, creating the folder if it does not exist. Sharing settings are kept."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in moveIn) (*mcp.CallToolResult, DocumentMeta, error) {
			if !strings.HasPrefix(in.Folder, "/") {
				return nil, DocumentMeta{}, fmt.Errorf("folder: must start with /")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, DocumentMeta{}, err
			}
			d.Folder = in.Folder
			return nil, d.meta(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_document", Title: "Delete a document",
		Description: "Move a document to the trash. It can be restored from the web interface for 30 days."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in docIDIn) (*mcp.CallToolResult, deletedOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, err := s.get(in.ID); err != nil {
				return nil, deletedOut{}, err
			}
			delete(s.docs, in.ID)
			return nil, deletedOut{Deleted: in.ID}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_folders", Title: "List folders",
		Description: "Every folder that holds documents, with how many documents each holds."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, foldersOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			count := map[string]int{}
			for _, d := range s.docs {
				count[d.Folder]++
			}
			out := foldersOut{Folders: []folderInfo{}}
			for p, n := range count {
				out.Folders = append(out.Folders, folderInfo{Path: p, Documents: n})
			}
			slices.SortFunc(out.Folders, func(a, b folderInfo) int { return strings.Compare(a.Path, b.Path) })
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "share_document", Title: "Share a document",
		Description: "Give a person access to a document as reader, commenter or writer, optionally notifying them by email with a message."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in shareIn) (*mcp.CallToolResult, permissionsOut, error) {
			if !slices.Contains([]string{"reader", "commenter", "writer"}, in.Role) {
				return nil, permissionsOut{}, fmt.Errorf("role: must be reader, commenter or writer, not %q", in.Role)
			}
			if !strings.Contains(in.Email, "@") {
				return nil, permissionsOut{}, fmt.Errorf("email: %q is not an email address", in.Email)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, permissionsOut{}, err
			}
			d.Shares = append(d.Shares, Permission{Email: in.Email, Role: in.Role})
			return nil, permissionsOut{Permissions: d.Shares}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_permissions", Title: "Who has access",
		Description: "Everyone who has access to a document, with their role."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in docIDIn) (*mcp.CallToolResult, permissionsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, permissionsOut{}, err
			}
			return nil, permissionsOut{Permissions: d.Shares}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_comment", Title: "Comment on a document",
		Description: "Add a comment to a document, optionally anchored to a quoted passage. Mentioned people (@name) are notified."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in commentIn) (*mcp.CallToolResult, Comment, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, Comment{}, err
			}
			if in.Quote != "" && !strings.Contains(d.Content, in.Quote) {
				return nil, Comment{}, fmt.Errorf("quote: the passage does not appear in the document")
			}
			c := Comment{ID: fmt.Sprintf("c-%d", len(d.Comments)+1), Author: me, Text: in.Text, Quote: in.Quote, CreatedAt: epoch.Format(time.RFC3339)}
			d.Comments = append(d.Comments, c)
			return nil, c, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_comments", Title: "List comments",
		Description: "The comments on a document, oldest first, including resolved ones."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in docIDIn) (*mcp.CallToolResult, commentsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, commentsOut{}, err
			}
			return nil, commentsOut{Comments: append([]Comment{}, d.Comments...)}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_revisions", Title: "Revision history",
		Description: "The saved revisions of a document, oldest first, with author and size."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in docIDIn) (*mcp.CallToolResult, revisionsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, revisionsOut{}, err
			}
			return nil, revisionsOut{Revisions: d.Revisions}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "export_document", Title: "Export a document",
		Description: "Export a document as PDF, Word (docx), HTML or plain text. Returns a download link valid for one hour."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in exportIn) (*mcp.CallToolResult, exportOut, error) {
			if !slices.Contains([]string{"pdf", "docx", "html", "txt"}, in.Format) {
				return nil, exportOut{}, fmt.Errorf("format: must be pdf, docx, html or txt, not %q", in.Format)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			d, err := s.get(in.ID)
			if err != nil {
				return nil, exportOut{}, err
			}
			return nil, exportOut{ID: d.ID, Format: in.Format, DownloadURL: "https://docs.northwind.example/export/" + d.ID + "." + in.Format, SizeBytes: len(d.Content)}, nil
		})
	return srv
}

type permissionsOut struct {
	Permissions []Permission `json:"permissions"`
}

type commentsOut struct {
	Comments []Comment `json:"comments"`
}

type revisionsOut struct {
	Revisions []Revision `json:"revisions"`
}

// paged returns one page of list: limit items (def when zero, at most max)
// after skipping offset.
func paged[T any](list []T, limit, offset, def, most int) ([]T, error) {
	if limit == 0 {
		limit = def
	}
	if limit < 1 || limit > most {
		return nil, fmt.Errorf("limit: must be between 1 and %d, not %d", most, limit)
	}
	if offset < 0 {
		return nil, fmt.Errorf("offset: must not be negative")
	}
	if offset >= len(list) {
		return []T{}, nil
	}
	return list[offset:min(len(list), offset+limit)], nil
}
