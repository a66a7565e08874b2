package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/codecell/codecell/internal/proc"
)

// dataPackages are the packages of the data stack make installs from
// Debian, by import name.
var dataPackages = []string{"numpy", "pandas", "scipy", "matplotlib", "sklearn", "statsmodels", "seaborn", "openpyxl"}

// dataStackScript prints, as JSON, the version of each package named in
// argv[1] that imports, and then imports the preload (argv[2]) as a fork
// server would, timing it and measuring what it holds.
const dataStackScript = `import importlib, json, sys, time
def rss():
    for l in open("/proc/self/status"):
        if l.startswith("VmRSS:"): return int(l.split()[1]) * 1024
    return 0
out = {"versions": {}, "failed": {}}
for m in sys.argv[1].split(","):
    try: out["versions"][m] = getattr(importlib.import_module(m), "__version__", "?")
    except Exception as e: out["versions"][m] = None
base = rss()
t = time.perf_counter()
for m in filter(None, sys.argv[2].split(",")):
    try: importlib.import_module(m)
    except BaseException as e: out["failed"][m] = "%s: %s" % (type(e).__name__, e)
out["seconds"], out["rss"] = time.perf_counter() - t, rss()
print(json.dumps(out))`

// dataStack says which of the data stack's packages the sandbox's Python
// has, and what sandbox.preload costs each warm sandbox. The preload is
// measured in a process that imported the stack's packages first, so its
// figures are an upper bound of the import alone.
func dataStack(ctx context.Context, python string, preload []string) (stack, pre string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// Two processes: one for the versions, one for a clean preload.
	var versions struct {
		Versions map[string]*string `json:"versions"`
	}
	out, err := proc.Command(ctx, python, "-I", "-c", dataStackScript, strings.Join(dataPackages, ","), "").Output()
	if err != nil || json.Unmarshal(out, &versions) != nil {
		return fmt.Sprintf("could not ask %s: %v", python, err), "-"
	}
	var have, missing []string
	for _, p := range dataPackages {
		if v := versions.Versions[p]; v != nil {
			have = append(have, p+" "+*v)
		} else {
			missing = append(missing, p)
		}
	}
	stack = strings.Join(have, ", ")
	if len(missing) > 0 {
		stack += "; MISSING " + strings.Join(missing, ", ") + " (make deps installs them from Debian)"
	}
	if len(preload) == 0 {
		return stack, "none (sandbox.preload is []): every execution imports what it uses"
	}
	var p struct {
		Failed  map[string]string `json:"failed"`
		Seconds float64           `json:"seconds"`
		RSS     int64             `json:"rss"`
	}
	out, err = proc.Command(ctx, python, "-I", "-c", dataStackScript, "", strings.Join(preload, ",")).Output()
	if err != nil || json.Unmarshal(out, &p) != nil {
		return stack, fmt.Sprintf("could not try it: %v", err)
	}
	pre = fmt.Sprintf("%s: %.0f ms to import, %d MiB in each preloaded sandbox's fork server; code that imports only the standard library runs in a lean sandbox",
		strings.Join(preload, ", "), p.Seconds*1000, p.RSS>>20)
	for m, e := range p.Failed {
		pre += fmt.Sprintf("; %s FAILS (%s): executions import it themselves", m, e)
	}
	return stack, pre
}
