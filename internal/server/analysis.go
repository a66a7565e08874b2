package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/analysis"
)

// ExecuteAnalysisInput is the input of execute_analysis (docs/tools.md, "analysis").
type ExecuteAnalysisInput struct {
	AnalysisType string         `json:"analysis_type" jsonschema:"filter, aggregate, transform or validate."`
	Data         any            `json:"data,omitempty" jsonschema:"The rows: an array of objects, or an object whose array of objects parameters.data_field names. Give data or source, not both."`
	Source       string         `json:"source,omitempty" jsonschema:"A workspace file holding the rows, as a path relative to the workspace: .json (as data), .jsonl or .ndjson (one object per line) or .csv (a header row; cells that are numbers become numbers, empty cells null). Give data or source, not both."`
	Parameters   map[string]any `json:"parameters,omitempty" jsonschema:"What to do; fields are dot paths (customer.address.city). filter: {conditions: [{field, operator, value}], logic: AND|OR, limit} with operators == != > >= < <= in not_in contains startswith endswith regex exists. aggregate: {group_by: [field], metrics: [{field, op}]} with ops count sum mean median min max stdev distinct p0..p100; columns are named op_field, or count. transform: {select: [field], rename: {old: new}, derive: {name: expression with + - * / ( ) numbers and fields}}, in that order: select picks input fields, rename renames them, derive sees the renamed row and its fields are always kept. validate: {rules: [{field, rule, value}]} with rules required, type (string number integer boolean object array), min, max, regex, enum (a list), unique. data_field: where the rows are when data is an object. A field no row has is refused (but for exists and required)."`
}

// ExecuteAnalysisOutput is the structured result of execute_analysis.
type ExecuteAnalysisOutput struct {
	Result any           `json:"result" jsonschema:"filter: the matching rows; aggregate: one row per group; transform: the new rows; validate: {valid, violations: [{row, field, rule, message}], violation_count}, rows counted from 0."`
	Stats  AnalysisStats `json:"stats" jsonschema:"Rows read and rows produced."`
	// RowsOmitted and OutputFile say where the rest is when the rows
	// produced do not fit the answer budget.
	RowsOmitted int    `json:"rows_omitted,omitempty" jsonschema:"Rows of the result left out of this answer, past the answer budget."`
	OutputFile  string `json:"output_file,omitempty" jsonschema:"The workspace file (JSON Lines) that holds every row of the result."`
}

// AnalysisStats counts the rows of an analysis.
type AnalysisStats struct {
	RowsIn  int `json:"rows_in" jsonschema:"The input rows."`
	RowsOut int `json:"rows_out" jsonschema:"The rows of the result; for validate, the rows without a violation."`
}

// analysisLimits bound the rows an analysis reads, from data or a file.
var analysisLimits = analysis.Limits{}

func (s *Server) addAnalysisTools() {
	addTool(s, "analysis", &mcp.Tool{
		Name:        "execute_analysis",
		Title:       "Filter, aggregate, transform or validate rows",
		Description: "Run a filter, aggregation, transformation or validation over rows of JSON objects given inline or read from a workspace file (JSON, JSON Lines or CSV), natively and without writing code. Returns {result, stats: {rows_in, rows_out}}.",
	}, s.executeAnalysis)
}

// analysisArgs are the arguments whose numbers must stay exact: the SDK
// decodes the typed input with float64 numbers, so these are decoded again
// from the raw arguments with UseNumber.
type analysisArgs struct {
	Data       json.RawMessage `json:"data"`
	Parameters json.RawMessage `json:"parameters"`
}

