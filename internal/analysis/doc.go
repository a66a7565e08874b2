// Package analysis is the native engine behind execute_analysis (docs/tools.md, "analysis"):
// filter, aggregate, transform and validate over rows of JSON objects,
// without an interpreter. It knows nothing of MCP.
//
// [Run] compiles the parameters and runs them over rows; [Compile] does the
// first half alone, so that a caller can report bad parameters before it
// reads any data. [Limits] bound what the loaders accept (rows and bytes).
//
// # Rows and numbers
//
// A row is a map[string]any holding what encoding/json produces. The loaders
// ([LoadJSON], [LoadJSONLines], [LoadCSV], [LoadFile], [RowsOf]) decode with
// UseNumber, so numbers arrive as json.Number and integers keep every digit
// (int64 exactly; larger integers as float64). Rows built in Go may also hold
// float64, float32, int, int32 and int64. A float NaN is not a number to the
// engine: it equals nothing, orders with nothing and is skipped by metrics.
//
// CSV has a header row of distinct, non-empty names. A cell that is a JSON
// number ("12", "-3.5", "1e3") becomes a json.Number; an empty cell becomes
// null; every other cell, including "007", " 12", "+1", "NaN" and "0x1F",
// stays a string. A leading UTF-8 byte order mark is dropped.
//
// Numeric coercion: wherever one side of a comparison is a number, or a number
// is needed (ordering, numeric metrics, arithmetic, the min and max rules), a
// string whose whole text is a JSON number counts as that number. So "5"
// equals 5, but "5" does not equal "5.0" (two strings compare as text).
// Integers compare and add exactly; mixed integer and float comparisons are
// exact too. Median, stdev and percentiles are computed in float64.
//
// Missing fields and null are the same thing everywhere except in the
// messages of the required rule. But a field that no row has at all is
// refused, with the fields the rows do have, nearest first: it is a typo far
// more often than a question ("regoin", "Amount"). The exceptions are the
// ones about absent fields: filter's exists and validate's required. With no
// rows, nothing is refused. A field is a dot path: "customer.address.city"
// walks nested objects, and a numeric segment indexes an array ("items.0.sku").
// A top-level key that itself contains dots ("unit.price") is found first.
//
// # filter
//
// Parameters: conditions [{field, operator, value}], logic "AND" (default) or
// "OR" (either case), limit (a positive integer, optional). With no conditions
// AND keeps every row and OR none. Operators, where v is the field's value and
// x the condition's value:
//
//   - ==, !=: equality. Numbers (and numeric strings against numbers) compare
//     numerically, strings by their bytes (no Unicode normalization, case
//     matters), booleans and null by identity, arrays and objects deeply.
//     Values of different kinds are unequal; NaN equals nothing. So a missing
//     field matches == null and != anything else.
//   - >, >=, <, <=: x must be a number or a string. If either side is a number
//     both are compared as numbers (a non-numeric v never matches); two
//     strings compare as text, byte-wise (which is code point order). Null and
//     missing never match.
//   - in, not_in: x must be an array; v is in it if it equals (as ==) an
//     element. not_in is the exact negation, so a missing field is not_in any
//     list without null.
//   - contains: an array v contains x if an element equals x; a string v (or a
//     number, by its JSON text) contains a string x as a substring.
//   - startswith, endswith: x must be a string; v must be a string or a number
//     (by its JSON text).
//   - regex: x is a Go (RE2) regular expression, compiled once and matched
//     anywhere in v (anchor it with ^ and $); v as for startswith.
//   - exists: x is a boolean, default true; true matches fields that are
//     present and not null.
//
// # aggregate
//
// Parameters: group_by [field, ...] (optional; empty gives one row, even for
// no input rows) and metrics [{field, op}]. Groups come out in the order of
// their first row; group values are compared as == does, except that strings
// are never coerced (1 and 1.0 group together, 1 and "1" do not). The output
// row holds each group field (by its path) and one column per metric, named
// <op>_<field>, or "count" for count without a field.
//
//   - count: rows, or with a field the rows where it is not null.
//   - distinct: how many distinct non-null values the field takes.
//   - sum, mean, median, stdev, pNN: over the numeric values (numbers and
//     numeric strings); other values are skipped, and with no numeric values
//     the metric is null. sum is exact for integers (an int64), else a
//     compensated float sum. stdev is the sample standard deviation (n-1),
//     null below two values. pNN (p0 to p100) interpolates linearly between
//     the closest ranks, as NumPy's default; median is Python's
//     statistics.median.
//   - min, max: over the numeric values; if there are none, over the string
//     values as text (so ISO dates work); else null.
//
// Results that are not finite (a float sum that overflows) become null.
//
// # transform
//
// Parameters: select [field, ...], rename {old: new}, derive {name: expression},
// at least one of them, applied in that order to a copy of each row:
//
//  1. select picks fields of the input row, by their input names (dot paths
//     allowed; the output key is the path as written; a field missing from a
//     row comes out null). Without select every field is kept. A select entry
//     that names a derived field only places it among the columns.
//  2. rename renames top-level keys, old to new (a renamed value wins over an
//     existing key of the new name). With select, each old name must be
//     selected.
//  3. derive adds (or replaces) fields computed from the renamed row: the
//     whole input row, select or not, with rename's new names (an old name is
//     refused), not other derived fields. Derived fields are always kept.
//
// So {"select": ["id", "amount"], "rename": {"amount": "price"}, "derive":
// {"total": "price * qty"}} gives rows of id, price and total. An expression is arithmetic: + - * /,
// unary minus, parentheses, numbers and field names (letters, digits, _ and
// dots, not starting with a digit). A bare field name copies the value as it
// is, whatever its type. Otherwise any operand that is null, missing or not
// numeric makes the result null, as does division by zero or a result that
// is not finite. Integer + - * stay exact integers until they overflow;
// division gives an integer only when it is exact.
//
// # validate
//
// Parameters: rules [{field, rule, value}]. Rules other than required pass
// when the field is missing or null.
//
//   - required: present and not null ("" is present).
//   - type: value is string, number, integer, boolean, object or array;
//     types are strict (a numeric string is a string); integer means a number
//     with an integral value (1.0 is an integer, as in JSON Schema).
//   - min, max: value is a number; the field must be a number or numeric
//     string within the bound (inclusive); anything else is a violation.
//   - regex: as the filter's regex; a field that is not a string or number is
//     a violation.
//   - enum: value is an array; the field must equal (as ==) an element.
//   - unique: every later occurrence of a value (as distinct sees it) is a
//     violation naming the first row.
//
// The result is {valid, violations: [{row, field, rule, message}],
// violation_count}, rows counted from 0; at most [MaxViolations] violations
// are listed, violation_count counts all of them.
//
// # Errors
//
// A bad parameter is a *[ParamError] whose Path names it the way the caller
// wrote it: parameters.conditions[1].operator.
package analysis
