package metrics

import "github.com/prometheus/client_golang/prometheus"

// The scrape-time collectors read their state once per scrape, so the series
// are as fresh as the scrape and cost nothing between scrapes.

var (
	poolSandboxesDesc = prometheus.NewDesc("codecell_pool_sandboxes",
		"Sandboxes of the warm pool by state: idle (ready for an execution), starting, busy, unbound (started for no namespace yet, ready or starting).", []string{"state"}, nil)
	poolTargetDesc = prometheus.NewDesc("codecell_pool_target_size",
		"Idle sandboxes kept warm per workspace.", nil, nil)
	upstreamUpDesc = prometheus.NewDesc("codecell_upstream_up",
		"1 when the upstream MCP server is connected, else 0.", []string{"server"}, nil)
	upstreamToolsDesc = prometheus.NewDesc("codecell_upstream_tools",
		"Tools the upstream MCP server offers.", []string{"server"}, nil)
)

// funcCollector is a collector whose series come from one function call per
// scrape.
type funcCollector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c funcCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c funcCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

func poolCollector(pool func() Pool) prometheus.Collector {
	return funcCollector{
		descs: []*prometheus.Desc{poolSandboxesDesc, poolTargetDesc},
		collect: func(ch chan<- prometheus.Metric) {
			p := pool()
			ch <- prometheus.MustNewConstMetric(poolSandboxesDesc, prometheus.GaugeValue, float64(p.Idle), "idle")
			ch <- prometheus.MustNewConstMetric(poolSandboxesDesc, prometheus.GaugeValue, float64(p.Starting), "starting")
			ch <- prometheus.MustNewConstMetric(poolSandboxesDesc, prometheus.GaugeValue, float64(p.Busy), "busy")
			ch <- prometheus.MustNewConstMetric(poolSandboxesDesc, prometheus.GaugeValue, float64(p.Unbound), "unbound")
			ch <- prometheus.MustNewConstMetric(poolTargetDesc, prometheus.GaugeValue, float64(p.Size))
		},
	}
}

func upstreamCollector(upstreams func() []Upstream) prometheus.Collector {
	return funcCollector{
		descs: []*prometheus.Desc{upstreamUpDesc, upstreamToolsDesc},
		collect: func(ch chan<- prometheus.Metric) {
			seen := map[string]bool{}
			for _, u := range upstreams() {
				// Two series with one label set would fail the scrape;
				// names are unique in the config, but do not trust that here.
				if seen[u.Name] {
					continue
				}
				seen[u.Name] = true
				up := 0.0
				if u.Up {
					up = 1
				}
				ch <- prometheus.MustNewConstMetric(upstreamUpDesc, prometheus.GaugeValue, up, u.Name)
				ch <- prometheus.MustNewConstMetric(upstreamToolsDesc, prometheus.GaugeValue, float64(u.Tools), u.Name)
			}
		},
	}
}
