package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// envOf returns a lookup function over m, standing in for os.Getenv.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// problemsOf unpacks the *Error values joined in err.
func problemsOf(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]*Error, 0, len(errs))
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %q (%T) is not a *config.Error", e, e)
		}
		out = append(out, ce)
	}
	return out
}

func TestDefault(t *testing.T) {
	c := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"File", c.File, ""},
		{"servers", len(c.MCPServers), 0},
		{"isolation", c.Sandbox.Isolation, "production"},
		{"python", c.Sandbox.Python, "/usr/bin/python3"},
		{"timeout", c.Sandbox.Timeout, 30 * time.Second},
		{"maxTimeout", c.Sandbox.MaxTimeout, 120 * time.Second},
		{"memory", c.Sandbox.Memory, int64(512 << 20)},
		{"pids", c.Sandbox.Pids, 128},
		{"cpuTime", c.Sandbox.CPUTime, 60 * time.Second},
		{"output", c.Sandbox.Output, int64(1 << 20)},
		{"fileSize", c.Sandbox.FileSize, int64(256 << 20)},
		{"openFiles", c.Sandbox.OpenFiles, 256},
		{"tmpSize", c.Sandbox.TmpSize, int64(64 << 20)},
		{"workspaceQuota", c.Sandbox.WorkspaceQuota, int64(1 << 30)},
		{"workspaceEntries", c.Sandbox.WorkspaceEntries, 250000},
		{"workspaceImages", c.Sandbox.WorkspaceImages, "auto"},
		{"maxToolCalls", c.Sandbox.MaxToolCalls, 1000},
		{"pool", c.Sandbox.Pool, 4},
		{"network", c.Sandbox.Network.Mode, "none"},
		{"wheelhouse", c.Sandbox.Wheelhouse, ""},
		{"allow", c.Policy.Allow, []string{"*"}},
		{"deny", len(c.Policy.Deny), 0},
		{"pii", c.PII.Mode, "tokenize"},
		{"tokens", len(c.HTTP.Tokens), 0},
		{"idleTimeout", c.Sessions.IdleTimeout, 30 * time.Minute},
		{"maxPerNamespace", c.Sessions.MaxPerNamespace, 8},
		{"toolsets", c.Toolsets, []string{"default"}},
		{"answerBudget", c.Sandbox.AnswerBudget, 20_000},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	c.Toolsets[0] = "changed"
	if Default().Toolsets[0] != "default" || DefaultToolsets[0] != "default" {
		t.Error("Default shares its Toolsets slice")
	}
}

