package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildWheel writes a small pure-Python wheel into dir, as a build backend
// would: the package, its dist-info and a RECORD with hashes.
func buildWheel(t *testing.T, dir, name, version string, files map[string]string) {
	t.Helper()
	info := fmt.Sprintf("%s-%s.dist-info", name, version)
	files[info+"/METADATA"] = fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: a test package\n", name, version)
	files[info+"/WHEEL"] = "Wheel-Version: 1.0\nGenerator: codecell-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	var record strings.Builder
	for path, body := range files {
		sum := sha256.Sum256([]byte(body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", path, base64.RawURLEncoding.EncodeToString(sum[:]), len(body))
	}
	record.WriteString(info + "/RECORD,,\n")
	files[info+"/RECORD"] = record.String()
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", name, version)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := zip.NewWriter(f)
	for path, body := range files {
		w, err := z.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
}

// callTool is callToolInto with the structured result as a map.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	var out map[string]any
	res, _ := callToolInto(t, cs, name, args, &out)
	return res, out
}

func TestEnvironmentsAndInstalls(t *testing.T) {
	requireProduction(t)
	if exec.Command("/usr/bin/python3", "-I", "-c", "import ensurepip, venv").Run() != nil {
		t.Skip("python3-venv is not installed (make test installs it)")
	}
	wheelhouse := filepath.Join(reachableDir(t), "wheels")
	os.Mkdir(wheelhouse, 0o755)
	buildWheel(t, wheelhouse, "demo_pkg", "1.0", map[string]string{
		"demo_pkg/__init__.py": "VALUE = 42\n\ndef hello():\n    return 'hi from demo_pkg'\n",
	})
	cfg := fmt.Sprintf(`{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "wheelhouse": %q}}`, wheelhouse)
	cfgPath, dataDir := testDirs(t, cfg)
	connect := func() *mcp.ClientSession { return serveStdio(t, cfgPath, dataDir, nil) }
	cs := connect()
	defer func() { cs.Close() }()

	_, out := call(t, cs, map[string]any{"code": "import demo_pkg"})
	if out.OK || out.Error.Type != "ModuleNotFoundError" || !strings.Contains(out.Error.Message, "install_dependencies") || !strings.Contains(out.Error.Message, "'demo_pkg'") {
		t.Fatalf("missing module: %+v", out.Error)
	}
	res, _ := callTool(t, cs, "install_dependencies", map[string]any{"packages": []string{"demo_pkg"}})
	if !res.IsError || !strings.Contains(textOf(res), "configure_environment") {
		t.Fatalf("install into the system environment: %s", textOf(res))
	}

	res, env := callTool(t, cs, "configure_environment", map[string]any{"type": "venv"})
	if res.IsError || env["type"] != "venv" || env["managed"] != true || !strings.HasPrefix(env["python"].(string), dataDir) {
		t.Fatalf("configure venv: %s %v", textOf(res), env)
	}

	t.Run("injection attempts install nothing", func(t *testing.T) {
		bad := []string{"pkg; rm -rf /", "--index-url=http://evil", "-e git+https://example.com/x", "pkg @ file:///etc/passwd",
			strings.Repeat("a", 500), "caf\xc3\x28", "demo_pkg==1.0 --no-deps", "$(id)"}
		res, out := callTool(t, cs, "install_dependencies", map[string]any{"packages": bad})
		results, _ := out["results"].([]any)
		if !res.IsError || len(results) != len(bad) {
			t.Fatalf("%s %v", textOf(res), out)
		}
		for i, r := range results {
			r := r.(map[string]any)
			if r["ok"] == true || !strings.Contains(r["error"].(string), "invalid requirement") {
				t.Errorf("%q: %v", bad[i], r)
			}
		}
		if installed, _ := out["installed"].([]any); len(installed) != 0 {
			t.Errorf("installed %v", installed)
		}
	})

	res, inst := callTool(t, cs, "install_dependencies", map[string]any{"packages": []string{"demo_pkg==1.0"}})
	if res.IsError {
		t.Fatalf("install: %s", textOf(res))
	}
	if installed := inst["installed"].([]any); len(installed) != 1 || installed[0].(map[string]any)["version"] != "1.0" {
		t.Fatalf("install result %v", inst)
	}
	_, out = call(t, cs, map[string]any{"code": "import demo_pkg, sys\n[demo_pkg.hello(), demo_pkg.VALUE, sys.prefix]"})
	if !out.OK {
		t.Fatalf("import after install: %+v", out.Error)
	}
	got, _ := json.Marshal(out.Result)
	if !strings.HasPrefix(string(got), `["hi from demo_pkg",42,`) || !strings.Contains(string(got), "/envs/default/venv") {
		t.Fatalf("result %s", got)
	}
	t.Run("the venv keeps the system's stack", func(t *testing.T) {
		if exec.Command("/usr/bin/python3", "-c", "import pandas, matplotlib").Run() != nil {
			t.Skip("the data stack is not installed (make deps installs it)")
		}
		// pandas is the system's, preloaded (demo_pkg replaces nothing);
		// a figure still comes back.
		_, out := call(t, cs, map[string]any{"code": "import sys\npre = 'pandas' in sys.modules\nimport pandas, demo_pkg, matplotlib.pyplot as plt\nplt.plot([1, 2])\n[pre, pandas.__file__.startswith('/usr/'), demo_pkg.VALUE]"})
		if got, _ := json.Marshal(out.Result); !out.OK || string(got) != "[true,true,42]" || len(out.Images) != 1 {
			t.Fatalf("pandas in the venv: %s %+v %v", got, out.Error, out.Images)
		}
		res, env := callTool(t, cs, "configure_environment", map[string]any{"type": "venv", "system_packages": false})
		if res.IsError || env["system_packages"] == true {
			t.Fatalf("system_packages false: %s %v", textOf(res), env)
		}
		_, out = call(t, cs, map[string]any{"code": "import demo_pkg\nimport pandas"})
		if out.OK || out.Error.Type != "ModuleNotFoundError" {
			t.Fatalf("pandas without the system's packages: %+v", out.Error)
		}
		res, env = callTool(t, cs, "configure_environment", map[string]any{"type": "venv"})
		if res.IsError || env["system_packages"] != true {
			t.Fatalf("back to the default: %s %v", textOf(res), env)
		}
		res, _ = callTool(t, cs, "configure_environment", map[string]any{"type": "system", "system_packages": true})
		if !res.IsError || !strings.Contains(textOf(res), "system_packages") {
			t.Fatalf("system_packages with the system environment: %s", textOf(res))
		}
	})
	res, chk := callTool(t, cs, "check_installed_packages", map[string]any{"packages": []string{"demo_pkg", "no_such_pkg", "pip"}})
	pk := chk["packages"].([]any)
	if res.IsError || pk[0].(map[string]any)["version"] != "1.0" || pk[1].(map[string]any)["installed"] != false || pk[2].(map[string]any)["installed"] != true {
		t.Fatalf("check: %s %v", textOf(res), chk)
	}
	res, _ = callTool(t, cs, "check_installed_packages", map[string]any{"packages": []string{"a; b"}})
	if !res.IsError || !strings.Contains(textOf(res), "packages") {
		t.Fatalf("check with a bad name: %s", textOf(res))
	}
	// The code cannot change its environment: the venv is read-only inside.
	_, out = call(t, cs, map[string]any{"code": "import demo_pkg, os\nopen(os.path.join(os.path.dirname(demo_pkg.__file__), 'x.py'), 'w')"})
	if out.OK || out.Error.Type != "OSError" {
		t.Fatalf("writing into the venv: %+v", out.Error)
	}

	t.Run("the choice persists across a restart", func(t *testing.T) {
		cs.Close()
		cs = connect()
		res, env := callTool(t, cs, "get_environment_config", map[string]any{})
		if res.IsError || env["type"] != "venv" {
			t.Fatalf("after restart: %v", env)
		}
		if _, out := call(t, cs, map[string]any{"code": "import demo_pkg\ndemo_pkg.VALUE"}); !out.OK || out.Result != float64(42) {
			t.Fatalf("after restart: %+v", out.Error)
		}
	})
	res, _ = callTool(t, cs, "configure_environment", map[string]any{"type": "uv"})
	if lookPath("uv") == "" && (!res.IsError || !strings.Contains(textOf(res), "uv is not installed")) {
		t.Fatalf("uv without uv: %s", textOf(res))
	}
	res, _ = callTool(t, cs, "configure_environment", map[string]any{"type": "pipenv"})
	if !res.IsError || !strings.Contains(textOf(res), "type") {
		t.Fatalf("unknown type: %s", textOf(res))
	}
}

// reachableDir is a temporary directory the sandbox user can reach.
func reachableDir(t *testing.T) string {
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	return dir
}

// TestInstallerEgress: the installer has no network of its own. A call's
// index_url must be one the operator listed; even a listed index on
// loopback is never reached (the egress proxy refuses it); an sdist is not
// built unless the operator allows builds, so its build code never runs.
func TestInstallerEgress(t *testing.T) {
	requireProduction(t)
	if exec.Command("/usr/bin/python3", "-I", "-c", "import ensurepip, venv").Run() != nil {
		t.Skip("python3-venv is not installed (make test installs it)")
	}
	// The attacker's listener, on the host's loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var reached atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	index := fmt.Sprintf("http://%s/simple/", ln.Addr())
	// An sdist whose setup.py would call the listener if it ever ran.
	wheelhouse := filepath.Join(reachableDir(t), "wheels")
	os.Mkdir(wheelhouse, 0o755)
	setup := fmt.Sprintf("import socket\nsocket.create_connection(%q)\nfrom setuptools import setup\nsetup(name='evil_pkg', version='1.0')\n", ln.Addr().String())
	writeSdist(t, filepath.Join(wheelhouse, "evil_pkg-1.0.tar.gz"), "evil_pkg-1.0", map[string]string{
		"setup.py": setup, "PKG-INFO": "Metadata-Version: 2.1\nName: evil_pkg\nVersion: 1.0\n",
	})
	cfg := fmt.Sprintf(`{"sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "wheelhouse": %q, "indexUrls": [%q]}}`, wheelhouse, index)
	cfgPath, dataDir := testDirs(t, cfg)
	cs := serveStdio(t, cfgPath, dataDir, nil)
	defer cs.Close()
	if res, _ := callTool(t, cs, "configure_environment", map[string]any{"type": "venv"}); res.IsError {
		t.Fatalf("configure_environment: %s", textOf(res))
	}

	res, _ := callTool(t, cs, "install_dependencies", map[string]any{"packages": []string{"evil_pkg"}, "index_url": "http://169.254.169.254/simple/"})
	if !res.IsError || !strings.Contains(textOf(res), "not one of the indexes the operator allows") {
		t.Errorf("an unlisted index_url: %s", textOf(res))
	}
	for _, args := range []map[string]any{
		{"packages": []string{"evil_pkg"}, "index_url": index}, // a listed index on loopback
		{"packages": []string{"evil_pkg"}},                     // an sdist in the wheelhouse
	} {
		res, out := callTool(t, cs, "install_dependencies", args)
		if outcomes, _ := out["results"].([]any); len(outcomes) != 1 || outcomes[0].(map[string]any)["ok"] != false || !strings.Contains(textOf(res), "FAILED evil_pkg") {
			t.Errorf("install %v: %s", args, textOf(res))
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the installer reached the loopback listener %d times", n)
	}
}

// writeSdist writes a source distribution: a gzipped tar of files under top.
func writeSdist(t *testing.T, path, top string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: top + "/" + name, Mode: 0o644, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
}
