package server

import "github.com/codecell/codecell/internal/config"

// allTools lists every toolset in cfg, as `"toolsets": ["all"]` does: most
// tests call tools the lean default does not list.
func allTools(cfg *config.Config) *config.Config {
	cfg.Toolsets = append([]string(nil), config.AllToolsets...)
	return cfg
}