func (s *Server) executeAnalysis(ctx context.Context, req *mcp.CallToolRequest, in ExecuteAnalysisInput) (*mcp.CallToolResult, ExecuteAnalysisOutput, error) {
	args, err := rawAnalysisArgs(req, in)
	if err != nil {
		return nil, ExecuteAnalysisOutput{}, err
	}
	a, err := analysis.Compile(in.AnalysisType, args.Parameters)
	if err != nil {
		return nil, ExecuteAnalysisOutput{}, analysisError("parameters", err)
	}
	dataField := ""
	if v, ok := in.Parameters["data_field"]; ok && v != nil {
		if dataField, ok = v.(string); !ok {
			return nil, ExecuteAnalysisOutput{}, fieldError("parameters.data_field", "must be a string naming the field that holds the rows")
		}
	}
	hasData := len(args.Data) > 0 && string(bytes.TrimSpace(args.Data)) != "null"
	var rows []map[string]any
	switch {
	case hasData && in.Source != "":
		return nil, ExecuteAnalysisOutput{}, fieldError("data", "give data or source, not both")
	case hasData:
		rows, err = inlineRows(args.Data, dataField)
	case in.Source != "":
		rows, err = s.sourceRows(namespaceOf(req), in.Source, dataField)
	default:
		return nil, ExecuteAnalysisOutput{}, fieldError("data", "give the rows as data, or a workspace file as source")
	}
	if err != nil {
		return nil, ExecuteAnalysisOutput{}, err
	}
	res, err := a.Run(rows)
	if err != nil {
		return nil, ExecuteAnalysisOutput{}, analysisError("parameters", err)
	}
	out := ExecuteAnalysisOutput{Result: res.Result, Stats: AnalysisStats{RowsIn: res.RowsIn, RowsOut: res.RowsOut}}
	// Rows from a workspace file reach the model with their personal data
	// as tokens, like everything else codecell returns: the gate sees to
	// it (gate.go).
	text := renderAnalysis(in.AnalysisType, res)
	if err := s.boundRows(namespaceOf(req), &out, len(text), s.textRoom(req)); err != nil {
		return nil, ExecuteAnalysisOutput{}, err
	}
	if out.RowsOmitted > 0 {
		text += fmt.Sprintf("[%d of the %d rows are in this answer; all of them are in the workspace file %s]\n",
			res.RowsOut-out.RowsOmitted, res.RowsOut, out.OutputFile)
	}
	s.log.Info("analysis", "namespace", namespaceOf(req), "analysis_type", in.AnalysisType,
		"rows_in", res.RowsIn, "rows_out", res.RowsOut)
	return textResult(text), out, nil
}

// rawAnalysisArgs decodes data and parameters from the raw arguments, or,
// without them (a direct call), from the typed input.
func rawAnalysisArgs(req *mcp.CallToolRequest, in ExecuteAnalysisInput) (analysisArgs, error) {
	var args analysisArgs
	if req != nil && req.Params != nil && len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return args, fmt.Errorf("arguments: %w", err)
		}
		return args, nil
	}
	var err error
	if in.Data != nil {
		if args.Data, err = json.Marshal(in.Data); err != nil {
			return args, fieldError("data", "%v", err)
		}
	}
	if in.Parameters != nil {
		if args.Parameters, err = json.Marshal(in.Parameters); err != nil {
			return args, fieldError("parameters", "%v", err)
		}
	}
	return args, nil
}

// analysisError turns an analysis error into a bad argument: a
// *analysis.ParamError names its own field, anything else is about field.
func analysisError(field string, err error) error {
	var pe *analysis.ParamError
	if errors.As(err, &pe) {
		return fieldError(pe.Path, "%s", pe.Msg)
	}
	return fieldError(field, "%v", err)
}

func inlineRows(data json.RawMessage, dataField string) ([]map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fieldError("data", "%v", err)
	}
	rows, err := analysisLimits.RowsOf(v, dataField)
	if err != nil {
		return nil, analysisError("data", err)
	}
	return rows, nil
}

// sourceRows reads the rows of a workspace file. The file is opened through
// an os.Root on the workspace, so neither "..", nor a symlink (anywhere on
// the path) that points out of the workspace, nor a rename racing with the
// open can reach a file outside it. It does not protect against hard links
// or bind mounts placed inside the workspace by the host. The open does not
// block on a FIFO, and only regular files are read.
func (s *Server) sourceRows(ns, name, dataField string) ([]map[string]any, error) {
	if filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return nil, fieldError("source", "%q is absolute; give a path relative to the workspace", name)
	}
	if !filepath.IsLocal(name) {
		return nil, fieldError("source", "%q leaves the workspace; give a path inside it", name)
	}
	format, err := analysis.FormatOf(name)
	if err != nil {
		return nil, fieldError("source", "%v", err)
	}
	// Set up first: an image not mounted yet would show an empty directory.
	if _, err := s.volume(ns); err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	root, err := os.OpenRoot(s.Workspace(ns))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fieldError("source", "%q does not exist in the workspace", name)
	}
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fieldError("source", "%q does not exist in the workspace", name)
	case err != nil:
		// The error names only the relative path, never the host's.
		return nil, fieldError("source", "%q cannot be opened inside the workspace (symlinks may not point out of it, nor be absolute): %v", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat source: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fieldError("source", "%q is not a regular file", name)
	}
	rows, err := analysisLimits.Load(f, format, dataField)
	if err != nil {
		return nil, analysisError("source", fmt.Errorf("%s: %w", name, err))
	}
	return rows, nil
}

// Bounds of the text rendering; the structured result is complete.
const (
	analysisRows      = 20
	analysisColumns   = 12
	analysisCellRunes = 40 // runes
)