func TestParseEmpty(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"empty", ""},
		{"white space", " \n\t\n"},
		{"empty object", "{}"},
		{"byte-order mark", "\xef\xbb\xbf{}"},
		{"nulls keep defaults", `{"sandbox": null, "policy": {"allow": null}, "toolsets": null}`},
		{"schema key", `{"$schema": "https://example.test/schema.json"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("codecell.json", []byte(tc.data), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			want.File = "codecell.json"
			if !reflect.DeepEqual(c, want) {
				t.Errorf("got %+v\nwant %+v", c, want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Run("no file means defaults", func(t *testing.T) {
		c, err := Load("", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("Load(\"\") = %+v, want Default()", c)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := Load(filepath.Join(t.TempDir(), "nope.json"), nil)
		if err == nil || !strings.Contains(err.Error(), "nope.json") {
			t.Errorf("err = %v, want one naming the file", err)
		}
	})
	t.Run("file name in errors", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "bad.json")
		if err := os.WriteFile(p, []byte(`{"pool": 1}`), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p, nil)
		if want := p + `: pool: unknown key`; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("err = %v, want prefix %q", err, want)
		}
	})
}

// TestSpecExample parses testdata/spec-example.json, the complete example of
// docs/config.md, verbatim.
func TestSpecExample(t *testing.T) {
	const token = "0123456789abcdef-team-a"
	env := envOf(map[string]string{"REMOTE_TOKEN": "remote-secret", "CODECELL_TOKEN_A": token})
	c, err := Load("testdata/spec-example.json", env)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.File = "testdata/spec-example.json"
	want.MCPServers = map[string]Server{
		"everything": {
			Name: "everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"},
			Env: map[string]string{"K": "V"}, Cwd: "/some/dir", Transport: "stdio", Timeout: 60 * time.Second, StartupTimeout: 60 * time.Second,
		},
		"remote": {
			Name: "remote", URL: "https://example.test/mcp", Headers: map[string]string{"Authorization": "Bearer remote-secret"},
			Transport: "streamable-http", Timeout: 60 * time.Second, StartupTimeout: 60 * time.Second,
		},
		"paused": {Name: "paused", Command: "some-server", Disabled: true, Transport: "stdio", Timeout: 60 * time.Second, StartupTimeout: 90 * time.Second},
	}
	want.Policy = Policy{Allow: []string{"*"}, Deny: []string{"everything.get-env"}, ApprovalTimeout: 10 * time.Minute}
	want.HTTP = HTTP{Tokens: map[string]string{token: "team-a"}, AllowedOrigins: []string{}}
	want.Sandbox.Pids = 64 // the example's own value, not the default
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
}

func TestParseFull(t *testing.T) {
	const data = `{
  "$schema": "https://example.test/codecell.schema.json",
  "mcpServers": {
    "local": {"command": "/usr/bin/srv", "args": ["--dir", "${DATA_DIR}/x"], "env": {"${KEY_NAME}": "v", "PLAIN": "$$literal $NOBRACE"}, "cwd": "/srv", "timeout": 5, "startupTimeout": "2m"},
    "sse_1": {"url": "http://127.0.0.1:8080/sse", "transport": "sse", "headers": {"X-Api-Key": "${API_KEY}"}, "timeout": "1m30s"},
    "pasted": {"type": "http", "url": "https://mcp.example.test/mcp"},
    "off": {"command": "x", "type": "stdio", "disabled": true}
  },
  "sandbox": {
    "isolation": "hardened", "python": "/opt/py/bin/python3", "timeout": 10, "maxTimeout": "10m",
    "memory": 1073741824, "pids": 128, "cpuTime": "2m", "output": "64KiB", "fileSize": "10MB",
    "openFiles": 1024, "tmpSize": "1.5GiB", "workspaceQuota": "2 GiB", "workspaceEntries": 5000, "workspaceImages": "off", "maxToolCalls": 50, "pool": 0, "idlePool": 0, "preload": ["numpy", "scipy.stats"], "answerBudget": 5000,
    "namespaceIdle": "90s", "warmLimit": 4, "warmMemory": "512MiB", "concurrency": 6, "namespaceConcurrency": 3,
    "network": {"mode": "allowlist", "allow": ["PyPI.org", "*.pythonhosted.org"]},
    "wheelhouse": "/var/wheels"
  },
  "policy": {"allow": ["github.*", "fs.read_?ile"], "deny": []},
  "pii": {"mode": "off", "phoneRegion": "gb", "allowRestore": true, "custom": [{"kind": "EMPLOYEE_ID", "pattern": "E\\d{6}"}]},
  "http": {
    "tokens": {"${TOKEN_A}": "team-a", "literal-token-0123456789": "default"},
    "allowedOrigins": ["HTTPS://App.Example:443/", "http://localhost:3000"]
  },
  "sessions": {"idleTimeout": "1h", "maxPerNamespace": 2},
  "store": {"url": "postgres://codecell:${PG_PASSWORD}@db.internal/codecell"},
  "toolsets": ["stats", "exec", "discovery", "exec"]
}`
	env := envOf(map[string]string{
		"DATA_DIR": "/data", "KEY_NAME": "MY_KEY", "API_KEY": "k-123", "TOKEN_A": "aaaaaaaaaaaaaaaaaaaa",
		"PG_PASSWORD": "pw",
	})
	c, err := Parse("full.json", []byte(data), env)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		File: "full.json",
		MCPServers: map[string]Server{
			"local": {
				Name: "local", Command: "/usr/bin/srv", Args: []string{"--dir", "/data/x"},
				Env: map[string]string{"MY_KEY": "v", "PLAIN": "$$literal $NOBRACE"}, Cwd: "/srv",
				Transport: "stdio", Timeout: 5 * time.Second, StartupTimeout: 2 * time.Minute,
			},
			"sse_1": {
				Name: "sse_1", URL: "http://127.0.0.1:8080/sse", Headers: map[string]string{"X-Api-Key": "k-123"},
				Transport: "sse", Timeout: 90 * time.Second, StartupTimeout: 60 * time.Second,
			},
			"pasted": {Name: "pasted", URL: "https://mcp.example.test/mcp", Transport: "streamable-http", Timeout: 60 * time.Second, StartupTimeout: 60 * time.Second},
			"off":    {Name: "off", Command: "x", Transport: "stdio", Disabled: true, Timeout: 60 * time.Second, StartupTimeout: 60 * time.Second},
		},
		Sandbox: Sandbox{
			Isolation: "hardened", Python: "/opt/py/bin/python3", Timeout: 10 * time.Second, MaxTimeout: 10 * time.Minute, TaskAfter: 5 * time.Second, TaskTimeout: time.Hour,
			Memory: 1 << 30, Pids: 128, CPUTime: 2 * time.Minute, Output: 64 << 10, FileSize: 10_000_000,
			OpenFiles: 1024, TmpSize: 3 << 29, WorkspaceQuota: 2 << 30, WorkspaceEntries: 5000, WorkspaceImages: "off", MaxToolCalls: 50, Pool: 0, IdlePool: 0, Preload: []string{"numpy", "scipy.stats"}, AnswerBudget: 5000,
			NamespaceIdle: 90 * time.Second, SparePool: 3, WarmLimit: 4, WarmMemory: 512 << 20, Concurrency: 6, NamespaceConcurrency: 3,
			Network:    Network{Mode: "allowlist", Allow: []string{"pypi.org", "*.pythonhosted.org"}, MaxConnections: DefaultMaxConnections, MaxBytes: DefaultMaxBytes},
			Wheelhouse: "/var/wheels",
		},
		Policy: Policy{Allow: []string{"github.*", "fs.read_?ile"}, Deny: []string{}, ApprovalTimeout: 10 * time.Minute},
		PII:    PII{Mode: "off", Custom: []CustomPII{{Kind: "EMPLOYEE_ID", Pattern: `E\d{6}`}}, PhoneRegion: "GB", AllowRestore: true},
		HTTP: HTTP{
			Tokens:         map[string]string{"aaaaaaaaaaaaaaaaaaaa": "team-a", "literal-token-0123456789": "default"},
			AllowedOrigins: []string{"https://app.example", "http://localhost:3000"},
		},
		Sessions: Sessions{IdleTimeout: time.Hour, MaxPerNamespace: 2},
		Store:    Store{URL: "postgres://codecell:pw@db.internal/codecell"},
		Toolsets: []string{"exec", "discovery", "stats"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
}

// want is one expected problem: its key path and a part of its reason.
type want struct{ path, reason string }

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		env  map[string]string
		want []want
	}{
		// Types and syntax-level shapes.
		{"top level not an object", `[]`, nil, []want{{"", "must be a JSON object, not an array"}}},
		{"top level null", `null`, nil, []want{{"", "must be a JSON object, not null"}}},
		{"section not an object", `{"sandbox": "big"}`, nil, []want{{"sandbox", "must be an object, not a string"}}},
		{"servers not an object", `{"mcpServers": []}`, nil, []want{{"mcpServers", "must be an object"}}},
		{"server not an object", `{"mcpServers": {"a": "npx"}}`, nil, []want{{"mcpServers.a", "must be an object, not a string"}}},
		{"string for int", `{"sandbox": {"pids": "64"}}`, nil, []want{{"sandbox.pids", "must be a number, not a string"}}},
		{"fraction for int", `{"sandbox": {"pids": 4.5}}`, nil, []want{{"sandbox.pids", "4.5 is not a whole number"}}},
		{"huge int", `{"sandbox": {"openFiles": 1e12}}`, nil, []want{{"sandbox.openFiles", "out of range"}}},
		{"bool as string", `{"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}`, nil, []want{{"mcpServers.a.disabled", "must be true or false"}}},
		{"args not strings", `{"mcpServers": {"a": {"command": "x", "args": ["a", 1]}}}`, nil, []want{{"mcpServers.a.args[1]", "must be a string, not a number"}}},
		{"env value not string", `{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}`, nil, []want{{"mcpServers.a.env.K", "must be a string"}}},
		{"toolsets not a list", `{"toolsets": "all"}`, nil, []want{{"toolsets", "must be an array"}}},
		{"custom not a list", `{"pii": {"custom": {}}}`, nil, []want{{"pii.custom", "must be an array"}}},
		{"phone region", `{"pii": {"phoneRegion": "XX"}}`, nil, []want{{"pii.phoneRegion", "not a region"}}},

		// Unknown and duplicate keys.
		{"unknown top-level key", `{"sandbx": {}}`, nil, []want{{"sandbx", `unknown key (did you mean "sandbox"?)`}}},
		{"unknown nested key", `{"sandbox": {"memroy": "1GiB"}}`, nil, []want{{"sandbox.memroy", `did you mean "memory"?`}}},
		{"wrong case key", `{"sandbox": {"MaxTimeout": "1m"}}`, nil, []want{{"sandbox.MaxTimeout", `did you mean "maxTimeout"?`}}},
		{"unknown key lists known", `{"sandbox": {"network": {"proxy": 1}}}`, nil, []want{{"sandbox.network.proxy", "known keys: allow, headers, hosts"}}},
		{"network rule", `{"sandbox": {"network": {"mode": "allowlist", "allow": ["api.example.com:99999"]}}}`, nil, []want{{"sandbox.network.allow[0]", "is not a port"}}},
		{"network header for no rule", `{"sandbox": {"network": {"mode": "allowlist", "allow": ["api.example.com:8443"], "headers": {"api.example.com": {"Authorization": "x"}}}}}`, nil, []want{{`sandbox.network.headers["api.example.com"]`, "not a host the allow list admits on port 443"}}},
		{"network header from a missing variable", `{"sandbox": {"network": {"mode": "allowlist", "allow": ["api.example.com"], "headers": {"api.example.com": {"Authorization": "Bearer ${NO_SUCH_TOKEN_VAR}"}}}}}`, nil, []want{{`sandbox.network.headers["api.example.com"].Authorization`, "NO_SUCH_TOKEN_VAR"}}},
		{"network pin to loopback", `{"sandbox": {"network": {"mode": "allowlist", "allow": ["db.example.com"], "hosts": {"db.example.com": ["127.0.0.1"]}}}}`, nil, []want{{`sandbox.network.hosts["db.example.com"][0]`, "loopback"}}},
		{"network off with rules", `{"sandbox": {"network": {"hosts": {"db.example.com": ["10.0.0.1"]}}}}`, nil, []want{{"sandbox.network.hosts", `applies only with mode "allowlist"`}}},
		{"network namespace name", `{"sandbox": {"network": {"mode": "allowlist", "namespaces": {"Team A": {"allow": []}}}}}`, nil, []want{{`sandbox.network.namespaces["Team A"]`, "not a namespace name"}}},
		{"spares past the warm bound", `{"sandbox": {"warmLimit": 4, "sparePool": 5}}`, nil, []want{{"sandbox.sparePool", "above the maximum 4"}}},
		{"network bytes", `{"sandbox": {"network": {"mode": "allowlist", "maxBytes": "1KiB"}}}`, nil, []want{{"sandbox.network.maxBytes", "below the minimum"}}},
		{"unknown server key", `{"mcpServers": {"gh": {"comand": "x"}}}`, nil, []want{
			{"mcpServers.gh.comand", `did you mean "command"?`},
			{"mcpServers.gh", "needs a command"},
		}},
		{"unknown custom pii key", `{"pii": {"custom": [{"kind": "X", "regex": "a"}]}}`, nil, []want{
			{"pii.custom[0].regex", "unknown key"},
			{"pii.custom[0].pattern", "is empty"},
		}},
		{"odd key quoted", `{"sandbox": {"mem ory": 1}}`, nil, []want{{`sandbox["mem ory"]`, "unknown key"}}},
		{"duplicate key", `{"sandbox": {"pids": 8, "pids": 9}}`, nil, []want{{"sandbox.pids", "duplicate key"}}},
		{"duplicate server", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, nil, []want{{"mcpServers.a", "duplicate server name"}}},

		// Variables.
		{"missing variable", `{"mcpServers": {"r": {"url": "https://x.test", "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}}}`, nil,
			[]want{{"mcpServers.r.headers.Authorization", "variable REMOTE_TOKEN is unset or empty"}}},
		{"empty variable", `{"sandbox": {"python": "${PY}"}}`, map[string]string{"PY": ""}, []want{{"sandbox.python", "variable PY is unset or empty"}}},
		{"several missing", `{"sandbox": {"python": "${A}/${B}"}}`, nil, []want{{"sandbox.python", "variables A, B are unset or empty"}}},
		{"missing in env key", `{"mcpServers": {"a": {"command": "x", "env": {"${K}": "v"}}}}`, nil, []want{{"mcpServers.a.env[\"${K}\"]", "in the key: variable K"}}},
		{"missing in token", `{"http": {"tokens": {"${TOK}": "team-a"}}}`, nil, []want{{"http.tokens", `namespace "team-a": in the token: variable TOK`}}},
		{"unterminated reference", `{"sandbox": {"python": "/x/${HOME"}}`, nil, []want{{"sandbox.python", "unterminated"}}},
		{"bad reference", `{"sandbox": {"python": "${A:-/usr}"}}`, nil, []want{{"sandbox.python", "is not a variable reference"}}},
		{"missing variable in size", `{"sandbox": {"memory": "${MEM}"}}`, nil, []want{{"sandbox.memory", "variable MEM"}}},

		// Sizes and durations.
		{"bad size", `{"sandbox": {"memory": "12XB"}}`, nil, []want{{"sandbox.memory", `"12XB" is not a size (use e.g. 512MiB)`}}},
		{"negative size", `{"sandbox": {"memory": -1}}`, nil, []want{{"sandbox.memory", "not a size"}}},
		{"size below minimum", `{"sandbox": {"memory": "16MiB"}}`, nil, []want{{"sandbox.memory", "16MiB is below the minimum 32MiB"}}},
		{"size wrong type", `{"sandbox": {"output": true}}`, nil, []want{{"sandbox.output", "must be a size"}}},
		{"output below minimum", `{"sandbox": {"output": 512}}`, nil, []want{{"sandbox.output", "below the minimum 1KiB"}}},
		{"fileSize below minimum", `{"sandbox": {"fileSize": "1000"}}`, nil, []want{{"sandbox.fileSize", "below the minimum 1KiB"}}},
		{"tmpSize below minimum", `{"sandbox": {"tmpSize": "1KiB"}}`, nil, []want{{"sandbox.tmpSize", "below the minimum 1MiB"}}},
		{"quota below minimum", `{"sandbox": {"workspaceQuota": 0}}`, nil, []want{{"sandbox.workspaceQuota", "0B is below the minimum 1MiB"}}},
		{"entry cap below minimum", `{"sandbox": {"workspaceEntries": 10}}`, nil, []want{{"sandbox.workspaceEntries", "10"}}},
		{"workspace images", `{"sandbox": {"workspaceImages": "yes"}}`, nil, []want{{"sandbox.workspaceImages", `"yes" is not one of`}}},
		{"size too large", `{"sandbox": {"memory": "9EiB"}}`, nil, []want{{"sandbox.memory", "too large"}}},
		{"bad duration", `{"sandbox": {"timeout": "3x"}}`, nil, []want{{"sandbox.timeout", `"3x" is not a duration (use e.g. 30s or 2m)`}}},
		{"duration wrong type", `{"sandbox": {"timeout": []}}`, nil, []want{{"sandbox.timeout", "must be a duration"}}},
		{"zero timeout", `{"sandbox": {"timeout": 0}}`, nil, []want{{"sandbox.timeout", "must be positive, not 0s"}}},
		{"maxTimeout below timeout", `{"sandbox": {"timeout": "2m", "maxTimeout": "90s"}}`, nil, []want{{"sandbox.maxTimeout", "1m30s is less than timeout (2m)"}}},
		{"maxTimeout below default timeout", `{"sandbox": {"maxTimeout": "10s"}}`, nil, []want{{"sandbox.maxTimeout", "less than timeout (30s)"}}},
		{"bad timeout is not judged twice", `{"sandbox": {"timeout": "soon", "maxTimeout": "10s"}}`, nil, []want{{"sandbox.timeout", "not a duration"}}},
		{"cpuTime too small", `{"sandbox": {"cpuTime": "500ms"}}`, nil, []want{{"sandbox.cpuTime", "below the minimum 1s"}}},
		{"huge seconds", `{"sandbox": {"cpuTime": 1e300}}`, nil, []want{{"sandbox.cpuTime", "out of range"}}},

		// Sandbox values.
		{"bad isolation", `{"sandbox": {"isolation": "strict"}}`, nil, []want{{"sandbox.isolation", `"strict" is not an isolation level`}}},
		{"relative python", `{"sandbox": {"python": "python3"}}`, nil, []want{{"sandbox.python", `"python3" is not an absolute path`}}},
		{"pids below minimum", `{"sandbox": {"pids": 2}}`, nil, []want{{"sandbox.pids", "2 is below the minimum 4"}}},
		{"openFiles below minimum", `{"sandbox": {"openFiles": 8}}`, nil, []want{{"sandbox.openFiles", "below the minimum 16"}}},
		{"maxToolCalls zero", `{"sandbox": {"maxToolCalls": 0}}`, nil, []want{{"sandbox.maxToolCalls", "below the minimum 1"}}},
		{"answerBudget too small", `{"sandbox": {"answerBudget": 10}}`, nil, []want{{"sandbox.answerBudget", "below the minimum 1000"}}},
		{"reserved server name", `{"mcpServers": {"codecell": {"command": "x"}}}`, nil, []want{{"mcpServers.codecell", "reserved"}}},
		{"pool too large", `{"sandbox": {"pool": 65}}`, nil, []want{{"sandbox.pool", "65 is above the maximum 64"}}},
		{"pool negative", `{"sandbox": {"pool": -1}}`, nil, []want{{"sandbox.pool", "below the minimum 0"}}},
		{"preload not a module", `{"sandbox": {"preload": ["numpy", "os; import x"]}}`, nil, []want{{"sandbox.preload[1]", "is not a module name"}}},
		{"idlePool negative", `{"sandbox": {"idlePool": -1}}`, nil, []want{{"sandbox.idlePool", "below the minimum 0"}}},
		{"namespaceIdle too short", `{"sandbox": {"namespaceIdle": "10ms"}}`, nil, []want{{"sandbox.namespaceIdle", "below the minimum 1s"}}},
		{"warmLimit zero", `{"sandbox": {"warmLimit": 0}}`, nil, []want{{"sandbox.warmLimit", "below the minimum 1"}}},
		{"warmMemory small", `{"sandbox": {"warmMemory": "1MiB"}}`, nil, []want{{"sandbox.warmMemory", "below the minimum 64MiB"}}},
		{"namespaceConcurrency past concurrency", `{"sandbox": {"concurrency": 2, "namespaceConcurrency": 3}}`, nil, []want{{"sandbox.namespaceConcurrency", "above concurrency (2)"}}},
		{"bad network mode", `{"sandbox": {"network": {"mode": "open"}}}`, nil, []want{{"sandbox.network.mode", `"open" is not a network mode`}}},
		{"allow without allowlist", `{"sandbox": {"network": {"allow": ["pypi.org"]}}}`, nil, []want{{"sandbox.network.allow", `only with mode "allowlist"`}}},
		{"bad domain", `{"sandbox": {"network": {"mode": "allowlist", "allow": ["ok.test", "https://pypi.org"]}}}`, nil, []want{{"sandbox.network.allow[1]", "is a URL: write its host"}}},
		{"relative wheelhouse", `{"sandbox": {"wheelhouse": "wheels"}}`, nil, []want{{"sandbox.wheelhouse", "not an absolute path"}}},
		{"bad index url", `{"sandbox": {"indexUrl": "ftp://pkgs"}}`, nil, []want{{"sandbox.indexUrl", "http:// or https://"}}},

		// Servers.
		{"bad server name", `{"mcpServers": {"my server": {"command": "x"}}}`, nil, []want{{`mcpServers["my server"]`, "is not a valid server name"}}},
		{"dotted server name", `{"mcpServers": {"a.b": {"command": "x"}}}`, nil, []want{{`mcpServers["a.b"]`, "is not a valid server name"}}},
		{"command and url", `{"mcpServers": {"a": {"command": "x", "url": "https://x.test"}}}`, nil, []want{{"mcpServers.a", "has both command and url"}}},
		{"neither command nor url", `{"mcpServers": {"a": {"disabled": true}}}`, nil, []want{{"mcpServers.a", "needs a command"}}},
		{"null server", `{"mcpServers": {"a": null}}`, nil, []want{{"mcpServers.a", "needs a command"}}},
		{"transport with command", `{"mcpServers": {"a": {"command": "x", "transport": "sse"}}}`, nil, []want{{"mcpServers.a.transport", "applies only to url servers"}}},
		{"stdio transport", `{"mcpServers": {"a": {"url": "https://x.test", "transport": "stdio"}}}`, nil, []want{{"mcpServers.a.transport", `"stdio" is not a transport for a url server`}}},
		{"bad transport", `{"mcpServers": {"a": {"url": "https://x.test", "transport": "websocket"}}}`, nil, []want{{"mcpServers.a.transport", `"websocket" is not a transport`}}},
		{"bad type", `{"mcpServers": {"a": {"url": "https://x.test", "type": "ws"}}}`, nil, []want{{"mcpServers.a.type", `"ws" is not a server type`}}},
		{"type contradicts transport", `{"mcpServers": {"a": {"url": "https://x.test", "type": "http", "transport": "sse"}}}`, nil, []want{{"mcpServers.a.type", "contradicts transport"}}},
		{"stdio type with url", `{"mcpServers": {"a": {"url": "https://x.test", "type": "stdio"}}}`, nil, []want{{"mcpServers.a.transport", "not a transport for a url server"}}},
		{"ftp url", `{"mcpServers": {"github": {"url": "ftp://x.test/mcp"}}}`, nil, []want{{"mcpServers.github.url", "must be an http:// or https:// URL"}}},
		{"url without host", `{"mcpServers": {"a": {"url": "https:///mcp"}}}`, nil, []want{{"mcpServers.a.url", "with a host"}}},
		{"url not a url", `{"mcpServers": {"a": {"url": "localhost:8080"}}}`, nil, []want{{"mcpServers.a.url", "must be an http"}}},
		{"args with url", `{"mcpServers": {"a": {"url": "https://x.test", "args": ["-v"]}}}`, nil, []want{{"mcpServers.a.args", "only to command servers"}}},
		{"env with url", `{"mcpServers": {"a": {"url": "https://x.test", "env": {"K": "V"}}}}`, nil, []want{{"mcpServers.a.env", "only to command servers"}}},
		{"cwd with url", `{"mcpServers": {"a": {"url": "https://x.test", "cwd": "/x"}}}`, nil, []want{{"mcpServers.a.cwd", "only to command servers"}}},
		{"relative cwd", `{"mcpServers": {"a": {"command": "x", "cwd": "some/dir"}}}`, nil, []want{{"mcpServers.a.cwd", `"some/dir" is not an absolute path`}}},
		{"headers with command", `{"mcpServers": {"a": {"command": "x", "headers": {"A": "b"}}}}`, nil, []want{{"mcpServers.a.headers", "only to url servers"}}},
		{"bad header name", `{"mcpServers": {"a": {"url": "https://x.test", "headers": {"Bad Header": "b"}}}}`, nil, []want{{`mcpServers.a.headers["Bad Header"]`, "not a valid HTTP header name"}}},
		{"header value line break", `{"mcpServers": {"a": {"url": "https://x.test", "headers": {"A": "b\r\nEvil: 1"}}}}`, nil, []want{{"mcpServers.a.headers.A", "line break"}}},
		{"bad env name", `{"mcpServers": {"a": {"command": "x", "env": {"A=B": "v"}}}}`, nil, []want{{`mcpServers.a.env["A=B"]`, "not a valid environment variable name"}}},
		{"server timeout", `{"mcpServers": {"a": {"command": "x", "timeout": -1}}}`, nil, []want{{"mcpServers.a.timeout", "must be positive"}}},
		{"zero startup timeout", `{"mcpServers": {"a": {"command": "x", "startupTimeout": 0}}}`, nil, []want{{"mcpServers.a.startupTimeout", "must be positive, not 0s"}}},
		{"negative startup timeout", `{"mcpServers": {"a": {"url": "https://x.test", "startupTimeout": "-5s"}}}`, nil, []want{{"mcpServers.a.startupTimeout", "must be positive, not -5s"}}},
		{"bad startup timeout", `{"mcpServers": {"a": {"command": "x", "startupTimeout": "soon"}}}`, nil, []want{{"mcpServers.a.startupTimeout", `"soon" is not a duration`}}},
		{"startup timeout wrong type", `{"mcpServers": {"a": {"command": "x", "startupTimeout": true}}}`, nil, []want{{"mcpServers.a.startupTimeout", "must be a duration"}}},
		{"env keys collide", `{"mcpServers": {"a": {"command": "x", "env": {"${A}": "1", "${B}": "2"}}}}`, map[string]string{"A": "K", "B": "K"},
			[]want{{`mcpServers.a.env["${B}"]`, "same name as an earlier key"}}},
		{"bad command skips shape check", `{"mcpServers": {"a": {"command": 1}}}`, nil, []want{{"mcpServers.a.command", "must be a string"}}},

		// Policy.
		{"bad pattern", `{"policy": {"deny": ["ok.*", "gh.[a-"]}}`, nil, []want{{"policy.deny[1]", `"gh.[a-" is not a valid pattern`}}},
		{"empty pattern", `{"policy": {"allow": [""]}}`, nil, []want{{"policy.allow[0]", "is empty"}}},

		// PII.
		{"bad pii mode", `{"pii": {"mode": "redact"}}`, nil, []want{{"pii.mode", `"redact" is not a PII mode`}}},
		{"bad pii kind", `{"pii": {"custom": [{"kind": "employee", "pattern": "E\\d+"}]}}`, nil, []want{{"pii.custom[0].kind", `"employee" is not a valid kind`}}},
		{"bad pii regexp", `{"pii": {"custom": [{"kind": "EMP", "pattern": "E(\\d+"}]}}`, nil, []want{{"pii.custom[0].pattern", "not a valid regular expression"}}},
		{"pii regexp matches empty", `{"pii": {"custom": [{"kind": "EMP", "pattern": "\\d*"}]}}`, nil, []want{{"pii.custom[0].pattern", "matches the empty string"}}},
		{"pii kind twice", `{"pii": {"custom": [{"kind": "EMP", "pattern": "E\\d+"}, {"kind": "EMP", "pattern": "F\\d+"}]}}`, nil, []want{{"pii.custom[1].kind", "defined twice"}}},

		// HTTP.
		{"short token", `{"http": {"tokens": {"short": "team-a"}}}`, nil, []want{{"http.tokens", `the token for namespace "team-a" has 5 characters; use at least 16`}}},
		{"token with space", `{"http": {"tokens": {"0123456789 abcdefgh": "team-a"}}}`, nil, []want{{"http.tokens", "printable ASCII without spaces"}}},
		{"bad namespace", `{"http": {"tokens": {"0123456789abcdefgh": "Team A"}}}`, nil, []want{{"http.tokens", `"Team A" is not a valid namespace`}}},
		{"namespace not a string", `{"http": {"tokens": {"0123456789abcdefgh": 1}}}`, nil, []want{{"http.tokens", "entry 1: the namespace must be a string"}}},
		{"same token twice", `{"http": {"tokens": {"${A}": "a", "${B}": "b"}}}`, map[string]string{"A": "0123456789abcdefgh", "B": "0123456789abcdefgh"},
			[]want{{"http.tokens", `namespace "b": the same token appears twice`}}},
		{"token problems all reported", `{"http": {"tokens": {"${MISSING}": "a", "short": "b"}}}`, nil, []want{
			{"http.tokens", `namespace "a": in the token: variable MISSING`},
			{"http.tokens", `namespace "b" has 5 characters`},
		}},
		{"origin with path", `{"http": {"allowedOrigins": ["https://ok.example", "https://x.example/app"]}}`, nil, []want{{"http.allowedOrigins[1]", "is not an origin"}}},
		{"origin without scheme", `{"http": {"allowedOrigins": ["x.example"]}}`, nil, []want{{"http.allowedOrigins[0]", "is not an origin"}}},
		{"origin wildcard", `{"http": {"allowedOrigins": ["*"]}}`, nil, []want{{"http.allowedOrigins[0]", "is not an origin"}}},

		// Sessions.
		{"zero idle timeout", `{"sessions": {"idleTimeout": "0s"}}`, nil, []want{{"sessions.idleTimeout", "must be positive"}}},
		{"zero sessions", `{"sessions": {"maxPerNamespace": 0}}`, nil, []want{{"sessions.maxPerNamespace", "below the minimum 1"}}},
		{"unknown sessions key", `{"sessions": {"idle": "1m"}}`, nil, []want{{"sessions.idle", "unknown key"}}},

		// Store.
		{"store url not postgres", `{"store": {"url": "mysql://x@y/z"}}`, nil, []want{{"store.url", "must be a PostgreSQL URL"}}},
		{"store url variable missing", `{"store": {"url": "${NOPE}"}}`, nil, []want{{"store.url", "NOPE"}}},
		{"unknown store key", `{"store": {"dsn": "x"}}`, nil, []want{{"store.dsn", "unknown key"}}},
		{"images with replicas", `{"store": {"url": "postgres://x@y/z"}, "sandbox": {"workspaceImages": "on"}}`, nil, []want{{"sandbox.workspaceImages", `"on" cannot go with store.url`}}},

		// Toolsets.
		{"unknown toolset", `{"toolsets": ["exec", "shell"]}`, nil, []want{{"toolsets[1]", `unknown toolset "shell"`}}},
		{"no toolsets", `{"toolsets": []}`, nil, []want{{"toolsets", "lists no toolsets"}}},
		{"toolset not a string", `{"toolsets": [1]}`, nil, []want{{"toolsets[0]", "must be a string"}}},

		// All problems at once, in file order, then semantic ones.
		{"collects every error", `{
			"sandbox": {"memory": "lots", "pids": 1, "isolaton": "hardened"},
			"policy": {"deny": ["["]},
			"toolsets": ["nope"]
		}`, nil, []want{
			{"sandbox.memory", "not a size"},
			{"sandbox.isolaton", `did you mean "isolation"?`},
			{"toolsets[0]", "unknown toolset"},
			{"sandbox.pids", "below the minimum"},
			{"policy.deny[0]", "not a valid pattern"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("codecell.json", []byte(tc.data), envOf(tc.env))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want errors %v", c, tc.want)
			}
			if c != nil {
				t.Errorf("Parse returned a config with its error")
			}
			got := problemsOf(t, err)
			for _, e := range got {
				if e.File != "codecell.json" {
					t.Errorf("error %q has File %q", e, e.File)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(got), len(tc.want), err)
			}
			for i, w := range tc.want {
				if got[i].Path != w.path || !strings.Contains(got[i].Reason, w.reason) {
					t.Errorf("error %d = %q, want path %q and a reason containing %q", i, got[i], w.path, w.reason)
				}
				if !strings.Contains(err.Error(), "codecell.json: "+prefix(w.path)) {
					t.Errorf("message %q does not name file and path %q", err, w.path)
				}
			}
		})
	}
}

