package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestScratchList(t *testing.T) {
	tk, _ := NewTokenizer()
	dir := t.TempDir()
	os.WriteFile(dir+"/c.json", []byte(`{"sandbox":{"isolation":"development"}}`), 0o600)
	for _, ts := range []string{"", "exec,discovery"} {
		args := []string{"serve", "--config", dir + "/c.json", "--data-dir", dir + "/d"}
		if ts != "" {
			args = append(args, "--toolsets", ts)
		}
		cmd := exec.Command("/tmp/bench-cc/codecell", args...)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "x"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Tools)
		t.Logf("%q: %d tools, %d bytes, %d tokens", ts, len(res.Tools), len(b), tk.Count(string(b)))
		for _, tl := range res.Tools {
			b, _ := json.Marshal(tl)
			t.Logf("  %s %d", tl.Name, tk.Count(string(b)))
		}
		init := cs.InitializeResult()
		t.Logf("instructions %d tokens", tk.Count(init.Instructions))
		cs.Close()
	}
}