// renderAnalysis is the short text form of a result: a summary line and a
// table of the first rows, or the first violations.
func renderAnalysis(kind string, res analysis.Result) string {
	var b strings.Builder
	switch r := res.Result.(type) {
	case analysis.ValidateResult:
		if r.Valid {
			fmt.Fprintf(&b, "validate: valid, %s\n", analysisNouns(res.RowsIn, "row"))
			return b.String()
		}
		fmt.Fprintf(&b, "validate: %s in %s (%s without one)\n", analysisNouns(r.ViolationCount, "violation"), analysisNouns(res.RowsIn, "row"), analysisNouns(res.RowsOut, "row"))
		w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "row\tfield\trule\tmessage")
		for _, v := range r.Violations[:min(len(r.Violations), analysisRows)] {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", v.Row, analysisCell(v.Field), v.Rule, analysisCell(v.Message))
		}
		w.Flush()
		if more := r.ViolationCount - min(len(r.Violations), analysisRows); more > 0 {
			fmt.Fprintf(&b, "... and %d more\n", more)
		}
		return b.String()
	case []map[string]any:
		switch kind {
		case "filter":
			fmt.Fprintf(&b, "filter: %d of %s match\n", res.RowsOut, analysisNouns(res.RowsIn, "row"))
		case "aggregate":
			fmt.Fprintf(&b, "aggregate: %s from %s\n", analysisNouns(res.RowsOut, "group"), analysisNouns(res.RowsIn, "row"))
		default:
			fmt.Fprintf(&b, "%s: %s\n", kind, analysisNouns(res.RowsOut, "row"))
		}
		analysisTable(&b, r, res.Columns)
		return b.String()
	}
	out, _ := json.Marshal(res.Result)
	fmt.Fprintf(&b, "%s: %s\n", kind, out)
	return b.String()
}

func analysisTable(b *strings.Builder, rows []map[string]any, columns []string) {
	shown := rows[:min(len(rows), analysisRows)]
	if columns == nil {
		seen := map[string]bool{}
		for _, r := range shown {
			for k := range r {
				if !seen[k] {
					seen[k] = true
					columns = append(columns, k)
				}
			}
		}
		slices.Sort(columns)
	}
	if len(columns) == 0 {
		return
	}
	hidden := max(0, len(columns)-analysisColumns)
	columns = columns[:len(columns)-hidden]
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	header := make([]string, len(columns))
	for i, c := range columns {
		header[i] = analysisCell(c)
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range shown {
		cells := make([]string, len(columns))
		for i, c := range columns {
			cells[i] = analysisCell(r[c])
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	w.Flush()
	if more := len(rows) - len(shown); more > 0 {
		fmt.Fprintf(b, "... and %s in the structured result\n", analysisNouns(more, "more row"))
	}
	if hidden > 0 {
		fmt.Fprintf(b, "... and %s in the structured result\n", analysisNouns(hidden, "more column"))
	}
}

// analysisNouns is "1 row", "2 rows".
func analysisNouns(n int, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}

// analysisCell shows a value in one table cell: strings bare, other values as
// JSON, on one line and cut at analysisCellRunes runes.
func analysisCell(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case nil:
		s = "null"
	default:
		j, err := json.Marshal(x)
		if err != nil {
			s = fmt.Sprint(x)
		} else {
			s = string(j)
		}
	}
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > analysisCellRunes {
		s = string([]rune(s)[:analysisCellRunes-1]) + "…"
	}
	return s
}

// boundRows holds a result's rows to room (textRoom), beside a text of
// textLen bytes: when they do not fit, every row goes to a workspace file
// (JSON Lines) and the answer keeps the first rows that fit, saying how many
// it left out and where they are.
func (s *Server) boundRows(ns string, out *ExecuteAnalysisOutput, textLen, room int) error {
	rows, ok := out.Result.([]map[string]any)
	if room <= 0 || !ok {
		return nil
	}
	room -= textLen // the rest of the answer and the note are in textRoom's margin
	var all bytes.Buffer
	keep, size, full := 0, 0, false
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		all.Write(b)
		all.WriteByte('\n')
		// The text rendering shows a few rows; the structured rows are
		// the ones that count. The answer keeps a head of them.
		if full = full || size+len(b)+1 > room; !full {
			keep++
			size += len(b) + 1
		}
	}
	if keep == len(rows) {
		return nil
	}
	file, err := s.saveOutputFile(ns, "jsonl", all.Bytes())
	if err != nil {
		return fmt.Errorf("save the rows past the answer budget: %w", err)
	}
	out.Result, out.RowsOmitted, out.OutputFile = rows[:keep], len(rows)-keep, file
	return nil
}