// prefix is how a path starts a message: "" for the file as a whole.
func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

func TestErrorMessage(t *testing.T) {
	_, err := Parse("codecell.json", []byte(`{"sandbox": {"memory": "12XB"}}`), nil)
	const want = `codecell.json: sandbox.memory: "12XB" is not a size (use e.g. 512MiB)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{"f.json", "a.b", "bad"}, "f.json: a.b: bad"},
		{Error{"f.json", "", "bad"}, "f.json: bad"},
		{Error{"", "a.b", "bad"}, "a.b: bad"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.e.Error(); got != tc.want {
				t.Errorf("got %q", got)
			}
		})
	}
}

// TestSecretsStayOutOfErrors checks that tokens, header and env values and
// URLs do not appear in error messages.
func TestSecretsStayOutOfErrors(t *testing.T) {
	const secret = "s3cr3t-VALUE"
	data := `{
	  "mcpServers": {
	    "a": {"url": "ftp://user:` + secret + `@x.test", "headers": {"A": "` + secret + `\n"}},
	    "b": {"command": "x", "env": {"K": "` + secret + `\u0000"}}
	  },
	  "http": {"tokens": {"` + secret + `": "Bad NS", "${T}": "ok"}}
	}`
	_, err := Parse("c.json", []byte(data), envOf(map[string]string{"T": secret}))
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	if n := len(problemsOf(t, err)); n < 5 {
		t.Errorf("got %d errors, want at least 5: %v", n, err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error reveals a secret:\n%v", err)
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"trailing comma", "{\n  \"sandbox\": {\n    \"memory\": \"1GiB\",\n  }\n}", "line 4, column 3: invalid JSON: invalid character '}'"},
		{"missing colon", `{"pii" {}}`, "line 1, column 8: invalid JSON: invalid character '{' after object key"},
		{"trailing data", "{}\n{}", "line 2, column 1: invalid JSON: invalid character '{' after top-level value"},
		{"truncated", "{\n\"pii\": ", "line 2, column 7: invalid JSON: unexpected end of JSON input"},
		{"comment", "{\n  // no comments\n}", "line 2, column 3: invalid JSON: invalid character '/'"},
		{"non-ASCII before the error", "{\"mcpServers\": {\"é\": x}}", "line 1, column 22: invalid JSON: invalid character 'x'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("codecell.json", []byte(tc.data), nil)
			errs := problemsOf(t, err)
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(errs), err)
			}
			if want := "codecell.json: " + tc.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got  %q\nwant %q...", err, want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"1024", 1024, ""},
		{"0", 0, ""},
		{"512MiB", 512 << 20, ""},
		{"1GiB", 1 << 30, ""},
		{"64KiB", 64 << 10, ""},
		{"10MB", 10_000_000, ""},
		{"1kb", 1000, ""},
		{"1.5GiB", 3 << 29, ""},
		{"0.1KiB", 102, ""},
		{"2 TiB", 2 << 40, ""},
		{" 7B ", 7, ""},
		{"1EiB", 1 << 60, ""},
		{"12XB", 0, `"12XB" is not a size (use e.g. 512MiB)`},
		{"", 0, "is not a size"},
		{"MiB", 0, "is not a size"},
		{"-1", 0, "is not a size"},
		{"1e3", 0, "is not a size"},
		{"512m", 0, "is not a size"},
		{"1.GiB", 0, "is not a size"},
		{"8EiB", 0, "too large"},
		{"99999999999999999999", 0, "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("ParseSize(%q) = %d, %v; want error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1000, "1000B"},
		{1024, "1KiB"},
		{1536, "1536B"}, // 1.5KiB: not a whole number of any unit
		{512 << 20, "512MiB"},
		{3 << 29, "1536MiB"},
		{1 << 30, "1GiB"},
		{-2048, "-2KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := FormatSize(tc.in); got != tc.want {
				t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
			}
			if tc.in < 0 {
				return
			}
			if back, err := ParseSize(tc.want); err != nil || back != tc.in {
				t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.want, back, err, tc.in)
			}
		})
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		json string
		want time.Duration
	}{
		{`"30s"`, 30 * time.Second},
		{`"2m"`, 2 * time.Minute},
		{`"1h30m"`, 90 * time.Minute},
		{`"1500ms"`, 1500 * time.Millisecond},
		{`45`, 45 * time.Second},
		{`0.25`, 250 * time.Millisecond},
		{`"90"`, 90 * time.Second},
		{`"2.5"`, 2500 * time.Millisecond},
		{`1e2`, 100 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.json, func(t *testing.T) {
			c, err := Parse("d.json", []byte(`{"sandbox": {"timeout": `+tc.json+`, "maxTimeout": "1h30m"}}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Sandbox.Timeout != tc.want {
				t.Errorf("timeout = %v, want %v", c.Sandbox.Timeout, tc.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := envOf(map[string]string{"A": "alpha", "B_2": "beta", "DOLLAR": "$x"})
	tests := []struct {
		in, want, err string
	}{
		{"plain", "plain", ""},
		{"${A}", "alpha", ""},
		{"x-${A}-${B_2}-y", "x-alpha-beta-y", ""},
		{"$A stays", "$A stays", ""},
		{"$$ stays", "$$ stays", ""},
		{"$${A} stays", "$${A} stays", ""},
		{"cost: 5$", "cost: 5$", ""},
		{"${DOLLAR}{A}", "$x{A}", ""}, // values are not expanded again
		{"${C}", "", "variable C is unset or empty"},
		{"${}", "", "is not a variable reference"},
		{"${1A}", "", "is not a variable reference"},
		{"${A", "", "unterminated"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := expand(tc.in, env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("expand(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := expand("${A}", nil); err == nil {
		t.Error("expand with a nil env succeeded")
	}
}

func TestToolsets(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
		err  string
	}{
		{"all", []string{"all"}, AllToolsets, ""},
		{"ordered and deduplicated", []string{"stats", "exec", "stats"}, []string{"default", "exec", "stats"}, ""},
		{"all with others", []string{"privacy", "all"}, AllToolsets, ""},
		{"flag spacing", []string{" exec", "discovery ", ""}, []string{"exec", "discovery"}, ""},
		{"lean first", []string{"workspace", "default"}, []string{"default", "workspace"}, ""},
		// Naming toolsets adds to the lean pair (issue #30), unless told not to.
		{"adds to the lean pair", []string{"workspace", "skills"}, []string{"default", "workspace", "skills"}, ""},
		{"lean pair left out", []string{"workspace", "-default"}, []string{"workspace"}, ""},
		{"lean pair left out, default named too", []string{"default", "analysis", "-default"}, []string{"analysis"}, ""},
		{"only the exclusion", []string{"-default"}, nil, "no toolsets"},
		{"unknown", []string{"exec", "shell"}, nil, `unknown toolset "shell"`},
		{"case matters", []string{"Exec"}, nil, `unknown toolset "Exec"`},
		{"empty", []string{""}, nil, "no toolsets"},
		{"nil", nil, nil, "no toolsets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseToolsets(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("ParseToolsets(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("ParseToolsets(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			if slices.Contains(got, "all") {
				t.Errorf("result contains all")
			}
		})
	}
	t.Run("config", func(t *testing.T) {
		c, err := Parse("t.json", []byte(`{"toolsets": ["analysis", "exec"]}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"default", "exec", "analysis"}; !slices.Equal(c.Toolsets, want) {
			t.Errorf("Toolsets = %q, want %q", c.Toolsets, want)
		}
		c, err = Parse("t.json", []byte(`{"toolsets": ["analysis", "-default"]}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"analysis"}; !slices.Equal(c.Toolsets, want) {
			t.Errorf("Toolsets = %q, want %q", c.Toolsets, want)
		}
		if _, err := Parse("t.json", []byte(`{"toolsets": ["-default"]}`), nil); err == nil || !strings.Contains(err.Error(), "lists no toolsets") {
			t.Errorf(`toolsets ["-default"]: %v, want "lists no toolsets"`, err)
		}
	})
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		path   string
	}{
		{"defaults", func(*Config) {}, ""},
		{"toolsets with all", func(c *Config) { c.Toolsets = []string{"all"} }, "toolsets[0]"},
		{"toolset twice", func(c *Config) { c.Toolsets = []string{"exec", "exec"} }, "toolsets[1]"},
		{"server name differs from key", func(c *Config) {
			c.MCPServers["a"] = Server{Name: "b", Command: "x", Transport: "stdio", Timeout: time.Second, StartupTimeout: time.Second}
		}, "mcpServers.a"},
		{"server without transport", func(c *Config) {
			c.MCPServers["a"] = Server{Name: "a", URL: "https://x.test", Timeout: time.Second, StartupTimeout: time.Second}
		}, "mcpServers.a.transport"},
		{"server without timeout", func(c *Config) {
			c.MCPServers["a"] = Server{Name: "a", Command: "x", Transport: "stdio", StartupTimeout: time.Second}
		}, "mcpServers.a.timeout"},
		{"server without startup timeout", func(c *Config) {
			c.MCPServers["a"] = Server{Name: "a", Command: "x", Transport: "stdio", Timeout: time.Second}
		}, "mcpServers.a.startupTimeout"},
		{"flag timeout above max", func(c *Config) { c.Sandbox.Timeout = time.Hour }, "sandbox.maxTimeout"},
		{"origin not canonical", func(c *Config) { c.HTTP.AllowedOrigins = []string{"https://X.example/"} }, "http.allowedOrigins[0]"},
		{"no python", func(c *Config) { c.Sandbox.Python = "" }, "sandbox.python"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.File = "v.json"
			tc.change(c)
			err := c.Validate()
			if tc.path == "" {
				if err != nil {
					t.Errorf("Validate() = %v", err)
				}
				return
			}
			errs := problemsOf(t, err)
			if len(errs) != 1 || errs[0].Path != tc.path || errs[0].File != "v.json" {
				t.Errorf("Validate() = %v, want one error at %s", err, tc.path)
			}
		})
	}
}

func TestFind(t *testing.T) {
	// layout creates files under a fresh directory and returns it.
	layout := func(t *testing.T, files ...string) string {
		t.Helper()
		dir := t.TempDir()
		for _, f := range files {
			p := filepath.Join(dir, f)
			if strings.HasSuffix(f, "/") {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	tests := []struct {
		name  string
		files []string
		flag  string            // relative to the directory
		env   map[string]string // values are relative to the directory, unless absolute
		want  string            // relative to the directory; "" for none
		err   string
	}{
		{"nothing", nil, "", nil, "", ""},
		{"flag", []string{"my.json", "cwd/codecell.json"}, "my.json", map[string]string{"CODECELL_CONFIG": "cwd/codecell.json"}, "my.json", ""},
		{"flag missing", []string{"cwd/codecell.json"}, "nope.json", nil, "", "nope.json (from --config) does not exist"},
		{"flag is a directory", []string{"d/"}, "d", nil, "", "is a directory"},
		{"env", []string{"env.json", "cwd/codecell.json"}, "", map[string]string{"CODECELL_CONFIG": "env.json"}, "env.json", ""},
		{"env missing", []string{"cwd/codecell.json"}, "", map[string]string{"CODECELL_CONFIG": "gone.json"}, "", "(from $CODECELL_CONFIG) does not exist"},
		{"working directory", []string{"cwd/codecell.json", "xdg/codecell/config.json"}, "", map[string]string{"XDG_CONFIG_HOME": "xdg"}, "codecell.json", ""},
		{"xdg", []string{"xdg/codecell/config.json", "home/.config/codecell/config.json"}, "", map[string]string{"XDG_CONFIG_HOME": "xdg", "HOME": "home"}, "xdg/codecell/config.json", ""},
		{"home", []string{"home/.config/codecell/config.json"}, "", map[string]string{"HOME": "home"}, "home/.config/codecell/config.json", ""},
		{"relative xdg ignored", []string{"home/.config/codecell/config.json"}, "", map[string]string{"XDG_CONFIG_HOME": "relative/xdg", "HOME": "home"}, "home/.config/codecell/config.json", ""},
		{"xdg set but empty of codecell", []string{"xdg/", "home/.config/codecell/config.json"}, "", map[string]string{"XDG_CONFIG_HOME": "xdg", "HOME": "home"}, "", ""},
		{"codecell.json is a directory", []string{"cwd/codecell.json/"}, "", nil, "", "is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := layout(t, append([]string{"cwd/"}, tc.files...)...)
			abs := func(p string) string {
				if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "relative/") {
					return p
				}
				return filepath.Join(dir, p)
			}
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = abs(v)
			}
			t.Chdir(filepath.Join(dir, "cwd"))
			got, err := Find(abs(tc.flag), envOf(env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("Find = %q, %v; want error containing %q", got, err, tc.err)
				}
				return
			}
			want := tc.want
			if want != "" && want != "codecell.json" {
				want = abs(want)
			}
			if err != nil || got != want {
				t.Errorf("Find = %q, %v; want %q", got, err, want)
			}
		})
	}
	t.Run("nil env", func(t *testing.T) {
		t.Chdir(t.TempDir())
		if got, err := Find("", nil); got != "" || err != nil {
			t.Errorf("Find = %q, %v; want none", got, err)
		}
	})
}

// TestSource: a config says which file it came from, or, found nowhere,
// every place looked, as absolute paths (a host may start codecell in /).
func TestSource(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	searched := SearchPath(envOf(map[string]string{"HOME": "/home/u"}))
	want := []string{filepath.Join(dir, "codecell.json"), "/home/u/.config/codecell/config.json"}
	if !slices.Equal(searched, want) {
		t.Errorf("SearchPath = %q, want %q", searched, want)
	}
	c := Default()
	c.Searched = searched
	if src := c.Source(); !strings.Contains(src, want[0]) || !strings.Contains(src, want[1]) || !strings.Contains(src, "--config") {
		t.Errorf("Source of no file = %q", src)
	}
	c.File = "codecell.json"
	if src := c.Source(); src != want[0] {
		t.Errorf("Source of a relative file = %q, want %q", src, want[0])
	}
}

// fuzzEnv is the environment the fuzz target parses with.
var fuzzEnv = envOf(map[string]string{
	"REMOTE_TOKEN": "remote-secret", "CODECELL_TOKEN_A": "0123456789abcdef-team-a", "PY": "/usr/bin/python3", "MEM": "1GiB",
})

func FuzzParse(f *testing.F) {
	spec, err := os.ReadFile("testdata/spec-example.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(spec),
		"",
		"{}",
		"null",
		"[]",
		`{"sandbox": {"memory": "12XB", "timeout": "2m", "maxTimeout": "1m"}}`,
		`{"sandbox": {"python": "${PY}", "memory": "${MEM}", "pool": 64, "network": {"mode": "allowlist", "allow": ["*.pypi.org"]}}}`,
		`{"mcpServers": {"a": {"type": "sse", "url": "https://x.test", "headers": {"A": "${REMOTE_TOKEN}"}, "timeout": 1.5}}}`,
		`{"mcpServers": {"a b": {"command": "x", "url": "ftp://y", "cwd": "rel"}}, "toolsets": ["all", "nope"]}`,
		`{"pii": {"custom": [{"kind": "EMP", "pattern": "E\\d{6}"}, {"kind": "x", "pattern": "("}]}}`,
		`{"http": {"tokens": {"${CODECELL_TOKEN_A}": "team-a", "short": "B"}, "allowedOrigins": ["HTTP://X:80/"]}}`,
		`{"sessions": {"idleTimeout": 0, "maxPerNamespace": 1e9}, "policy": {"allow": ["[", ""]}}`,
		"{\"sandbox\": {\"memroy\": 1,}}",
		`{"a": 1, "a": 2}`,
	} {
		f.Add([]byte(seed))
	}
	isolations := []string{"development", "production", "hardened"}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.json", data, fuzzEnv)
		if err != nil {
			if c != nil {
				t.Fatal("Parse returned both a config and an error")
			}
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			for _, e := range problemsOf(t, err) {
				if e.File != "fuzz.json" || e.Reason == "" {
					t.Fatalf("malformed error %#v", e)
				}
			}
			// The same input gives the same errors in the same order.
			if _, again := Parse("fuzz.json", data, fuzzEnv); again == nil || again.Error() != err.Error() {
				t.Fatalf("errors differ between runs:\n%v\n%v", err, again)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
		s := c.Sandbox
		switch {
		case c.File != "fuzz.json":
			t.Fatalf("File = %q", c.File)
		case s.Timeout <= 0 || s.MaxTimeout < s.Timeout:
			t.Fatalf("timeout %v, maxTimeout %v", s.Timeout, s.MaxTimeout)
		case !slices.Contains(isolations, s.Isolation):
			t.Fatalf("isolation %q", s.Isolation)
		case !filepath.IsAbs(s.Python):
			t.Fatalf("python %q", s.Python)
		case s.Memory < 32*MiB || s.Pids < 4 || s.Output < KiB || s.OpenFiles < 16 || s.Pool < 0 || s.Pool > 64:
			t.Fatalf("limits out of range: %+v", s)
		case len(c.Toolsets) == 0 || slices.Contains(c.Toolsets, "all"):
			t.Fatalf("toolsets %q", c.Toolsets)
		case c.PII.Mode != "tokenize" && c.PII.Mode != "off":
			t.Fatalf("pii mode %q", c.PII.Mode)
		}
		for name, srv := range c.MCPServers {
			if srv.Name != name || (srv.Command == "") == (srv.URL == "") || srv.Timeout <= 0 {
				t.Fatalf("server %q: %+v", name, srv)
			}
			if srv.Command != "" && srv.Transport != "stdio" || srv.URL != "" && srv.Transport != "streamable-http" && srv.Transport != "sse" {
				t.Fatalf("server %q transport %q", name, srv.Transport)
			}
		}
		for tok, ns := range c.HTTP.Tokens {
			if len(tok) < MinTokenLength || !namespaceRE.MatchString(ns) {
				t.Fatalf("token entry for %q", ns)
			}
		}
	})
}

func TestHardenedPoolDefault(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       int
	}{
		{"production keeps 4", `{"sandbox": {"isolation": "production"}}`, 4},
		{"hardened: one per CPU, up to 4", `{"sandbox": {"isolation": "hardened"}}`, HardenedPool(runtime.NumCPU())},
		{"hardened, the pool given", `{"sandbox": {"pool": 4, "isolation": "hardened"}}`, 4},
		{"hardened, a pool of 0 given", `{"sandbox": {"isolation": "hardened", "pool": 0}}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("codecell.json", []byte(tc.data), nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Sandbox.Pool != tc.want {
				t.Errorf("pool %d, want %d", c.Sandbox.Pool, tc.want)
			}
		})
	}
	for cpus, want := range map[int]int{1: 1, 2: 2, 3: 3, 4: 4, 64: 4} {
		if got := HardenedPool(cpus); got != want {
			t.Errorf("HardenedPool(%d) = %d, want %d", cpus, got, want)
		}
	}
}
