package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/httpapi"
	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/store"
	"github.com/codecell/codecell/internal/store/pgtest"
)

// cluster is PostgreSQL, several codecell replicas on one data dir, and
// HAProxy in front of them with deploy/haproxy.cfg.
type cluster struct {
	pgURL    string
	lb       string // HAProxy's base URL
	replicas []*replica
}

// replica is one codecell serve --http process.
type replica struct {
	name string
	addr string // host:port
	cmd  *exec.Cmd
	log  *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// haproxyPath is HAProxy's binary, or "" when it is not installed.
func haproxyPath() string {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	return ""
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCluster starts PostgreSQL, n replicas (at once: they race to migrate
// the new database) on one data dir, and HAProxy, and returns once every
// replica is ready and HAProxy answers. It skips when PostgreSQL, HAProxy or
// bubblewrap is missing (make test installs them all).
func startCluster(t testing.TB, n int, sandboxCfg string) *cluster {
	t.Helper()
	return startClusterConfig(t, n, map[string]any{"sandbox": json.RawMessage(sandboxCfg), "toolsets": []string{"all"}})
}

// startClusterConfig is startCluster with the replicas' config (the store's
// URL is added to it).
func startClusterConfig(t testing.TB, n int, config map[string]any) *cluster {
	t.Helper()
	requireProduction(t)
	hap := haproxyPath()
	if hap == "" {
		t.Skip("HAProxy not installed (apt-get install haproxy; make test installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg, err := pgtest.Start(ctx)
	if errors.Is(err, pgtest.ErrNoPostgres) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	url, err := pg.CreateDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{pgURL: url}
	config = maps.Clone(config)
	config["store"] = map[string]any{"url": url}
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath, dataDir := testDirs(t, string(raw))

	c.replicas = make([]*replica, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range c.replicas {
		wg.Go(func() { c.replicas[i], errs[i] = startReplica(t, cfgPath, dataDir, fmt.Sprintf("r%d", i+1)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.replicas {
		if err := waitReady(ctx, "http://"+r.addr); err != nil {
			t.Fatalf("replica %s: %v\n%s", r.name, err, r.log.String())
		}
	}

	lb := freeAddr(t)
	env := append(os.Environ(), "CODECELL_LB="+lb, "CODECELL_HEALTH_AUTH=none")
	for i := range 3 { // the config names three servers; extra ones point nowhere
		addr := "127.0.0.1:1"
		if i < n {
			addr = c.replicas[i].addr
		}
		env = append(env, fmt.Sprintf("CODECELL_R%d=%s", i+1, addr))
	}
	cfg, err := filepath.Abs("../../deploy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	hlog := &syncBuffer{}
	h := exec.Command(hap, "-db", "-f", cfg)
	h.Env, h.Stdout, h.Stderr = env, hlog, hlog
	h.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Process.Kill()
		h.Wait()
		if t.Failed() {
			t.Logf("haproxy log (tail):\n%s", tail(hlog.String(), 60))
		}
	})
	c.lb = "http://" + lb
	if err := waitReady(ctx, c.lb); err != nil {
		t.Fatalf("through HAProxy: %v\n%s", err, hlog.String())
	}
	return c
}

// startReplica starts codecell serve --http --replica name on a free port.
func startReplica(t testing.TB, cfgPath, dataDir, name string) (*replica, error) {
	r := &replica{name: name, log: &syncBuffer{}}
	r.cmd = exec.Command(binary, "serve", "--http", "127.0.0.1:0", "--replica", name, "--config", cfgPath, "--data-dir", dataDir)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		r.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			r.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("replica %s log (tail):\n%s", name, tail(r.log.String(), 40))
		}
	})
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		for lines.Scan() {
			fmt.Fprintln(r.log, lines.Text())
			if m := servingAddr.FindStringSubmatch(lines.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case r.addr = <-found:
		return r, nil
	case <-time.After(2 * time.Minute):
		return nil, fmt.Errorf("replica %s did not report its address; log:\n%s", name, r.log.String())
	}
}

// waitReady polls base/readyz until it answers 200.
func waitReady(ctx context.Context, base string) error {
	var last string
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %s", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lbClient is an MCP client connected through the balancer, which notes
// the replicas that answered it (the Codecell-Replica header).
type lbClient struct {
	cs *mcp.ClientSession
	rt *replicaRecorder
}

type replicaRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen map[string]int // replica -> answers
}

// RoundTrip notes the replica of each answer within the MCP session: to a
// request that carries its id, or the answer that creates it. (The client
// may ask something before its initialize, which any replica answers.)
func (r *replicaRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err == nil && (req.Header.Get("Mcp-Session-Id") != "" || resp.Header.Get("Mcp-Session-Id") != "") {
		if name := resp.Header.Get(httpapi.ReplicaHeader); name != "" {
			r.mu.Lock()
			r.seen[name]++
			r.mu.Unlock()
		}
	}
	return resp, err
}

// replicas returns the replicas that answered so far.
func (r *replicaRecorder) replicas() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name := range r.seen {
		out = append(out, name)
	}
	return out
}

// connectLB opens an MCP session through the balancer, as a 2025 client
// (TestReplicasModern has the 2026 ones).
func connectLB(ctx context.Context, lb string) (*lbClient, error) {
	rt := &replicaRecorder{base: http.DefaultTransport.(*http.Transport).Clone(), seen: map[string]int{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "replicas-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: lb + "/mcp", HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1,
	}, legacyProtocol)
	if err != nil {
		return nil, err
	}
	return &lbClient{cs: cs, rt: rt}, nil
}

// replica is the replica that holds the client's session (the one that
// answered its initialize; TestReplicas checks that no other answers).
func (c *lbClient) replica() string {
	names := c.rt.replicas()
	if len(names) != 1 {
		return fmt.Sprint(names)
	}
	return names[0]
}

// exec runs code (in session, when not "") and returns its output.
func (c *lbClient) exec(ctx context.Context, code, session string) (server.ExecuteCodeOutput, error) {
	args := map[string]any{"code": code}
	if session != "" {
		args["session_id"] = session
	}
	var out server.ExecuteCodeOutput
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: args})
	if err != nil {
		return out, err
	}
	if err := decodeStructured(res, &out); err != nil {
		return out, err
	}
	if res.IsError || !out.OK {
		return out, fmt.Errorf("execute_code failed: %s", textOf(res))
	}
	return out, nil
}

func decodeStructured(res *mcp.CallToolResult, out any) error {
	if res.StructuredContent == nil {
		return fmt.Errorf("no structured content: %s", textOf(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// TestReplicas runs three replicas on one data dir and one PostgreSQL
// behind HAProxy (deploy/haproxy.cfg) and shows what the README's "Several
// replicas" promises: sessions stick to
// their replica (an interpreter keeps its names across calls, and no other
// replica ever answers a session); what one replica commits (skills, vault
// tokens) the others use; a replica killed under load loses only its
// executions in flight: its clients get a clear 404 for their old session,
// reconnect through the balancer and go on, the other replicas' clients
// never notice, and every execution that returned, every skill saved and
// every token issued is in the database afterwards.
func TestReplicas(t *testing.T) {
	c := startCluster(t, 3, `{"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "60s"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Each replica's metrics carry its name.
	for _, r := range c.replicas {
		resp, err := http.Get("http://" + r.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), fmt.Sprintf("codecell_pool_sandboxes{replica=%q,", r.name)) {
			t.Errorf("replica %s: its metrics lack the replica label:\n%s", r.name, tail(string(body), 20))
		}
	}

	// Affinity: each client's interpreter session counts 1, 2, 3 (a call
	// landing on another replica would get 404, or a new interpreter).
	// Interpreter sessions belong to the namespace, so each client has its
	// own id.
	const nClients = 6
	clients := make([]*lbClient, nClients)
	for i := range clients {
		cl, err := connectLB(ctx, c.lb)
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		clients[i] = cl
		t.Cleanup(func() { cl.cs.Close() })
	}
	counter := "try:\n    n += 1\nexcept NameError:\n    n = 1\nprint(n)"
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Go(func() {
			for k := 1; k <= 3; k++ {
				out, err := cl.exec(ctx, counter, fmt.Sprint("s", i))
				if err != nil {
					t.Errorf("client %d call %d: %v", i, k, err)
					return
				}
				if out.Stdout != fmt.Sprintf("%d\n", k) || out.SessionStarted != (k == 1) {
					t.Errorf("client %d call %d: stdout %q, started %v: the interpreter session did not stick", i, k, out.Stdout, out.SessionStarted)
				}
			}
		})
	}
	wg.Wait()
	byReplica := map[string][]*lbClient{}
	for i, cl := range clients {
		if names := cl.rt.replicas(); len(names) != 1 {
			t.Fatalf("client %d was answered by replicas %v: its MCP session did not stick", i, names)
		}
		byReplica[cl.replica()] = append(byReplica[cl.replica()], cl)
	}
	if len(byReplica) < 2 {
		t.Fatalf("every session went to %v: the balancer did not spread them", byReplica)
	}
	t.Logf("sessions per replica: %v", func() map[string]int {
		m := map[string]int{}
		for r, cls := range byReplica {
			m[r] = len(cls)
		}
		return m
	}())

	// Shared state: a skill saved through one replica is imported on
	// another, and a value gets the same token on every replica.
	victim := clients[0].replica()
	var other *lbClient
	for _, cl := range clients {
		if cl.replica() != victim {
			other = cl
			break
		}
	}
	res, err := clients[0].cs.CallTool(ctx, &mcp.CallToolParams{Name: "save_skill", Arguments: map[string]any{
		"name": "greet", "description": "says hello", "code": "def greet(who):\n    return 'hello ' + who\n"}})
	if err != nil {
		t.Fatalf("save_skill on %s: %v", victim, err)
	}
	if res.IsError {
		t.Fatalf("save_skill on %s: %s", victim, textOf(res))
	}
	out, err := other.exec(ctx, "from skills.greet import greet\nprint(greet('there'))", "")
	if err != nil || out.Stdout != "hello there\n" {
		t.Fatalf("skill saved on %s, imported on %s: %q, %v", victim, other.replica(), out.Stdout, err)
	}
	email := "alice.replica@example.com"
	tokens := map[string]bool{}
	for _, cl := range []*lbClient{clients[0], other} {
		out, err := cl.exec(ctx, fmt.Sprintf("print(%q)", email), "")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.Stdout, email) {
			t.Fatalf("the address reached the client: %q", out.Stdout)
		}
		tokens[strings.TrimSpace(out.Stdout)] = true
	}
	if len(tokens) != 1 {
		t.Fatalf("one value, tokens %v from replicas %s and %s", tokens, victim, other.replica())
	}
	var token string
	for tok := range tokens {
		token = tok
	}

	// Failure: load on every client, then the victim is killed.
	type progress struct {
		mu         sync.Mutex
		returned   []string // markers of executions whose result came back
		saved      []string // skills whose save returned
		afterKill  int      // successful calls after the kill
		reconnects int
		errs       []error
	}
	progs := make([]*progress, nClients)
	home := make([]string, nClients) // each client's replica before the kill
	for i, cl := range clients {
		home[i] = cl.replica()
	}
	var killedAt time.Time
	var killMu sync.Mutex
	var firstAfterKill time.Duration
	stop := make(chan struct{})
	for i, cl := range clients {
		p := &progress{}
		progs[i] = p
		onVictim := home[i] == victim
		wg.Go(func() {
			cur := cl
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				marker := fmt.Sprintf("load-%d-%d", i, k)
				cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
				var err error
				if i == 0 && k%3 == 2 { // the victim's first client also saves skills
					name := fmt.Sprintf("s_%d", k)
					var res *mcp.CallToolResult
					res, err = cur.cs.CallTool(cctx, &mcp.CallToolParams{Name: "save_skill", Arguments: map[string]any{
						"name": name, "description": "load", "code": fmt.Sprintf("def f():\n    return %d\n", k)}})
					if err == nil && res.IsError {
						err = fmt.Errorf("save_skill: %s", textOf(res))
					}
					if err == nil {
						p.mu.Lock()
						p.saved = append(p.saved, name)
						p.mu.Unlock()
					}
				} else {
					_, err = cur.exec(cctx, fmt.Sprintf("# %s\nimport time; time.sleep(0.05); print(%q)", marker, marker), "")
					if err == nil {
						p.mu.Lock()
						p.returned = append(p.returned, marker)
						p.mu.Unlock()
					}
				}
				ccancel()
				killMu.Lock()
				killed := killedAt
				if err == nil && !killed.IsZero() && firstAfterKill == 0 && onVictim {
					firstAfterKill = time.Since(killed)
				}
				killMu.Unlock()
				if err == nil {
					if !killed.IsZero() {
						p.mu.Lock()
						p.afterKill++
						p.mu.Unlock()
					}
					continue
				}
				p.mu.Lock()
				p.errs = append(p.errs, err)
				p.mu.Unlock()
				if !onVictim || killed.IsZero() {
					return // reported below
				}
				// The victim's clients reconnect through the balancer.
				for {
					select {
					case <-stop:
						return
					default:
					}
					rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
					ncl, err := connectLB(rctx, c.lb)
					rcancel()
					if err == nil {
						cur = ncl
						t.Cleanup(func() { ncl.cs.Close() })
						p.mu.Lock()
						p.reconnects++
						p.mu.Unlock()
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	waitFor := func(what string, bound time.Duration, cond func() bool) {
		deadline := time.Now().Add(bound)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("gave up waiting (%v) for %s", bound, what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("every client to run a few calls", 2*time.Minute, func() bool {
		for _, p := range progs {
			p.mu.Lock()
			n := len(p.returned) + len(p.saved)
			p.mu.Unlock()
			if n < 3 {
				return false
			}
		}
		return true
	})
	var vr *replica
	for _, r := range c.replicas {
		if r.name == victim {
			vr = r
		}
	}
	killMu.Lock()
	killedAt = time.Now()
	killMu.Unlock()
	if err := vr.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed replica %s (%d of its clients were under load)", victim, len(byReplica[victim]))

	// The old session gets a clear 404 through the balancer.
	waitFor("a 404 for the dead replica's session", time.Minute, func() bool {
		req, _ := http.NewRequest("POST", c.lb+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", clients[0].cs.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 404 && strings.Contains(string(body), "does not hold this MCP session") {
			t.Logf("the dead replica's session, through the balancer: 404 %s", strings.TrimSpace(string(body)))
			return true
		}
		return false
	})
	waitFor("the victim's clients to reconnect and go on", 3*time.Minute, func() bool {
		for i, p := range progs {
			p.mu.Lock()
			ok := p.afterKill >= 3 && (home[i] != victim || p.reconnects > 0)
			p.mu.Unlock()
			if !ok {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	killMu.Lock()
	t.Logf("from the kill to the next successful call of a reconnected client: %v", firstAfterKill)
	killMu.Unlock()
	for i, p := range progs {
		if home[i] != victim && len(p.errs) > 0 {
			t.Errorf("client %d on %s, a live replica, failed: %v", i, home[i], p.errs)
		}
	}

	// A reconnected client that asks for its old interpreter session gets
	// a new one, and is told where the old one was.
	ncl, err := connectLB(ctx, c.lb)
	if err != nil {
		t.Fatal(err)
	}
	defer ncl.cs.Close()
	if out, err := ncl.exec(ctx, counter, "s0"); err != nil || !out.SessionStarted || out.SessionElsewhere != victim || out.Stdout != "1\n" {
		t.Errorf("client 0's old session s0 after the kill, on %s: %+v, %v; want a new session naming %s", ncl.replica(), out, err, victim)
	}

	// Nothing committed is lost.
	db, err := store.OpenWith(store.Options{URL: c.pgURL, Replica: "check"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	logged := map[string]bool{}
	for before := int64(0); ; {
		page, err := db.ListExecutions(ctx, server.DefaultNamespace, before, store.MaxListLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if m, _, ok := strings.Cut(strings.TrimPrefix(e.Code, "# "), "\n"); ok {
				logged[m] = true
			}
		}
		before = page[len(page)-1].ID
	}
	returned, saved := 0, 0
	for _, p := range progs {
		for _, m := range p.returned {
			returned++
			if !logged[m] {
				t.Errorf("execution %s returned but is not in the log", m)
			}
		}
		for _, name := range p.saved {
			saved++
			if _, err := db.GetSkill(ctx, server.DefaultNamespace, name, 0); err != nil {
				t.Errorf("skill %s was saved but is gone: %v", name, err)
			}
		}
	}
	if v, ok, err := db.VaultValue(ctx, server.DefaultNamespace, token); err != nil || !ok || v != email {
		t.Errorf("token %s: %q %v %v", token, v, ok, err)
	}
	t.Logf("%d executions and %d skill saves returned, all in the database", returned, saved)
}

var replicasBench = flag.Bool("replicas-bench", false, "run TestReplicasThroughput, the measurement in BENCHMARKS.md (go test -run TestReplicasThroughput ./cmd/codecell/ -args -replicas-bench)")

// TestReplicasThroughput measures what BENCHMARKS.md reports for several
// replicas: trivial executions per second through HAProxy with 1, 2 and 3
// replicas (8 clients, each with its own MCP session), and the time from a
// replica's SIGKILL to the next successful call of a client that was on
// it, reconnecting through the balancer. It runs only with
// -replicas-bench (after -args): it measures, it does not test.
func TestReplicasThroughput(t *testing.T) {
	if !*replicasBench {
		t.Skip("a measurement: run with -replicas-bench")
	}
	const clients, calls = 8, 100 // calls per client
	sandboxCfg := `{"isolation": "production", "python": "/usr/bin/python3", "pool": 4, "timeout": "60s"}`
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("replicas=%d", n), func(t *testing.T) {
			c := startCluster(t, n, sandboxCfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			time.Sleep(3 * time.Second) // HAProxy's checks mark the unused server lines down
			rate, spread := measureThroughput(ctx, t, c.lb, clients, calls)
			t.Logf("replicas=%d: %.1f executions/s through HAProxy (%d clients, %d executions; sessions per replica %v)",
				n, rate, clients, clients*calls, spread)
			if n == 1 {
				rate, _ := measureThroughput(ctx, t, "http://"+c.replicas[0].addr, clients, calls)
				t.Logf("replicas=1: %.1f executions/s straight to the replica", rate)
			}
		})
	}
	for rep := 1; rep <= 3; rep++ {
		t.Run(fmt.Sprintf("failover-%d", rep), func(t *testing.T) {
			c := startCluster(t, 3, sandboxCfg)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			connStart := time.Now()
			cl, err := connectLB(ctx, c.lb)
			if err != nil {
				t.Fatal(err)
			}
			through := time.Since(connStart)
			connStart = time.Now()
			dcl, err := connectLB(ctx, "http://"+c.replicas[0].addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("opening a session: %v through HAProxy, %v straight to a replica",
				through.Round(time.Millisecond), time.Since(connStart).Round(time.Millisecond))
			dcl.cs.Close()
			if _, err := cl.exec(ctx, "print(1)", ""); err != nil {
				t.Fatal(err)
			}
			victim := cl.replica()
			for _, r := range c.replicas {
				if r.name == victim {
					r.cmd.Process.Signal(syscall.SIGKILL)
				}
			}
			killed := time.Now()
			cur := cl
			var failedAfter, reconnectedAfter time.Duration // to the first error, to the new session
			for {
				if _, err := cur.exec(ctx, "print(1)", ""); err == nil {
					break
				}
				if failedAfter == 0 {
					failedAfter = time.Since(killed)
				}
				if ctx.Err() != nil {
					t.Fatal("no successful call after the kill")
				}
				if ncl, err := connectLB(ctx, c.lb); err == nil {
					cur = ncl
					reconnectedAfter = time.Since(killed)
					t.Cleanup(func() { ncl.cs.Close() })
				}
			}
			t.Logf("failover: the old session's call failed after %v, a new session was open after %v",
				failedAfter.Round(time.Millisecond), reconnectedAfter.Round(time.Millisecond))
			t.Logf("failover: replica %s killed; next successful call (after reconnecting) %v later", victim, time.Since(killed).Round(time.Millisecond))
		})
	}
}

// measureThroughput opens clients MCP sessions on base, warms each, then
// has them all run calls trivial executions at once, and returns the
// executions per second and the sessions per replica.
func measureThroughput(ctx context.Context, t *testing.T, base string, clients, calls int) (float64, map[string]int) {
	t.Helper()
	cls := make([]*lbClient, clients)
	for i := range cls {
		cl, err := connectLB(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		cls[i] = cl
		t.Cleanup(func() { cl.cs.Close() })
		for range 3 { // warm: each session's first calls
			if _, err := cl.exec(ctx, "print(1)", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Go(func() {
			for range calls {
				if _, err := cl.exec(ctx, "print(1)", ""); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	spread := map[string]int{}
	for _, cl := range cls {
		spread[cl.replica()]++
		cl.cs.Close()
	}
	return float64(clients*calls) / el.Seconds(), spread
}
