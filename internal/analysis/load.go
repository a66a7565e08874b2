package analysis

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrTooLarge is returned (wrapped) when data exceeds a Limits bound.
var ErrTooLarge = errors.New("data too large")

// Limits bound what the loaders read. A zero field means its default.
type Limits struct {
	MaxRows  int   // default 1,000,000
	MaxBytes int64 // default 64 MiB
}

// Defaults of Limits.
const (
	DefaultMaxRows  = 1_000_000
	DefaultMaxBytes = 64 << 20
)

func (l Limits) rows() int {
	if l.MaxRows <= 0 {
		return DefaultMaxRows
	}
	return l.MaxRows
}

func (l Limits) bytes() int64 {
	if l.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return l.MaxBytes
}

func (l Limits) tooManyRows() error {
	return fmt.Errorf("%w: more than %d rows", ErrTooLarge, l.rows())
}

// Format is a file format of LoadFile.
type Format string

// The formats, chosen by extension.
const (
	JSON      Format = "json"
	JSONLines Format = "jsonl"
	CSV       Format = "csv"
)

// FormatOf chooses the format of a file by its extension, in any case:
// .json, .jsonl or .ndjson, .csv.
func FormatOf(name string) (Format, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return JSON, nil
	case ".jsonl", ".ndjson":
		return JSONLines, nil
	case ".csv":
		return CSV, nil
	}
	return "", fmt.Errorf("%q has no known extension; want .json, .jsonl, .ndjson or .csv", filepath.Base(name))
}

// LoadJSON reads JSON rows with the default Limits.
func LoadJSON(r io.Reader, dataField string) ([]map[string]any, error) {
	return Limits{}.LoadJSON(r, dataField)
}

// LoadJSONLines reads JSON Lines rows with the default Limits.
func LoadJSONLines(r io.Reader) ([]map[string]any, error) { return Limits{}.LoadJSONLines(r) }

// LoadCSV reads CSV rows with the default Limits.
func LoadCSV(r io.Reader) ([]map[string]any, error) { return Limits{}.LoadCSV(r) }

// LoadFile reads a file's rows with the default Limits.
func LoadFile(path, dataField string) ([]map[string]any, error) {
	return Limits{}.LoadFile(path, dataField)
}

// RowsOf picks the rows out of a decoded JSON value with the default Limits.
func RowsOf(v any, dataField string) ([]map[string]any, error) {
	return Limits{}.RowsOf(v, dataField)
}

// LoadFile reads the rows of the file at path in the format its extension
// names; dataField is as for LoadJSON and ignored by the other formats.
func (l Limits) LoadFile(path, dataField string) ([]map[string]any, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return l.Load(f, format, dataField)
}

// Load reads rows in a format; dataField is as for LoadJSON and ignored by the
// other formats.
func (l Limits) Load(r io.Reader, format Format, dataField string) ([]map[string]any, error) {
	switch format {
	case JSON:
		return l.LoadJSON(r, dataField)
	case JSONLines:
		return l.LoadJSONLines(r)
	case CSV:
		return l.LoadCSV(r)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// LoadJSON reads one JSON value (after an optional UTF-8 byte order mark),
// numbers as json.Number: an array of objects, or an object holding such an
// array in the field dataField names (a dot path). See RowsOf.
func (l Limits) LoadJSON(r io.Reader, dataField string) ([]map[string]any, error) {
	d := json.NewDecoder(dropBOM(l.reader(r)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, jsonError(err)
	}
	if _, err := d.Token(); err != io.EOF {
		if err != nil {
			return nil, jsonError(err)
		}
		return nil, fmt.Errorf("invalid JSON: more than one value (offset %d); for one object per line use a .jsonl file", d.InputOffset())
	}
	return l.RowsOf(v, dataField)
}

func jsonError(err error) error {
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err) // Offset counts the bytes read, the bad one included
	}
	if err == io.EOF {
		return errors.New("invalid JSON: no data")
	}
	return fmt.Errorf("invalid JSON: %v", err)
}

// RowsOf picks the rows out of a decoded JSON value: v itself if it is an
// array, or the array at the dot path dataField if it is an object. Every
// element must be an object. A problem with dataField is a *ParamError on
// parameters.data_field.
func (l Limits) RowsOf(v any, dataField string) ([]map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		if dataField == "" {
			return nil, paramErr("parameters.data_field", "is required when the data is an object: name the field that holds the array of rows (the object has %s)", keyList(m))
		}
		inner, present := newPath(dataField).get(m)
		if !present {
			return nil, paramErr("parameters.data_field", "%q is not a field of the data (it has %s)", dataField, keyList(m))
		}
		if _, ok := inner.([]any); !ok {
			return nil, paramErr("parameters.data_field", "%q holds %s, not an array of rows", dataField, article(typeName(inner)))
		}
		v = inner
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("the data is %s, not an array of objects", article(typeName(v)))
	}
	if len(list) > l.rows() {
		return nil, l.tooManyRows()
	}
	rows := make([]map[string]any, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("row %d is %s, not an object", i, article(typeName(e)))
		}
		rows[i] = m
	}
	return rows, nil
}

