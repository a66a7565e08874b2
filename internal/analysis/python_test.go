package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// crossCheck computes, in Python, what aggregate computes: statistics.mean,
// median and stdev, and each percentile twice, by the linear interpolation
// formula written out and (for p1..p99) by statistics.quantiles with the
// inclusive method, which is the same definition as NumPy's default.
const crossCheck = `
import json, math, statistics, sys
out = []
for data in json.load(sys.stdin):
    xs = sorted(data["values"])
    n = len(xs)
    r = {"mean": statistics.mean(xs), "median": statistics.median(xs),
         "stdev": statistics.stdev(xs) if n >= 2 else None}
    q = statistics.quantiles(xs, n=100, method="inclusive") if n >= 2 else None
    for p in data["ps"]:
        h = (n - 1) * p / 100
        lo = math.floor(h)
        hi = min(lo + 1, n - 1)
        r["p%d" % p] = xs[lo] + (h - lo) * (xs[hi] - xs[lo])
        if q is not None and 1 <= p <= 99:
            r["q%d" % p] = q[p - 1]
    out.append(r)
json.dump(out, sys.stdout)
`

func python(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no python3 on this host: the cross-check against Python's statistics module needs one")
	return ""
}

func TestStatisticsAgainstPython(t *testing.T) {
	py := python(t)
	ps := []int{0, 1, 5, 10, 25, 33, 50, 67, 75, 90, 95, 99, 100}
	rng := rand.New(rand.NewPCG(1, 2))
	type dataset struct {
		Values []json.Number `json:"values"`
		PS     []int         `json:"ps"`
	}
	var sets []dataset
	for _, n := range []int{1, 2, 3, 4, 7, 10, 101, 1000, 5000} {
		for kind := range 3 {
			d := dataset{PS: ps}
			for range n {
				var s string
				switch kind {
				case 0: // small integers with ties
					s = strconv.Itoa(rng.IntN(20) - 5)
				case 1: // floats spread over magnitudes
					s = strconv.FormatFloat((rng.Float64()-0.3)*math.Pow(10, float64(rng.IntN(8)-2)), 'g', -1, 64)
				default: // amounts around a large mean
					s = strconv.FormatFloat(1e6+rng.NormFloat64()*50, 'f', 2, 64)
				}
				d.Values = append(d.Values, json.Number(s))
			}
			sets = append(sets, d)
		}
	}
	in, err := json.Marshal(sets)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", crossCheck)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outJSON, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.Bytes())
	}
	var want []map[string]*float64
	if err := json.Unmarshal(outJSON, &want); err != nil {
		t.Fatal(err)
	}

	metrics := []string{`{"field":"v","op":"mean"}`, `{"field":"v","op":"median"}`, `{"field":"v","op":"stdev"}`}
	for _, p := range ps {
		metrics = append(metrics, fmt.Sprintf(`{"field":"v","op":"p%d"}`, p))
	}
	params := json.RawMessage(`{"metrics":[` + strings.Join(metrics, ",") + `]}`)
	for i, d := range sets {
		rows := make([]map[string]any, len(d.Values))
		for j, v := range d.Values {
			rows[j] = map[string]any{"v": v}
		}
		res, err := Run("aggregate", rows, params)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Result.([]map[string]any)[0]
		check := func(name string, g any, w *float64) {
			t.Helper()
			if w == nil {
				if g != nil {
					t.Errorf("set %d (n=%d) %s = %v, want null", i, len(d.Values), name, g)
				}
				return
			}
			gf, ok := asNumber(g, false)
			if !ok || !close(gf.float(), *w, 1e-9) {
				t.Errorf("set %d (n=%d) %s = %v, want %v (Python)", i, len(d.Values), name, g, *w)
			}
		}
		check("mean", got["mean_v"], want[i]["mean"])
		check("median", got["median_v"], want[i]["median"])
		check("stdev", got["stdev_v"], want[i]["stdev"])
		for _, p := range ps {
			g := got[fmt.Sprintf("p%d_v", p)]
			check(fmt.Sprintf("p%d (formula)", p), g, want[i][fmt.Sprintf("p%d", p)])
			if w, ok := want[i][fmt.Sprintf("q%d", p)]; ok {
				check(fmt.Sprintf("p%d (statistics.quantiles)", p), g, w)
			}
		}
	}
}

// close compares with a relative tolerance, and an absolute one near 0.
func close(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
