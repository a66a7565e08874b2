package bench

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CustomersSheet names the table the filter scenario reads: spreadsheet
// CustomersSpreadsheet, sheet CustomersSheet, a header row and 10,000
// customers.
const (
	CustomersSpreadsheet = "ss-customers-2025"
	CustomersSheet       = "Customers"
)

// sheetStore is the state of the sheets server. Its methods are safe for
// concurrent use.
type sheetStore struct {
	mu     sync.Mutex // guards the fields below
	books  map[string]*spreadsheet
	seq    int
	shares map[string][]Permission
}

type spreadsheet struct {
	ID     string
	Title  string
	Sheets []*sheet
}

type sheet struct {
	Title string
	Rows  [][]any
}

func newSheetStore() *sheetStore {
	s := &sheetStore{books: map[string]*spreadsheet{}, shares: map[string][]Permission{}}
	rows := [][]any{anyRow(customerColumns)}
	for _, c := range genCustomers() {
		rows = append(rows, c.values())
	}
	s.books[CustomersSpreadsheet] = &spreadsheet{ID: CustomersSpreadsheet, Title: "Customers 2025 (billing export)", Sheets: []*sheet{
		{Title: CustomersSheet, Rows: rows},
		{Title: "Plans", Rows: [][]any{{"plan", "price_per_seat_usd"}, {"free", 0}, {"starter", 12}, {"pro", 29}, {"team", 45}, {"enterprise", 79}}},
	}}
	s.books["ss-marketing-budget"] = &spreadsheet{ID: "ss-marketing-budget", Title: "Marketing budget FY25", Sheets: []*sheet{
		{Title: "Budget", Rows: [][]any{{"quarter", "channel", "budget_usd"}, {"Q3", "events", 120000}, {"Q3", "paid search", 85000}, {"Q4", "events", 90000}}},
	}}
	return s
}

func anyRow(cols []string) []any {
	out := make([]any, len(cols))
	for i, c := range cols {
		out[i] = c
	}
	return out
}

func (s *sheetStore) book(id string) (*spreadsheet, error) {
	b, ok := s.books[id]
	if !ok {
		return nil, fmt.Errorf("spreadsheet_id: no spreadsheet has id %q (list_spreadsheets finds ids)", id)
	}
	return b, nil
}

func (b *spreadsheet) sheet(title string) (*sheet, error) {
	for _, sh := range b.Sheets {
		if sh.Title == title {
			return sh, nil
		}
	}
	return nil, fmt.Errorf("sheet: spreadsheet %s has no sheet %q", b.ID, title)
}

func (sh *sheet) width() int {
	w := 0
	for _, r := range sh.Rows {
		w = max(w, len(r))
	}
	return w
}

// cellRange is a rectangle of cells, zero-based, end exclusive.
type cellRange struct{ r0, c0, r1, c1 int }

var a1 = regexp.MustCompile(`^([A-Z]{1,3})([1-9][0-9]{0,6}):([A-Z]{1,3})([1-9][0-9]{0,6})$`)

// parseRange reads an A1 range such as "A1:K100"; "" means the whole sheet.
// locate finds a range of a sheet of a spreadsheet; the caller holds s.mu.
func (s *sheetStore) locate(id, title, rng string) (*spreadsheet, *sheet, cellRange, error) {
	b, err := s.book(id)
	if err != nil {
		return nil, nil, cellRange{}, err
	}
	sh, err := b.sheet(title)
	if err != nil {
		return nil, nil, cellRange{}, err
	}
	cr, err := parseRange(rng, sh)
	if err != nil {
		return nil, nil, cellRange{}, err
	}
	return b, sh, cr, nil
}