func keyList(m map[string]any) string {
	if len(m) == 0 {
		return "no fields"
	}
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) > 10 {
		keys = append(keys[:10], "...")
	}
	return "fields " + strings.Join(keys, ", ")
}

// LoadJSONLines reads one JSON object per line, numbers as json.Number;
// blank lines are skipped. Errors name the line, counted from 1.
func (l Limits) LoadJSONLines(r io.Reader) ([]map[string]any, error) {
	sc := bufio.NewScanner(l.reader(r))
	sc.Buffer(make([]byte, 0, 64<<10), int(min(l.bytes(), 1<<30))+1)
	rows := []map[string]any{}
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\uFEFF"))
		}
		if len(b) == 0 {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, jsonError(err))
		}
		if d.More() {
			return nil, fmt.Errorf("line %d: more than one JSON value", line)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("line %d: is %s, not an object", line, article(typeName(v)))
		}
		if len(rows) == l.rows() {
			return nil, l.tooManyRows()
		}
		rows = append(rows, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

// LoadCSV reads CSV with a header row naming the fields (a UTF-8 byte order
// mark is dropped). A cell that is a JSON number becomes a json.Number, an
// empty cell null, any other cell a string.
func (l Limits) LoadCSV(r io.Reader) ([]map[string]any, error) {
	cr := csv.NewReader(dropBOM(l.reader(r)))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return []map[string]any{}, nil
	}
	if err != nil {
		return nil, csvError(err)
	}
	header = slices.Clone(header)
	for i, h := range header {
		if h == "" {
			return nil, fmt.Errorf("csv header: column %d has no name", i+1)
		}
		if j := slices.Index(header[:i], h); j >= 0 {
			return nil, fmt.Errorf("csv header: columns %d and %d are both named %q", j+1, i+1, h)
		}
	}
	rows := []map[string]any{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, csvError(err)
		}
		if len(rows) == l.rows() {
			return nil, l.tooManyRows()
		}
		row := make(map[string]any, len(header))
		for i, cell := range rec {
			switch {
			case cell == "":
				row[header[i]] = nil
			case isJSONNumber(cell):
				row[header[i]] = json.Number(cell)
			default:
				row[header[i]] = cell
			}
		}
		rows = append(rows, row)
	}
}

// dropBOM skips a UTF-8 byte order mark, which spreadsheet programs write.
func dropBOM(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte("\uFEFF")) {
		br.Discard(3)
	}
	return br
}

func csvError(err error) error {
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	return fmt.Errorf("invalid CSV: %v", err)
}

// reader bounds r at MaxBytes: reading past it fails with ErrTooLarge,
// rather than ending as if the data were complete.
func (l Limits) reader(r io.Reader) io.Reader {
	return &boundedReader{r: r, left: l.bytes(), max: l.bytes()}
}

type boundedReader struct {
	r         io.Reader
	left, max int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(b.r, one[:]); n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
