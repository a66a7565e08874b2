package metrics

import (
	"maps"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseText(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want map[string]float64
	}{
		{"empty", "", map[string]float64{}},
		{"counter without labels", "# TYPE a_total counter\na_total 3\n", map[string]float64{"a_total": 3}},
		{
			"labels sorted and quoted",
			"# TYPE c_total counter\nc_total{tool=\"echo\",server=\"fake\",outcome=\"ok\"} 2\nc_total{tool=\"\",server=\"\",outcome=\"unknown_tool\"} 1\n",
			map[string]float64{
				`c_total{outcome="ok",server="fake",tool="echo"}`:   2,
				`c_total{outcome="unknown_tool",server="",tool=""}`: 1,
			},
		},
		{"gauge", "# TYPE g gauge\ng{state=\"idle\"} 0.5\n", map[string]float64{`g{state="idle"}`: 0.5}},
		{"untyped", "u 7\n", map[string]float64{"u": 7}},
		{
			"histogram",
			"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1.5\nh_count 2\n",
			map[string]float64{"h_count": 2, "h_sum": 1.5},
		},
		{
			"summary with labels",
			"# TYPE s summary\ns{x=\"y\",quantile=\"0.5\"} 1\ns_sum{x=\"y\"} 4\ns_count{x=\"y\"} 3\n",
			map[string]float64{`s_count{x="y"}`: 3, `s_sum{x="y"}`: 4},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseText(strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := ParseText(strings.NewReader("a_total{ 3\n")); err == nil {
		t.Error("malformed text parsed without an error")
	}
}

// TestParseTextReadsHandler: what Handler serves parses back to what was
// recorded.
func TestParseTextReadsHandler(t *testing.T) {
	m := New(Options{})
	m.Execution("", 10*time.Millisecond, 300, 100)
	m.Execution("ValueError", 30*time.Millisecond, 0, 0)
	m.ToolCall("fake", "echo", ToolOK)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got, err := ParseText(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`codecell_executions_total{outcome="ok"}`:                           1,
		`codecell_executions_total{outcome="ValueError"}`:                   1,
		"codecell_execution_duration_seconds_count":                         2,
		"codecell_execution_duration_seconds_sum":                           0.04,
		`codecell_tool_calls_total{outcome="ok",server="fake",tool="echo"}`: 1,
		"codecell_tool_result_bytes_total":                                  300,
		"codecell_returned_bytes_total":                                     100,
		"codecell_context_bytes_saved_total":                                200,
	}
	if !maps.EqualFunc(got, want, func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }) {
		t.Errorf("got %v, want %v", got, want)
	}
}
