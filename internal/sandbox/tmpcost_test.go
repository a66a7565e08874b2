package sandbox

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func onCPU(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/schedstat")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v / 1e6
}

func TestTmpStartCost(t *testing.T) {
	m, ws := newTestManager(t, Production, Limits{}, 0)
	if err := m.PrepareDir(ws); err != nil {
		t.Fatal(err)
	}
	tg, _ := m.unboundKey(m.defaultTarget(ws))
	var walls, cpus []float64
	for range 20 {
		t0 := time.Now()
		z, err := m.startZygote(context.Background(), tg)
		if err != nil {
			t.Fatal(err)
		}
		walls = append(walls, float64(time.Since(t0).Microseconds())/1000)
		bw := strconv.Itoa(z.cmd.Process.Pid)
		c := onCPU(bw)
		b, _ := os.ReadFile("/proc/" + bw + "/task/" + bw + "/children")
		for _, p := range strings.Fields(string(b)) {
			c += onCPU(p)
			b2, _ := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
			for _, p2 := range strings.Fields(string(b2)) {
				c += onCPU(p2)
			}
		}
		cpus = append(cpus, c)
		z.kill()
	}
	sort.Float64s(walls)
	sort.Float64s(cpus)
	t.Logf("wall p50 %.1f ms (min %.1f), sandbox cpu p50 %.1f ms (min %.1f)", walls[len(walls)/2], walls[0], cpus[len(cpus)/2], cpus[0])
}
