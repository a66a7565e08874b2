package sandbox

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/codecell/codecell/internal/egress"
	"github.com/codecell/codecell/internal/testnet"
)

// egressAttack is one entry of testdata/egress-attacks.jsonl, a corpus
// written apart from the proxy, from a description of the sandbox alone
// (testdata/egress-attacks.md): each snippet tries one way past the
// allowlist and prints "BREACH ..." or "HELD ..." last.
type egressAttack struct {
	ID, Category, Description, Code string
}

// TestEgressRedTeam runs every attack of the corpus in a sandbox allowed
// api.test.example:443 only, at production and at hardened: none may
// print a forbidden host's canary or say it got through, and the hosts it
// must not reach see no request.
func TestEgressRedTeam(t *testing.T) {
	for _, level := range []Level{Production, Hardened} {
		t.Run(string(level), func(t *testing.T) { testEgressRedTeam(t, level) })
	}
}

func testEgressRedTeam(t *testing.T, level Level) {
	f, err := os.Open("../../testdata/egress-attacks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var attacks []egressAttack
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var a egressAttack
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("corpus line: %v", err)
		}
		attacks = append(attacks, a)
	}
	if len(attacks) < 40 {
		t.Fatalf("%d attacks in the corpus", len(attacks))
	}
	m, ws := newTestManager(t, level, DefaultLimits, 0)
	e := newNetEnv(t)
	canaries := []string{testnet.Canary("other.test.example"), "CANARY-LOOPBACK"}
	for _, a := range attacks {
		t.Run(a.ID, func(t *testing.T) {
			res := execNet(t, m, ws, e.network, a.Code, e.globals())
			out := res.Stdout + res.Stderr
			for _, c := range canaries {
				if strings.Contains(out, c) {
					t.Errorf("%s (%s): the canary %s came back:\n%s", a.ID, a.Description, c, out)
				}
			}
			lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
			last := lines[len(lines)-1]
			if strings.HasPrefix(last, "BREACH") {
				t.Errorf("%s (%s): %s\nnetwork: %+v", a.ID, a.Description, last, res.Network)
			} else if !strings.HasPrefix(last, "HELD") {
				t.Logf("%s: no verdict line (stdout %q, error %+v)", a.ID, res.Stdout, res.Error)
			}
		})
	}
	if n := len(e.other.Requests()); n != 0 {
		t.Errorf("other.test.example got %d requests: %+v", n, e.other.Requests())
	}
	for _, r := range e.api.Requests() {
		if !r.TLS || r.Port != 443 {
			t.Errorf("api.test.example got a request on port %d (TLS %v): %+v", r.Port, r.TLS, r)
		}
	}
	// The control: with a policy that lets the test hosts through, the
	// same harness sees breaches, so a held verdict above means something.
	open, err := egress.ParseRules([]string{"*.test.example:*", "10.213.0.0/16:*"})
	if err != nil {
		t.Fatal(err)
	}
	lax := *e.network
	pol := *lax.Policy
	pol.Allow = open
	lax.Policy = &pol
	breaches := 0
	for _, a := range attacks {
		if !strings.Contains(a.Code, "other.test.example") && !strings.Contains(a.Code, "OTHER_IP") {
			continue
		}
		res := execNet(t, m, ws, &lax, a.Code, e.globals())
		if strings.Contains(res.Stdout, testnet.Canary("other.test.example")) {
			breaches++
		}
		if breaches == 10 {
			break
		}
	}
	if breaches < 10 {
		t.Errorf("with the test hosts allowed, only %d attacks got their canary: the harness cannot see a breach", breaches)
	}
}
