package config_test

import (
	"fmt"

	"github.com/codecell/codecell/internal/config"
)

func ExampleParse() {
	env := func(name string) string {
		return map[string]string{"GITHUB_TOKEN": "ghp-example"}[name]
	}
	data := []byte(`{
	  "mcpServers": {
	    "github": {"url": "https://api.example.test/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
	  },
	  "sandbox": {"memory": "1GiB", "timeout": 10}
	}`)
	c, err := config.Parse("codecell.json", data, env)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.MCPServers["github"].Transport, config.FormatSize(c.Sandbox.Memory), c.Sandbox.Timeout, c.Toolsets[0])
	// Output: streamable-http 1GiB 10s default
}

func ExampleParse_errors() {
	data := []byte(`{
	  "sandbox": {"memory": "12XB", "memroy": "1GiB", "timeout": "2m", "maxTimeout": "1m"},
	  "mcpServers": {"github": {"url": "ftp://example.test", "headers": {"Authorization": "${GITHUB_TOKEN}"}}}
	}`)
	_, err := config.Parse("codecell.json", data, nil)
	fmt.Println(err)
	// Output:
	// codecell.json: sandbox.memory: "12XB" is not a size (use e.g. 512MiB)
	// codecell.json: sandbox.memroy: unknown key (did you mean "memory"?)
	// codecell.json: mcpServers.github.headers.Authorization: variable GITHUB_TOKEN is unset or empty
	// codecell.json: mcpServers.github.url: must be an http:// or https:// URL with a host
	// codecell.json: sandbox.maxTimeout: 1m is less than timeout (2m)
}
