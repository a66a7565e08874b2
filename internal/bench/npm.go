package bench

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/proc"
)

// NPMServers are real MCP servers from npm, run with node: the reference
// filesystem server, rooted at a directory that holds the customer export
// (customers.csv, the 10,000 rows of the Customers sheet, about 1 MB), and
// the reference memory server (a knowledge graph kept in a JSON Lines
// file). The same files serve every process started on them, so codecell's
// upstreams and the direct side's sessions share one world.
type NPMServers struct {
	node       string // the node binary
	modules    string // node_modules holding @modelcontextprotocol/server-*
	root       string // the filesystem server's root
	memoryFile string
}

// npmEntries are the servers' entry points under node_modules.
var npmEntries = map[string]string{
	"filesystem": "@modelcontextprotocol/server-filesystem/dist/index.js",
	"memory":     "@modelcontextprotocol/server-memory/dist/index.js",
}

// CustomersCSV is the file name of the customer export in the filesystem
// server's root.
const CustomersCSV = "customers.csv"

// ErrNoNPM says node or the npm servers are not installed.
var ErrNoNPM = errors.New("the npm servers are not installed (make test installs them into testdata/npm)")

// NewNPMServers prepares the npm servers of modules (a node_modules
// directory) in dir: it writes the customer export and names the memory
// file. It returns ErrNoNPM, wrapped, when node or a server is missing.
func NewNPMServers(modules, dir string) (*NPMServers, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoNPM, err)
	}
	for _, entry := range npmEntries {
		if _, err := os.Stat(filepath.Join(modules, entry)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoNPM, err)
		}
	}
	n := &NPMServers{node: node, modules: modules, root: filepath.Join(dir, "files"), memoryFile: filepath.Join(dir, "memory.jsonl")}
	if err := os.MkdirAll(n.root, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(n.root, CustomersCSV))
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	w.Write(customerColumns)
	for _, c := range genCustomers() {
		w.Write([]string{c.ID, c.Name, c.Company, c.Email, c.Country, c.Plan, strconv.Itoa(c.Seats),
			strconv.FormatFloat(c.MRR, 'f', -1, 64), c.Signup, c.Status, c.Manager})
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return nil, err
	}
	return n, nil
}

// Names implements Connector.
func (n *NPMServers) Names() []string { return []string{"filesystem", "memory"} }

// command is how to start the named server: program, arguments and extra
// environment.
func (n *NPMServers) command(name string) (string, []string, map[string]string) {
	args := []string{filepath.Join(n.modules, npmEntries[name])}
	env := map[string]string{}
	switch name {
	case "filesystem":
		args = append(args, n.root)
	case "memory":
		env["MEMORY_FILE_PATH"] = n.memoryFile
	}
	return n.node, args, env
}

// Connect implements Connector: it starts the server with node.
func (n *NPMServers) Connect(ctx context.Context, name string) (*mcp.ClientSession, error) {
	if _, ok := npmEntries[name]; !ok {
		return nil, fmt.Errorf("no npm server is named %q", name)
	}
	prog, args, env := n.command(name)
	cmd := proc.Command(context.Background(), prog, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
}

// MCPServers returns the servers as entries of codecell's mcpServers.
func (n *NPMServers) MCPServers() map[string]any {
	out := map[string]any{}
	for _, name := range n.Names() {
		prog, args, env := n.command(name)
		out[name] = map[string]any{"command": prog, "args": args, "env": env}
	}
	return out
}

// CustomersPath is the customer export's path, as the filesystem server
// takes it.
func (n *NPMServers) CustomersPath() string { return filepath.Join(n.root, CustomersCSV) }

// entities returns the names of the memory server's entities.
func (n *NPMServers) entities() ([]string, error) {
	f, err := os.Open(n.memoryFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct{ Type, Name string }
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "entity" {
			names = append(names, e.Name)
		}
	}
	return names, sc.Err()
}

// NPMScenario is the fourth scenario, on the real npm servers: the customer
// export on disk (filesystem) filtered to the enterprise customers in Norway
// that are past due, each remembered in the knowledge graph (memory).
func NPMScenario(n *NPMServers) Scenario {
	path := n.CustomersPath()
	var due []Customer
	for _, c := range genCustomers() {
		if c.Country == "NO" && c.Plan == "enterprise" && c.Status == "past_due" {
			due = append(due, c)
		}
	}
	entity := func(c Customer) map[string]any {
		return map[string]any{"name": c.Company, "entityType": "customer",
			"observations": []string{"customer id " + c.ID, fmt.Sprintf("past due, %v USD a month", c.MRR)}}
	}
	return Scenario{
		Name: "npm-file-to-memory",
		Task: fmt.Sprintf("In the customer export %s, find the enterprise customers in Norway that are past due and remember each of them in the knowledge graph.", path),
		Direct: func(ctx context.Context, d *DirectCaller) error {
			// The filesystem server reads text, it cannot filter: the model
			// reads the whole export, then writes the entities.
			if err := d.Call(ctx, "filesystem", "read_text_file", map[string]any{"path": path}, nil); err != nil {
				return err
			}
			var entities []map[string]any
			for _, c := range due {
				entities = append(entities, entity(c))
			}
			return d.Call(ctx, "memory", "create_entities", map[string]any{"entities": entities}, nil)
		},
		Search: "read text file, create entities",
		Uses:   []string{"filesystem.read_text_file", "memory.create_entities"},
		Code: []string{
			// The columns are in the file's first line: look first.
			`from servers.filesystem import read_text_file
read_text_file(path="` + path + `", head=1)["content"]`,
			`import csv, io
from servers.filesystem import read_text_file
from servers.memory import create_entities
rows = csv.DictReader(io.StringIO(read_text_file(path="` + path + `")["content"]))
due = [r for r in rows if r["country"] == "NO" and r["plan"] == "enterprise" and r["status"] == "past_due"]
create_entities(entities=[{"name": r["company"], "entityType": "customer",
    "observations": ["customer id " + r["customer_id"], "past due, %s USD a month" % r["mrr_usd"]]} for r in due])
[r["company"] for r in due]`,
		},
		Target: 0.99,
		Check: func(answer any) error {
			var want []any
			for _, c := range due {
				want = append(want, c.Company)
			}
			if err := sameJSON(answer, want); err != nil {
				return err
			}
			names, err := n.entities()
			if err != nil {
				return fmt.Errorf("read the knowledge graph: %w", err)
			}
			for _, c := range due {
				if !slices.Contains(names, c.Company) {
					return fmt.Errorf("the knowledge graph has no entity %q: %s", c.Company, strings.Join(names, ", "))
				}
			}
			return nil
		},
	}
}

// RunNPM does the npm scenario both ways, code mode through runner, whose
// codecell must have n's servers as upstreams under the same names.
func RunNPM(ctx context.Context, runner CodeRunner, n *NPMServers) (Outcome, error) {
	tok, err := NewTokenizer()
	if err != nil {
		return Outcome{}, err
	}
	sc := NPMScenario(n)
	o, err := sc.Run(ctx, tok, runner, n)
	if err != nil {
		o.Error = err.Error()
	}
	return o, err
}
