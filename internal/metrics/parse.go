package metrics

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ParseText reads metrics in the Prometheus text format, as Handler serves
// them, into a map from series to value, for tests and tools that check
// values rather than names. A series is keyed name{labels}, the labels
// written name="value", sorted and joined by commas, and plain name when it
// has none: codecell_tool_calls_total{outcome="ok",server="fake",tool="echo"}.
// Counters, gauges and untyped metrics give their value; a histogram or a
// summary gives name_count and name_sum (with the labels after the suffix),
// not its buckets or quantiles.
func ParseText(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			var suffix string
			if len(labels) > 0 {
				suffix = "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[name+suffix] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[name+suffix] = m.Gauge.GetValue()
			case m.Untyped != nil:
				out[name+suffix] = m.Untyped.GetValue()
			case m.Histogram != nil:
				out[name+"_count"+suffix] = float64(m.Histogram.GetSampleCount())
				out[name+"_sum"+suffix] = m.Histogram.GetSampleSum()
			case m.Summary != nil:
				out[name+"_count"+suffix] = float64(m.Summary.GetSampleCount())
				out[name+"_sum"+suffix] = m.Summary.GetSampleSum()
			}
		}
	}
	return out, nil
}
