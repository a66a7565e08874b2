package analysis

import (
	"encoding/json"
	"strings"
)

// Kinds lists the analysis types Run accepts.
var Kinds = []string{"filter", "aggregate", "transform", "validate"}

// Result is the outcome of an analysis.
type Result struct {
	// Result is []map[string]any for filter, aggregate and transform, and a
	// ValidateResult for validate; it marshals to JSON as it is.
	Result any
	// RowsIn counts the input rows. RowsOut counts the rows of Result: the
	// matching rows, the groups, the transformed rows; for validate, the rows
	// without a violation.
	RowsIn, RowsOut int
	// Columns orders the keys of Result's rows when the analysis knows an
	// order (aggregate: group fields then metrics; transform with select);
	// else nil.
	Columns []string
}

// Run runs the analysis kind over rows with its parameters (a JSON object;
// null or empty means {}). Rows are not modified. A bad kind or parameter,
// or a field that no row has, is a *ParamError.
func Run(kind string, rows []map[string]any, params json.RawMessage) (Result, error) {
	a, err := Compile(kind, params)
	if err != nil {
		return Result{}, err
	}
	return a.Run(rows)
}

// Analysis is a compiled analysis, ready to run over any number of row sets.
// It is safe for concurrent use.
type Analysis struct {
	kind string
	r    interface {
		Run([]map[string]any) Result
		fieldRefs() []fieldRef
	}
}

// Kind is the analysis type: filter, aggregate, transform or validate.
func (a *Analysis) Kind() string { return a.kind }

// Run runs the analysis over rows, which it does not modify. A field named by
// the parameters that no row has is a *ParamError that lists the fields the
// rows do have (with no rows, nothing is refused).
func (a *Analysis) Run(rows []map[string]any) (Result, error) {
	if err := checkFields(rows, a.r.fieldRefs()); err != nil {
		return Result{}, err
	}
	return a.r.Run(rows), nil
}

// Compile checks the parameters of an analysis and compiles it (regular
// expressions, expressions), so that errors come before any data is read.
func Compile(kind string, params json.RawMessage) (*Analysis, error) {
	switch kind {
	case "filter", "aggregate", "transform", "validate":
	case "":
		return nil, paramErr("analysis_type", "is required; want one of %s", strings.Join(Kinds, ", "))
	default:
		return nil, paramErr("analysis_type", "%q is not one of %s", kind, strings.Join(Kinds, ", "))
	}
	o, err := decodeParams(params)
	if err != nil {
		return nil, err
	}
	a := &Analysis{kind: kind}
	switch kind {
	case "filter":
		a.r, err = compileFilter(o)
	case "aggregate":
		a.r, err = compileAggregate(o)
	case "transform":
		a.r, err = compileTransform(o)
	default:
		a.r, err = compileValidate(o)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}
