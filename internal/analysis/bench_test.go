package analysis

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// BenchmarkAggregateMillion groups a million rows, as the loaders produce
// them (amounts as json.Number), into 100 groups with count, sum, mean and
// p90. The rows take about 300 MB; they are built once, before timing.
func BenchmarkAggregateMillion(b *testing.B) {
	const n = 1_000_000
	groups := make([]string, 100)
	for i := range groups {
		groups[i] = fmt.Sprintf("region-%02d", i)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{
			"region": groups[rng.IntN(len(groups))],
			"amount": json.Number(strconv.FormatFloat(float64(rng.IntN(1_000_000))/100, 'f', -1, 64)),
		}
	}
	a, err := Compile("aggregate", json.RawMessage(`{"group_by":["region"],"metrics":[{"op":"count"},
		{"field":"amount","op":"sum"},{"field":"amount","op":"mean"},{"field":"amount","op":"p90"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := a.Run(rows); err != nil || res.RowsOut != len(groups) {
			b.Fatalf("%d groups, %v", res.RowsOut, err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
