package analysis

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// Expected values below are worked by hand; the comments show the working.
func TestAggregate(t *testing.T) {
	for _, tc := range []struct {
		name, data, params string
		want               string
		columns            []string
	}{
		{
			name: "every metric over mixed values",
			// a: x = 1, 3, "oops", missing -> numbers [1 3]; b: "2", null -> [2];
			// c: "n/a" -> none; no g: 10.
			data: `[{"g":"a","x":1},{"g":"b","x":"2"},{"g":"a","x":3},{"g":"a","x":"oops"},
				{"g":"b","x":null},{"g":"a"},{"g":"c","x":"n/a"},{"x":10}]`,
			params: `{"group_by":["g"],"metrics":[{"op":"count"},{"field":"x","op":"count"},{"field":"x","op":"sum"},
				{"field":"x","op":"mean"},{"field":"x","op":"min"},{"field":"x","op":"max"},{"field":"x","op":"median"},
				{"field":"x","op":"stdev"},{"field":"x","op":"distinct"},{"field":"x","op":"p50"}]}`,
			// stdev(a) = sqrt(((1-2)^2 + (3-2)^2) / 1) = sqrt(2)
			want: `[
				{"g":"a","count":4,"count_x":3,"sum_x":4,"mean_x":2,"min_x":1,"max_x":3,"median_x":2,"stdev_x":1.4142135623730951,"distinct_x":3,"p50_x":2},
				{"g":"b","count":2,"count_x":1,"sum_x":2,"mean_x":2,"min_x":2,"max_x":2,"median_x":2,"stdev_x":null,"distinct_x":1,"p50_x":2},
				{"g":"c","count":1,"count_x":1,"sum_x":null,"mean_x":null,"min_x":"n/a","max_x":"n/a","median_x":null,"stdev_x":null,"distinct_x":1,"p50_x":null},
				{"g":null,"count":1,"count_x":1,"sum_x":10,"mean_x":10,"min_x":10,"max_x":10,"median_x":10,"stdev_x":null,"distinct_x":1,"p50_x":10}]`,
			columns: []string{"g", "count", "count_x", "sum_x", "mean_x", "min_x", "max_x", "median_x", "stdev_x", "distinct_x", "p50_x"},
		},
		{
			name:   "no group_by gives one row",
			data:   `[{"x":2},{"x":4},{"x":4},{"x":4},{"x":5},{"x":5},{"x":7},{"x":9}]`,
			params: `{"metrics":[{"op":"count"},{"field":"x","op":"mean"},{"field":"x","op":"stdev"},{"field":"x","op":"median"}]}`,
			// mean 40/8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32; 32/7 = 4.571428571428571; sqrt = 2.138089935299395
			want:    `[{"count":8,"mean_x":5,"stdev_x":2.138089935299395,"median_x":4.5}]`,
			columns: []string{"count", "mean_x", "stdev_x", "median_x"},
		},
		{
			name:   "no group_by and no rows",
			data:   `[]`,
			params: `{"group_by":[],"metrics":[{"op":"count"},{"field":"x","op":"count"},{"field":"x","op":"sum"},{"field":"x","op":"mean"},{"field":"x","op":"distinct"},{"field":"x","op":"p90"},{"field":"x","op":"min"}]}`,
			want:   `[{"count":0,"count_x":0,"sum_x":null,"mean_x":null,"distinct_x":0,"p90_x":null,"min_x":null}]`,
		},
		{
			name:   "group_by and no rows",
			data:   `[]`,
			params: `{"group_by":["g"],"metrics":[{"op":"count"}]}`,
			want:   `[]`,
		},
		{
			name: "percentiles interpolate between closest ranks",
			data: `[{"x":4},{"x":1},{"x":3},{"x":2}]`,
			// sorted 1 2 3 4; h = 3p/100: p25 h=.75 -> 1.75; p90 h=2.7 -> 3.7; p10 h=.3 -> 1.3
			params: `{"metrics":[{"field":"x","op":"p0"},{"field":"x","op":"p10"},{"field":"x","op":"p25"},{"field":"x","op":"median"},
				{"field":"x","op":"p50"},{"field":"x","op":"p90"},{"field":"x","op":"p100"},{"field":"x","op":"p05"}]}`,
			// p05: h = .15 -> 1.15
			want: `[{"p0_x":1,"p10_x":1.3,"p25_x":1.75,"median_x":2.5,"p50_x":2.5,"p90_x":3.7,"p100_x":4,"p05_x":1.15}]`,
		},
		{
			name:   "one value",
			data:   `[{"x":7.5}]`,
			params: `{"metrics":[{"field":"x","op":"p90"},{"field":"x","op":"median"},{"field":"x","op":"stdev"},{"field":"x","op":"sum"}]}`,
			want:   `[{"p90_x":7.5,"median_x":7.5,"stdev_x":null,"sum_x":7.5}]`,
		},
		{
			name:   "groups in order of first appearance",
			data:   `[{"g":"z"},{"g":"a"},{"g":"z"},{"g":"m"},{"g":"a"}]`,
			params: `{"group_by":["g"],"metrics":[{"op":"count"}]}`,
			want:   `[{"g":"z","count":2},{"g":"a","count":2},{"g":"m","count":1}]`,
		},
		{
			name:   "1 and 1.0 group together, \"1\" apart",
			data:   `[{"k":1},{"k":1.0},{"k":"1"},{"k":true},{"k":[1]},{"k":{"a":1}},{"k":{"a":1.0}}]`,
			params: `{"group_by":["k"],"metrics":[{"op":"count"}]}`,
			want:   `[{"k":1,"count":2},{"k":"1","count":1},{"k":true,"count":1},{"k":[1],"count":1},{"k":{"a":1},"count":2}]`,
		},
		{
			name: "several group fields and nested paths",
			data: `[{"c":{"country":"FR"},"s":"new","n":1},{"c":{"country":"FR"},"s":"old","n":2},
				{"c":{"country":"FR"},"s":"new","n":3},{"c":{"country":"DE"},"s":"new","n":4}]`,
			params:  `{"group_by":["c.country","s"],"metrics":[{"field":"n","op":"sum"}]}`,
			want:    `[{"c.country":"FR","s":"new","sum_n":4},{"c.country":"FR","s":"old","sum_n":2},{"c.country":"DE","s":"new","sum_n":4}]`,
			columns: []string{"c.country", "s", "sum_n"},
		},
		{
			name: "Unicode group values stay apart",
			data: `[{"city":"Köln"},{"city":"Koln"},{"city":"Ko\u0308ln"},{"city":"東京"}]`,
			// "Köln" precomposed and with a combining diaeresis are different strings.
			params: `{"group_by":["city"],"metrics":[{"op":"count"}]}`,
			want:   `[{"city":"Köln","count":1},{"city":"Koln","count":1},{"city":"Ko\u0308ln","count":1},{"city":"東京","count":1}]`,
		},
		{
			name:   "integer sums are exact beyond 2^53",
			data:   `[{"x":9007199254740993},{"x":1},{"x":"2"}]`,
			params: `{"metrics":[{"field":"x","op":"sum"},{"field":"x","op":"max"},{"field":"x","op":"min"}]}`,
			want:   `[{"sum_x":9007199254740996,"max_x":9007199254740993,"min_x":1}]`,
		},
		{
			name:   "integer overflow falls back to float",
			data:   `[{"x":9223372036854775807},{"x":1}]`,
			params: `{"metrics":[{"field":"x","op":"sum"}]}`,
			want:   `[{"sum_x":9223372036854775808}]`,
		},
		{
			name:   "float sums are compensated",
			data:   `[{"x":0.1},{"x":0.1},{"x":0.1},{"x":0.1},{"x":0.1},{"x":0.1},{"x":0.1},{"x":0.1},{"x":0.1},{"x":0.1},{"x":1e100},{"x":-1e100}]`,
			params: `{"metrics":[{"field":"x","op":"sum"}]}`,
			// math.fsum: 1.0 (naive left-to-right addition gives 0)
			want: `[{"sum_x":1}]`,
		},
		{
			name:   "min and max of numbers win over strings; strings compare as text",
			data:   `[{"x":"10"},{"x":9},{"x":"abc"},{"d":"2024-03-01"},{"d":"2023-12-31"},{"d":"2024-01-15"}]`,
			params: `{"metrics":[{"field":"x","op":"min"},{"field":"x","op":"max"},{"field":"d","op":"min"},{"field":"d","op":"max"}]}`,
			want:   `[{"min_x":9,"max_x":10,"min_d":"2023-12-31","max_d":"2024-03-01"}]`,
		},
		{
			name:   "distinct: numbers numerically, strings apart, null not counted",
			data:   `[{"x":1},{"x":1.0},{"x":"1"},{"x":null},{"x":"a"},{"x":"a"},{},{"x":[1,2]},{"x":[1,2]}]`,
			params: `{"metrics":[{"field":"x","op":"distinct"},{"field":"x","op":"count"},{"op":"count"}]}`,
			want:   `[{"distinct_x":4,"count_x":7,"count":9}]`,
		},
		{
			name:   "mean of integers is a float",
			data:   `[{"x":1},{"x":2}]`,
			params: `{"metrics":[{"field":"x","op":"mean"},{"field":"x","op":"median"}]}`,
			want:   `[{"mean_x":1.5,"median_x":1.5}]`,
		},
		{
			name:   "booleans are not numbers",
			data:   `[{"x":true},{"x":false},{"x":2}]`,
			params: `{"metrics":[{"field":"x","op":"sum"},{"field":"x","op":"count"}]}`,
			want:   `[{"sum_x":2,"count_x":3}]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := rowsOf(t, tc.data)
			res, err := Run("aggregate", rows, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, res.Result, tc.want)
			out := res.Result.([]map[string]any)
			if res.RowsIn != len(rows) || res.RowsOut != len(out) {
				t.Errorf("rows in, out = %d, %d; want %d, %d", res.RowsIn, res.RowsOut, len(rows), len(out))
			}
			if tc.columns != nil && !slices.Equal(res.Columns, tc.columns) {
				t.Errorf("columns = %q, want %q", res.Columns, tc.columns)
			}
		})
	}
}

// TestAggregateGoValues covers NaN and infinities, which JSON cannot carry:
// NaN is skipped, a sum or bound that is infinite is null.
func TestAggregateGoValues(t *testing.T) {
	rows := []map[string]any{{"x": math.NaN()}, {"x": 1.0}, {"x": math.Inf(1)}, {"x": int64(2)}, {"y": math.MaxFloat64}, {"y": math.MaxFloat64}}
	res, err := Run("aggregate", rows, json.RawMessage(`{"metrics":[{"field":"x","op":"count"},{"field":"x","op":"sum"},{"field":"x","op":"min"},
		{"field":"x","op":"max"},{"field":"x","op":"median"},{"field":"y","op":"sum"},{"field":"y","op":"mean"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// x: NaN skipped, values 1, 2, +Inf: median 2; y: MaxFloat64 twice overflows.
	sameJSON(t, res.Result, `[{"count_x":4,"sum_x":null,"min_x":1,"max_x":null,"median_x":2,"sum_y":null,"mean_y":null}]`)
}

func TestAggregateErrors(t *testing.T) {
	runErrorCases(t, []errorCase{
		{"no metrics", "aggregate", `{"group_by":["g"]}`, "parameters.metrics", "is required"},
		{"metrics not a list", "aggregate", `{"metrics":"count"}`, "parameters.metrics", "must be an array"},
		{"metric not an object", "aggregate", `{"metrics":["count"]}`, "parameters.metrics[0]", "must be an object"},
		{"no op", "aggregate", `{"metrics":[{"field":"x"}]}`, "parameters.metrics[0].op", "is required"},
		{"unknown op", "aggregate", `{"metrics":[{"op":"count"},{"field":"x","op":"avg"}]}`, "parameters.metrics[1].op",
			`"avg" is not one of count, sum, mean, median, min, max, stdev, distinct, pNN`},
		{"percentile above 100", "aggregate", `{"metrics":[{"field":"x","op":"p101"}]}`, "parameters.metrics[0].op", "p0 to p100"},
		{"percentile with a fraction", "aggregate", `{"metrics":[{"field":"x","op":"p99.9"}]}`, "parameters.metrics[0].op", "is not one of"},
		{"percentile in upper case", "aggregate", `{"metrics":[{"field":"x","op":"P90"}]}`, "parameters.metrics[0].op", "is not one of"},
		{"p alone", "aggregate", `{"metrics":[{"field":"x","op":"p"}]}`, "parameters.metrics[0].op", "is not one of"},
		{"sum without field", "aggregate", `{"metrics":[{"op":"sum"}]}`, "parameters.metrics[0].field", "is required for sum"},
		{"empty field", "aggregate", `{"metrics":[{"op":"sum","field":""}]}`, "parameters.metrics[0].field", "must not be empty"},
		{"same metric twice", "aggregate", `{"metrics":[{"field":"x","op":"sum"},{"field":"x","op":"sum"}]}`, "parameters.metrics[1]",
			`makes the column "sum_x", which parameters.metrics[0] already makes`},
		{"metric column is a group field", "aggregate", `{"group_by":["count"],"metrics":[{"op":"count"}]}`, "parameters.metrics[0]",
			`makes the column "count", which parameters.group_by[0] already makes`},
		{"group_by twice", "aggregate", `{"group_by":["g","g"],"metrics":[{"op":"count"}]}`, "parameters.group_by[1]", "already grouped by"},
		{"group_by not a list", "aggregate", `{"group_by":"g","metrics":[{"op":"count"}]}`, "parameters.group_by", "must be an array, not a string"},
		{"group_by element not a string", "aggregate", `{"group_by":["g",2],"metrics":[{"op":"count"}]}`, "parameters.group_by[1]", "must be a non-empty string, not 2"},
		{"unknown parameter", "aggregate", `{"groupby":["g"],"metrics":[]}`, "parameters.groupby", "want group_by, metrics"},
		{"unknown metric key", "aggregate", `{"metrics":[{"op":"count","as":"n"}]}`, "parameters.metrics[0].as", "want field, op"},
	})
}