func parseRange(r string, sh *sheet) (cellRange, error) {
	if r == "" {
		return cellRange{0, 0, len(sh.Rows), sh.width()}, nil
	}
	m := a1.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(r)))
	if m == nil {
		return cellRange{}, fmt.Errorf("range: %q is not an A1 range like A1:K100", r)
	}
	col := func(s string) int {
		n := 0
		for _, ch := range s {
			n = n*26 + int(ch-'A'+1)
		}
		return n - 1
	}
	r0, _ := strconv.Atoi(m[2])
	r1, _ := strconv.Atoi(m[4])
	out := cellRange{r0 - 1, col(m[1]), r1, col(m[3]) + 1}
	if out.r1 <= out.r0 || out.c1 <= out.c0 {
		return cellRange{}, fmt.Errorf("range: %q ends before it starts", r)
	}
	return out, nil
}

func colName(c int) string {
	s := ""
	for c++; c > 0; c = (c - 1) / 26 {
		s = string(rune('A'+(c-1)%26)) + s
	}
	return s
}

func (cr cellRange) String() string {
	return fmt.Sprintf("%s%d:%s%d", colName(cr.c0), cr.r0+1, colName(cr.c1-1), cr.r1)
}

type spreadsheetInfo struct {
	ID     string      `json:"spreadsheet_id"`
	Title  string      `json:"title"`
	Sheets []sheetInfo `json:"sheets"`
}

type sheetInfo struct {
	Title   string `json:"title"`
	Rows    int    `json:"row_count"`
	Columns int    `json:"column_count"`
}

func (b *spreadsheet) info() spreadsheetInfo {
	out := spreadsheetInfo{ID: b.ID, Title: b.Title, Sheets: []sheetInfo{}}
	for _, sh := range b.Sheets {
		out.Sheets = append(out.Sheets, sheetInfo{Title: sh.Title, Rows: len(sh.Rows), Columns: sh.width()})
	}
	return out
}

type listSpreadsheetsIn struct {
	Query string `json:"query,omitempty" jsonschema:"Only spreadsheets whose title contains these words."`
}

type spreadsheetsOut struct {
	Spreadsheets []spreadsheetInfo `json:"spreadsheets"`
}

type bookIn struct {
	SpreadsheetID string `json:"spreadsheet_id" jsonschema:"The spreadsheet's id, e.g. ss-marketing-budget."`
}

type readSheetIn struct {
	SpreadsheetID string `json:"spreadsheet_id" jsonschema:"The spreadsheet's id."`
	Sheet         string `json:"sheet" jsonschema:"The sheet (tab) title, e.g. Customers."`
	Range         string `json:"range,omitempty" jsonschema:"Cells to read in A1 notation, e.g. A1:D50. Default: the whole sheet."`
}

// SheetValues are the cells of a range, row by row, as read_sheet returns
// them: strings and numbers, the first row usually the header.
type SheetValues struct {
	SpreadsheetID string  `json:"spreadsheet_id"`
	Sheet         string  `json:"sheet"`
	Range         string  `json:"range"`
	Values        [][]any `json:"values"`
}

type appendRowsIn struct {
	SpreadsheetID string  `json:"spreadsheet_id" jsonschema:"The spreadsheet's id."`
	Sheet         string  `json:"sheet" jsonschema:"The sheet title."`
	Values        [][]any `json:"values" jsonschema:"Rows to add after the last row, each a list of cell values."`
}

type updateCellsIn struct {
	SpreadsheetID string  `json:"spreadsheet_id" jsonschema:"The spreadsheet's id."`
	Sheet         string  `json:"sheet" jsonschema:"The sheet title."`
	Range         string  `json:"range" jsonschema:"Top-left-anchored range to write, in A1 notation, e.g. B2:C3."`
	Values        [][]any `json:"values" jsonschema:"The new values, row by row; the shape must fit the range."`
}

type clearRangeIn struct {
	SpreadsheetID string `json:"spreadsheet_id" jsonschema:"The spreadsheet's id."`
	Sheet         string `json:"sheet" jsonschema:"The sheet title."`
	Range         string `json:"range" jsonschema:"Cells to empty, in A1 notation."`
}

