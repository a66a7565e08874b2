package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTasksReplicas: executions as 2026-07-28 tasks behind HAProxy
// (deploy/haproxy.cfg) in front of three replicas on PostgreSQL. Every
// request is a new connection: tasks/get reaches whichever replica the
// balancer picks, and each answers from the shared database; when the
// replica that runs a task is killed, the task reads as failed, naming it,
// on the others.
func TestTasksReplicas(t *testing.T) {
	cfg := map[string]any{
		"sandbox": json.RawMessage(`{"isolation": "production", "python": "/usr/bin/python3", "pool": 1, "timeout": "60s", "taskAfter": "1s"}`),
	}
	c := startClusterConfig(t, 3, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	endpoint := c.lb + "/mcp"

	start := func(code string) (string, string) {
		t.Helper()
		res, who, err := post2026(ctx, endpoint, "tools/call", map[string]any{"name": "execute_code",
			"arguments": map[string]any{"code": code, "timeout_seconds": 900}})
		if err != nil {
			t.Fatal(err)
		}
		if res["resultType"] != "task" {
			t.Fatalf("not a task: %v", res)
		}
		return res["taskId"].(string), who
	}
	get := func(id string) (map[string]any, string) {
		t.Helper()
		res, who, err := post2026(ctx, endpoint, "tasks/get", map[string]any{"taskId": id})
		if err != nil {
			t.Fatal(err)
		}
		return res, who
	}

	id, owner := start("import time\nfor i in range(8):\n    print(i, flush=True)\n    time.sleep(0.5)\n'finished'")
	answered := map[string]bool{}
	var final map[string]any
	for deadline := time.Now().Add(3 * time.Minute); ; {
		res, who := get(id)
		answered[who] = true
		if s := res["status"]; s == "completed" || s == "failed" || s == "cancelled" {
			final = res
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not end: %v", res)
		}
		time.Sleep(200 * time.Millisecond)
	}
	sc, _ := final["result"].(map[string]any)["structuredContent"].(map[string]any)
	if final["status"] != "completed" || sc["result"] != "finished" {
		t.Fatalf("task ended %v", final)
	}
	t.Logf("task run on %s; tasks/get answered by %v", owner, answered)
	if len(answered) < 2 {
		t.Errorf("tasks/get reached only %v: the balancer sent every poll to one replica", answered)
	}

	// The replica that runs a task dies: the others say so.
	id, owner = start("import time\ntime.sleep(600)")
	for _, r := range c.replicas {
		if r.name == owner {
			if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	for deadline := time.Now().Add(3 * time.Minute); ; {
		res, who := get(id)
		if res["status"] == "failed" {
			if who == owner || !strings.Contains(fmt.Sprint(res["statusMessage"]), owner) || res["error"] == nil {
				t.Errorf("the dead replica's task reads %v (answered by %s)", res, who)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead replica's task still reads %v", res)
		}
		time.Sleep(time.Second)
	}
}

// post2026 sends one 2026-07-28 request on a new connection and returns its
// result and the replica that answered (Codecell-Replica).
func post2026(ctx context.Context, endpoint, method string, params map[string]any) (map[string]any, string, error) {
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":      map[string]any{"name": "tasks-e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	} else if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	who := resp.Header.Get("Codecell-Replica")
	var msg []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				msg = []byte(d)
			}
		}
	} else {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		msg = b.Bytes()
	}
	var m struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, who, fmt.Errorf("%s: HTTP %d: %q: %v", method, resp.StatusCode, msg, err)
	}
	if m.Error != nil {
		return nil, who, fmt.Errorf("%s: %v", method, m.Error)
	}
	return m.Result, who, nil
}
