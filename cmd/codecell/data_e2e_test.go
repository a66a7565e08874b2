package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// dataCode computes a groupby, a merge and a pivot on 100,000 rows of
// seeded data and prints them as JSON: the same code must print the same
// in the sandbox, with the preloaded stack, as in a plain python3.
const dataCode = `import json
import numpy as np, pandas as pd
rng = np.random.default_rng(29)
n = 100_000
df = pd.DataFrame({"k": rng.integers(0, 50, n), "g": rng.choice(list("abcde"), n), "v": rng.normal(100, 15, n)})
names = pd.DataFrame({"k": np.arange(50), "name": ["n%02d" % i for i in range(50)]})
by = df.groupby("k")["v"].agg(["sum", "mean", "count"]).round(6)
merged = df.merge(names, on="k").groupby("name")["v"].sum().round(6)
pivot = df.pivot_table(index="g", columns="k", values="v", aggfunc="mean").round(6)
print(json.dumps({"by": by.to_dict(orient="split"), "merged": merged.to_dict(),
                  "pivot": pivot.to_dict(orient="split"), "corr": round(float(df["k"].corr(df["v"])), 9)}, sort_keys=True))
`

func requireDataStack(t *testing.T) {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import numpy, pandas, matplotlib").Run() != nil {
		t.Skip("the data stack is not installed (make deps installs it)")
	}
}

// TestDataWork drives the built binary as a data user would: numbers equal
// to a plain python3's on 100,000 rows, frames as compact tables, small
// frames as data, display() of a frame.
func TestDataWork(t *testing.T) {
	requireProduction(t)
	requireDataStack(t)
	cfgPath, dataDir := testDirs(t, `{"sandbox": {"isolation": "production", "timeout": "120s"}}`)
	cs := serveStdio(t, cfgPath, dataDir, nil)
	defer cs.Close()

	t.Run("the same numbers as plain python3", func(t *testing.T) {
		want, err := exec.Command("/usr/bin/python3", "-c", dataCode).Output()
		if err != nil {
			t.Fatal(err)
		}
		_, out := call(t, cs, map[string]any{"code": dataCode})
		if !out.OK {
			t.Fatalf("%+v", out.Error)
		}
		if out.Stdout != string(want) {
			t.Fatalf("the sandbox printed\n%.500s\nplain python3\n%.500s", out.Stdout, want)
		}
	})

	t.Run("a large frame is a compact table", func(t *testing.T) {
		_, out := call(t, cs, map[string]any{"code": "import pandas as pd, numpy as np\n" +
			"pd.DataFrame({'k': np.arange(100_000), 'name': ['row%d' % i for i in range(100_000)], 'v': np.arange(100_000) / 4})"})
		text, _ := out.Result.(string)
		for _, want := range []string{"DataFrame: 100000 rows x 3 columns", "dtypes: k int64, name object, v float64", "row0", "row99999", "..."} {
			if !strings.Contains(text, want) {
				t.Errorf("result lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "row50000") || len(text) > 2000 || out.Table != nil {
			t.Errorf("not compact (%d characters, table %v):\n%s", len(text), out.Table != nil, text)
		}
	})

	t.Run("a wide frame elides columns", func(t *testing.T) {
		_, out := call(t, cs, map[string]any{"code": "import pandas as pd\npd.DataFrame({'c%d' % i: range(3) for i in range(60)})"})
		text, _ := out.Result.(string)
		if !strings.Contains(text, "3 rows x 60 columns") || !strings.Contains(text, "(40 more)") || strings.Contains(text, "c30 ") || len(text) > 3000 {
			t.Errorf("wide frame:\n%s", text)
		}
	})

	t.Run("a small frame is also data", func(t *testing.T) {
		_, out := call(t, cs, map[string]any{"code": "import pandas as pd\ndf = pd.DataFrame({'city': ['Oslo', 'Lima'], 'pop': [0.7, 10.0]})\ndf"})
		got, _ := json.Marshal(out.Table)
		if !out.OK || string(got) != `{"columns":["city","pop"],"data":[["Oslo",0.7],["Lima",10]],"index":[0,1]}` {
			t.Fatalf("table %s, result %v, error %+v", got, out.Result, out.Error)
		}
		_, out = call(t, cs, map[string]any{"code": "import pandas as pd\nresult = pd.Series([1.5, 2.5], name='x')"})
		if text, _ := out.Result.(string); !strings.HasPrefix(text, "Series 'x': 2 rows, dtype float64") || out.Table == nil {
			t.Fatalf("series: %q %v", text, out.Table)
		}
	})

	t.Run("display shows a frame as its table", func(t *testing.T) {
		_, out := call(t, cs, map[string]any{"code": "import pandas as pd\ndisplay(pd.DataFrame({'a': range(1000)}), 'done')"})
		if !out.OK || !strings.HasPrefix(out.Stdout, "DataFrame: 1000 rows x 1 columns\n") || !strings.HasSuffix(out.Stdout, "done\n") {
			t.Fatalf("%q %+v", out.Stdout, out.Error)
		}
	})
}