type updatedOut struct {
	SpreadsheetID string `json:"spreadsheet_id"`
	Sheet         string `json:"sheet"`
	UpdatedRange  string `json:"updated_range"`
	UpdatedCells  int    `json:"updated_cells"`
}

type createSpreadsheetIn struct {
	Title  string   `json:"title" jsonschema:"The new spreadsheet's title."`
	Sheets []string `json:"sheets,omitempty" jsonschema:"Titles of the sheets to create; default one sheet named Sheet1."`
}

type sheetTitleIn struct {
	SpreadsheetID string `json:"spreadsheet_id" jsonschema:"The spreadsheet's id."`
	Title         string `json:"title" jsonschema:"The sheet title."`
}

type renameSheetIn struct {
	SpreadsheetID string `json:"spreadsheet_id" jsonschema:"The spreadsheet's id."`
	Sheet         string `json:"sheet" jsonschema:"The sheet's current title."`
	NewTitle      string `json:"new_title" jsonschema:"Its new title."`
}

type findReplaceIn struct {
	SpreadsheetID string `json:"spreadsheet_id" jsonschema:"The spreadsheet's id."`
	Sheet         string `json:"sheet" jsonschema:"The sheet title."`
	Find          string `json:"find" jsonschema:"Text to look for in text cells (exact, case-sensitive)."`
	Replace       string `json:"replace" jsonschema:"Text to put in its place."`
}

type findReplaceOut struct {
	Replaced int `json:"occurrences_replaced"`
}

type shareSheetIn struct {
	SpreadsheetID string `json:"spreadsheet_id" jsonschema:"The spreadsheet's id."`
	Email         string `json:"email" jsonschema:"Who to share with."`
	Role          string `json:"role" jsonschema:"reader, commenter or writer."`
}

