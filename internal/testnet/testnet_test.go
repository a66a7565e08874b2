package testnet

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// client reaches h from the test's namespace: no proxy, the test CA, SNI = h.Name unless
// serverName says otherwise (an IP URL with serverName "" sends no SNI), redirects not followed.
func client(ca *CA, serverName string) *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool, ServerName: serverName}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func get(t *testing.T, c *http.Client, url string, hdr http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode == http.StatusFound {
		return resp.StatusCode, resp.Header.Get("Location")
	}
	return resp.StatusCode, string(b)
}

func TestHosts(t *testing.T) {
	ca := NewCA(t)
	var gone []*Host
	var slow chan error // the in-flight request, which ends when its host stops
	t.Run("serve", func(t *testing.T) {
		api := Start(t, Options{Name: "api.test.example", CA: ca})
		other := Start(t, Options{Name: "other.test.example", CA: ca, Ports: []int{8080}, TLSPorts: []int{8443, 9443}})
		custom := Start(t, Options{Name: "custom.test.example", CA: ca, TLSPorts: []int{},
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "custom") })})
		gone = append(gone, api, other, custom)
		for _, h := range gone {
			if !h.Addr.Is4() || h.Addr.IsLoopback() || !netip.MustParsePrefix("10.213.0.0/16").Contains(h.Addr) {
				t.Errorf("%s: address %v", h.Name, h.Addr)
			}
		}
		if api.Addr == other.Addr {
			t.Fatalf("both hosts at %v", api.Addr)
		}

		apiC, otherC := client(ca, api.Name), client(ca, other.Name)
		base := "http://" + api.Addr.String()
		if code, body := get(t, apiC, base+"/", nil); code != 200 || body != "hello from api.test.example\nCANARY-API-TEST-EXAMPLE\n" {
			t.Errorf("api /: %d %q", code, body)
		}
		if code, body := get(t, apiC, "https://"+api.Addr.String()+"/anything", nil); code != 200 || !strings.Contains(body, "CANARY-API-TEST-EXAMPLE") {
			t.Errorf("api https /anything: %d %q", code, body)
		}
		if code, body := get(t, otherC, "https://"+other.Addr.String()+":9443/", nil); code != 200 || !strings.Contains(body, Canary(other.Name)) || strings.Contains(body, Canary(api.Name)) {
			t.Errorf("other https: %d %q", code, body)
		}
		if code, body := get(t, otherC, "http://"+other.Addr.String()+":8080/echo-host", http.Header{}); code != 200 || body != other.Addr.String()+":8080" {
			t.Errorf("other echo-host: %d %q", code, body)
		}
		// The IP is in the cert too; with an IP URL and no ServerName no SNI is sent.
		if code, _ := get(t, client(ca, ""), "https://"+other.Addr.String()+":8443/", nil); code != 200 {
			t.Errorf("other https by IP: %d", code)
		}
		if code, body := get(t, client(ca, ""), "http://"+custom.Addr.String()+"/x", nil); code != 200 || body != "custom" {
			t.Errorf("custom: %d %q", code, body)
		}

		req, _ := http.NewRequest("GET", base+"/echo-host", nil)
		req.Host = "spoofed.example:81"
		if resp, err := apiC.Do(req); err != nil {
			t.Error(err)
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "spoofed.example:81" {
				t.Errorf("echo-host: %q", b)
			}
		}
		if code, loc := get(t, apiC, base+"/redirect?to=http://other.test.example:8080/x%3Fy", nil); code != 302 || loc != "http://other.test.example:8080/x?y" {
			t.Errorf("redirect: %d %q", code, loc)
		}
		const secret = "Bearer s3cret-value"
		if code, body := get(t, apiC, base+"/auth?want=Bearer+s3cret-value", http.Header{"Authorization": {secret}}); code != 200 || body != "authorized" {
			t.Errorf("auth: %d %q", code, body)
		}
		if code, body := get(t, apiC, base+"/auth?want=Bearer+other", http.Header{"Authorization": {secret}}); code != 401 || strings.Contains(body, "s3cret") {
			t.Errorf("auth wrong: %d %q", code, body)
		}
		if code, body := get(t, apiC, base+"/auth?want=", nil); code != 401 {
			t.Errorf("auth none: %d %q", code, body)
		}
		if code, body := get(t, apiC, base+"/bytes?n=1048577", nil); code != 200 || len(body) != 1048577 || strings.Trim(body, "x") != "" {
			t.Errorf("bytes: %d, %d bytes", code, len(body))
		}
		if code, _ := get(t, apiC, base+"/bytes?n=268435457", nil); code != 400 {
			t.Errorf("bytes over the cap: %d", code)
		}
		if code, body := get(t, apiC, base+"/slow?seconds=0", nil); code != 200 || body != "slept" {
			t.Errorf("slow: %d %q", code, body)
		}

		// Not on loopback: nothing of theirs answers there.
		for _, port := range []string{"8080", "8443", "9443"} {
			if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second); err == nil {
				c.Close()
				t.Errorf("something listens on 127.0.0.1:%s", port)
			}
		}

		// Recorded, in order, with TLS, port and SNI; the readiness probes are not.
		want := []Request{
			{Method: "GET", Host: other.Addr.String() + ":9443", Path: "/", TLS: true, Port: 9443, ServerName: other.Name},
			{Method: "GET", Host: other.Addr.String() + ":8080", Path: "/echo-host", Port: 8080},
			{Method: "GET", Host: other.Addr.String() + ":8443", Path: "/", TLS: true, Port: 8443},
		}
		got := other.Requests()
		if len(got) != len(want) {
			t.Fatalf("other recorded %d requests: %+v", len(got), got)
		}
		for i := range want {
			g := got[i]
			g.Header = nil
			if !reflect.DeepEqual(g, want[i]) {
				t.Errorf("request %d: %+v, want %+v", i, g, want[i])
			}
		}
		ar := api.Requests()
		if len(ar) != 10 || ar[1].ServerName != api.Name || !ar[1].TLS || ar[1].Port != 443 || ar[0].Port != 80 || ar[2].Host != "spoofed.example:81" {
			t.Errorf("api recorded: %+v", ar)
		}
		if ar[4].Header.Get("Authorization") != secret {
			t.Errorf("auth request header not recorded: %+v", ar[4])
		}

		// A request still in flight does not hold up the cleanup.
		done := make(chan error, 1)
		slow = done
		go func() {
			resp, err := apiC.Get(base + "/slow?seconds=3600")
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
		for len(api.Requests()) < 11 {
			time.Sleep(5 * time.Millisecond)
		}
	})
	if slow != nil {
		if err := <-slow; err == nil {
			t.Error("the in-flight /slow request completed")
		}
	}

	if len(gone) != 3 {
		t.Skip("no hosts started")
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := exec.Command("ip", "-o", "-4", "addr", "show").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range gone {
		if strings.Contains(string(out)+"\n", h.Netns+" ") || strings.Contains(string(out)+"\n", h.Netns+"\n") {
			t.Errorf("namespace %s still there: %s", h.Netns, out)
		}
		if gw := h.Addr.Prev().String() + "/30"; strings.Contains(string(addrs), " "+gw+" ") {
			t.Errorf("veth address %s still there: %s", gw, addrs)
		}
	}
}

func TestSweep(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip(err)
	}
	// A namespace named for a pid that cannot be alive (above pid_max's hard limit).
	const name = "cc-99999999-1"
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("cannot make a namespace: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	Sweep()
	out, _ := exec.Command("ip", "netns", "list").CombinedOutput()
	if strings.Contains(string(out), name) {
		t.Errorf("Sweep left %s: %s", name, out)
	}
}

func TestCanary(t *testing.T) {
	if got := Canary("api.test.example"); got != "CANARY-API-TEST-EXAMPLE" {
		t.Error(got)
	}
	if got := Canary("x_1.Y-z"); got != "CANARY-X-1-Y-Z" {
		t.Error(got)
	}
}