func sheetsServer(s *sheetStore) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "sheets", Title: "Spreadsheets", Version: "0.9.1"},
		&mcp.ServerOptions{Instructions: "Read and edit the company's spreadsheets. Cells are addressed in A1 notation; values come back row by row."})

	mcp.AddTool(srv, &mcp.Tool{Name: "list_spreadsheets", Title: "List spreadsheets",
		Description: "List the spreadsheets the user can open, with their sheets and sizes."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in listSpreadsheetsIn) (*mcp.CallToolResult, spreadsheetsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			out := spreadsheetsOut{Spreadsheets: []spreadsheetInfo{}}
			for _, b := range s.books {
				if strings.Contains(strings.ToLower(b.Title), strings.ToLower(in.Query)) {
					out.Spreadsheets = append(out.Spreadsheets, b.info())
				}
			}
			slices.SortFunc(out.Spreadsheets, func(a, b spreadsheetInfo) int { return strings.Compare(a.ID, b.ID) })
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_spreadsheet", Title: "Spreadsheet details",
		Description: "A spreadsheet's title and its sheets, with row and column counts, without the cells."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in bookIn) (*mcp.CallToolResult, spreadsheetInfo, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			b, err := s.book(in.SpreadsheetID)
			if err != nil {
				return nil, spreadsheetInfo{}, err
			}
			return nil, b.info(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_sheet", Title: "Read cells",
		Description: "Read the values of a sheet, or of a range of it in A1 notation, row by row. Without a range, returns every row of the sheet, header first."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in readSheetIn) (*mcp.CallToolResult, SheetValues, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			b, err := s.book(in.SpreadsheetID)
			if err != nil {
				return nil, SheetValues{}, err
			}
			sh, err := b.sheet(in.Sheet)
			if err != nil {
				return nil, SheetValues{}, err
			}
			cr, err := parseRange(in.Range, sh)
			if err != nil {
				return nil, SheetValues{}, err
			}
			out := SheetValues{SpreadsheetID: b.ID, Sheet: sh.Title, Range: cr.String(), Values: [][]any{}}
			for r := cr.r0; r < min(cr.r1, len(sh.Rows)); r++ {
				row := sh.Rows[r]
				out.Values = append(out.Values, slices.Clone(row[min(cr.c0, len(row)):min(cr.c1, len(row))]))
			}
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "append_rows", Title: "Append rows",
		Description: "Add rows after the last non-empty row of a sheet."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in appendRowsIn) (*mcp.CallToolResult, updatedOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			b, err := s.book(in.SpreadsheetID)
			if err != nil {
				return nil, updatedOut{}, err
			}
			sh, err := b.sheet(in.Sheet)
			if err != nil {
				return nil, updatedOut{}, err
			}
			first := len(sh.Rows)
			cells, width := 0, 1
			for _, row := range in.Values {
				sh.Rows = append(sh.Rows, slices.Clone(row))
				cells += len(row)
				width = max(width, len(row))
			}
			cr := cellRange{first, 0, len(sh.Rows), width}
			return nil, updatedOut{SpreadsheetID: b.ID, Sheet: sh.Title, UpdatedRange: cr.String(), UpdatedCells: cells}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "update_cells", Title: "Write cells",
		Description: "Overwrite the cells of a range with new values. Rows and columns are added as needed."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in updateCellsIn) (*mcp.CallToolResult, updatedOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			b, sh, cr, err := s.locate(in.SpreadsheetID, in.Sheet, in.Range)
			if err != nil {
				return nil, updatedOut{}, err
			}
			if len(in.Values) > cr.r1-cr.r0 {
				return nil, updatedOut{}, fmt.Errorf("values: %d rows do not fit the range %s", len(in.Values), cr)
			}
			cells := 0
			for i, row := range in.Values {
				if len(row) > cr.c1-cr.c0 {
					return nil, updatedOut{}, fmt.Errorf("values: row %d has %d cells, more than the range %s is wide", i, len(row), cr)
				}
				for len(sh.Rows) <= cr.r0+i {
					sh.Rows = append(sh.Rows, []any{})
				}
				target := sh.Rows[cr.r0+i]
				for len(target) < cr.c0+len(row) {
					target = append(target, "")
				}
				copy(target[cr.c0:], row)
				sh.Rows[cr.r0+i] = target
				cells += len(row)
			}
			return nil, updatedOut{SpreadsheetID: b.ID, Sheet: sh.Title, UpdatedRange: cr.String(), UpdatedCells: cells}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "clear_range", Title: "Clear cells",
		Description: "Empty the cells of a range, keeping formatting."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in clearRangeIn) (*mcp.CallToolResult, updatedOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			b, sh, cr, err := s.locate(in.SpreadsheetID, in.Sheet, in.Range)
			if err != nil {
				return nil, updatedOut{}, err
			}
			cells := 0
			for r := cr.r0; r < min(cr.r1, len(sh.Rows)); r++ {
				for c := cr.c0; c < min(cr.c1, len(sh.Rows[r])); c++ {
					sh.Rows[r][c] = ""
					cells++
				}
			}
			return nil, updatedOut{SpreadsheetID: b.ID, Sheet: sh.Title, UpdatedRange: cr.String(), UpdatedCells: cells}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create_spreadsheet", Title: "Create a spreadsheet",
		Description: "Create an empty spreadsheet with the given sheets. Returns its id."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in createSpreadsheetIn) (*mcp.CallToolResult, spreadsheetInfo, error) {
			if strings.TrimSpace(in.Title) == "" {
				return nil, spreadsheetInfo{}, fmt.Errorf("title: must not be empty")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.seq++
			b := &spreadsheet{ID: fmt.Sprintf("ss-new-%d", s.seq), Title: in.Title}
			names := in.Sheets
			if len(names) == 0 {
				names = []string{"Sheet1"}
			}
			for _, n := range names {
				b.Sheets = append(b.Sheets, &sheet{Title: n})
			}
			s.books[b.ID] = b
			return nil, b.info(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_sheet", Title: "Add a sheet",
		Description: "Add an empty sheet (tab) at the end of a spreadsheet."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sheetTitleIn) (*mcp.CallToolResult, spreadsheetInfo, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			b, err := s.book(in.SpreadsheetID)
			if err != nil {
				return nil, spreadsheetInfo{}, err
			}
			if _, err := b.sheet(in.Title); err == nil {
				return nil, spreadsheetInfo{}, fmt.Errorf("title: the spreadsheet already has a sheet %q", in.Title)
			}
			b.Sheets = append(b.Sheets, &sheet{Title: in.Title})
			return nil, b.info(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_sheet", Title: "Delete a sheet",
		Description: "Delete a sheet (tab) and all its cells. A spreadsheet keeps at least one sheet."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sheetTitleIn) (*mcp.CallToolResult, spreadsheetInfo, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			b, err := s.book(in.SpreadsheetID)
			if err != nil {
				return nil, spreadsheetInfo{}, err
			}
			if _, err := b.sheet(in.Title); err != nil {
				return nil, spreadsheetInfo{}, err
			}
			if len(b.Sheets) == 1 {
				return nil, spreadsheetInfo{}, fmt.Errorf("title: %q is the only sheet", in.Title)
			}
			b.Sheets = slices.DeleteFunc(b.Sheets, func(sh *sheet) bool { return sh.Title == in.Title })
			return nil, b.info(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "rename_sheet", Title: "Rename a sheet",
		Description: "Change a sheet's (tab's) title."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in renameSheetIn) (*mcp.CallToolResult, spreadsheetInfo, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			b, err := s.book(in.SpreadsheetID)
			if err != nil {
				return nil, spreadsheetInfo{}, err
			}
			sh, err := b.sheet(in.Sheet)
			if err != nil {
				return nil, spreadsheetInfo{}, err
			}
			if strings.TrimSpace(in.NewTitle) == "" {
				return nil, spreadsheetInfo{}, fmt.Errorf("new_title: must not be empty")
			}
			sh.Title = in.NewTitle
			return nil, b.info(), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "find_replace", Title: "Find and replace",
		Description: "Replace every occurrence of a text in the text cells of a sheet. Returns how many were replaced."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in findReplaceIn) (*mcp.CallToolResult, findReplaceOut, error) {
			if in.Find == "" {
				return nil, findReplaceOut{}, fmt.Errorf("find: must not be empty")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			b, err := s.book(in.SpreadsheetID)
			if err != nil {
				return nil, findReplaceOut{}, err
			}
			sh, err := b.sheet(in.Sheet)
			if err != nil {
				return nil, findReplaceOut{}, err
			}
			n := 0
			for _, row := range sh.Rows {
				for i, v := range row {
					if t, ok := v.(string); ok && strings.Contains(t, in.Find) {
						n += strings.Count(t, in.Find)
						row[i] = strings.ReplaceAll(t, in.Find, in.Replace)
					}
				}
			}
			return nil, findReplaceOut{Replaced: n}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "share_spreadsheet", Title: "Share a spreadsheet",
		Description: "Give a person access to a spreadsheet as reader, commenter or writer."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in shareSheetIn) (*mcp.CallToolResult, permissionsOut, error) {
			if !slices.Contains([]string{"reader", "commenter", "writer"}, in.Role) {
				return nil, permissionsOut{}, fmt.Errorf("role: must be reader, commenter or writer, not %q", in.Role)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, err := s.book(in.SpreadsheetID); err != nil {
				return nil, permissionsOut{}, err
			}
			s.shares[in.SpreadsheetID] = append(s.shares[in.SpreadsheetID], Permission{Email: in.Email, Role: in.Role})
			return nil, permissionsOut{Permissions: s.shares[in.SpreadsheetID]}, nil
		})
	return srv
}
