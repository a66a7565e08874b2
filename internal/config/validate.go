package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/codecell/codecell/internal/egress"
	"github.com/nyaruka/phonenumbers"
	"golang.org/x/net/http/httpguts"
)

var (
	serverNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	namespaceRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	piiKindRE    = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// MinTokenLength is the shortest bearer token http.tokens accepts.
const MinTokenLength = 16

// Validate checks every rule a parsed config obeys: value sets, ranges and
// combinations of fields. Parse has already called it; call it again after
// changing a Config in code (for example to apply command-line flags). The
// error joins one *Error per problem, with key paths as in the JSON file.
func (c *Config) Validate() error {
	ps := c.problems()
	if len(ps) == 0 {
		return nil
	}
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p.err
	}
	return errors.Join(errs...)
}

// problem is one broken rule. paths are the key paths it concerns: the one
// it is reported at first, then any other it depends on.
type problem struct {
	err   *Error
	paths []string
}

// checker collects problems.
type checker struct {
	file string
	ps   []problem
}

// add records a problem at path that also depends on the related paths.
func (k *checker) add(path string, related []string, format string, args ...any) {
	k.ps = append(k.ps, problem{
		err:   &Error{File: k.file, Path: path, Reason: fmt.Sprintf(format, args...)},
		paths: append([]string{path}, related...),
	})
}

// addf records a problem at path.
func (k *checker) addf(path, format string, args ...any) {
	k.add(path, nil, format, args...)
}

// problems returns every broken rule, in the order of the config's sections.
func (c *Config) problems() []problem {
	k := &checker{file: c.File}
	k.servers(c.MCPServers)
	k.sandbox(&c.Sandbox)
	k.policy(&c.Policy)
	k.pii(&c.PII)
	k.http(&c.HTTP)
	k.sessions(&c.Sessions)
	k.store(&c.Store, &c.Sandbox)
	k.toolsets(c.Toolsets)
	return k.ps
}

func (k *checker) servers(servers map[string]Server) {
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		k.server(name, servers[name])
	}
}

func (k *checker) server(name string, s Server) {
	p := join("mcpServers", name)
	if !serverNameRE.MatchString(name) {
		k.addf(p, "%q is not a valid server name: use letters, digits, _ and -, starting with a letter or digit", name)
	}
	if name == ReservedServer {
		k.addf(p, "%q is reserved for codecell's own tools (from codecell import ...); give the server another name", name)
	}
	if s.Name != name {
		k.addf(p, "Name %q differs from the server's key", s.Name)
	}
	switch {
	case s.Command != "" && s.URL != "":
		k.add(p, []string{join(p, "command"), join(p, "url")}, "has both command and url; set exactly one")
	case s.Command == "" && s.URL == "":
		k.add(p, []string{join(p, "command"), join(p, "url")}, "needs a command (a server codecell starts) or a url (a remote server)")
	case s.Command != "":
		if s.Transport != "stdio" {
			k.add(join(p, "transport"), []string{join(p, "type")}, "applies only to url servers; a command server always uses stdio")
		}
		if len(s.Headers) > 0 {
			k.addf(join(p, "headers"), "apply only to url servers")
		}
		if strings.ContainsRune(s.Command, 0) {
			k.addf(join(p, "command"), "contains a NUL byte")
		}
	case s.URL != "":
		if s.Transport != "streamable-http" && s.Transport != "sse" {
			k.add(join(p, "transport"), []string{join(p, "type")}, `%q is not a transport for a url server (want "streamable-http" or "sse")`, s.Transport)
		}
		// The URL is not quoted in the reason: it may carry a secret.
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			k.addf(join(p, "url"), "must be an http:// or https:// URL with a host")
		}
		if len(s.Args) > 0 {
			k.addf(join(p, "args"), "apply only to command servers")
		}
		if len(s.Env) > 0 {
			k.addf(join(p, "env"), "applies only to command servers")
		}
		if s.Cwd != "" {
			k.addf(join(p, "cwd"), "applies only to command servers")
		}
	}
	if s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
		k.addf(join(p, "cwd"), "%q is not an absolute path", s.Cwd)
	}
	for i, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			k.addf(index(join(p, "args"), i), "contains a NUL byte")
		}
	}
	for _, key := range sortedKeys(s.Env) {
		kp := join(join(p, "env"), key)
		if key == "" || strings.ContainsAny(key, "=\x00") {
			k.addf(kp, "is not a valid environment variable name")
		}
		if strings.ContainsRune(s.Env[key], 0) {
			k.addf(kp, "the value contains a NUL byte")
		}
	}
	for _, key := range sortedKeys(s.Headers) {
		hp := join(join(p, "headers"), key)
		if !isHeaderName(key) {
			k.addf(hp, "is not a valid HTTP header name")
		}
		if strings.ContainsAny(s.Headers[key], "\r\n\x00") {
			k.addf(hp, "the value contains a line break or NUL byte")
		}
	}
	if s.Timeout <= 0 {
		k.addf(join(p, "timeout"), "must be positive, not %s", formatDuration(s.Timeout))
	}
	if s.StartupTimeout <= 0 {
		k.addf(join(p, "startupTimeout"), "must be positive, not %s", formatDuration(s.StartupTimeout))
	}
}

func (k *checker) sandbox(s *Sandbox) {
	const p = "sandbox"
	switch s.Isolation {
	case "development", "production", "hardened":
	default:
		k.addf(p+".isolation", `%q is not an isolation level (want "development", "production" or "hardened")`, s.Isolation)
	}
	if !filepath.IsAbs(s.Python) {
		k.addf(p+".python", "%q is not an absolute path", s.Python)
	}
	k.positive(p+".timeout", s.Timeout)
	k.positive(p+".maxTimeout", s.MaxTimeout)
	if s.Timeout > 0 && s.MaxTimeout > 0 && s.MaxTimeout < s.Timeout {
		k.add(p+".maxTimeout", []string{p + ".timeout"}, "%s is less than timeout (%s)", formatDuration(s.MaxTimeout), formatDuration(s.Timeout))
	}
	k.positive(p+".taskAfter", s.TaskAfter)
	k.positive(p+".taskTimeout", s.TaskTimeout)
	if s.TaskTimeout > 0 && s.MaxTimeout > 0 && s.TaskTimeout < s.MaxTimeout {
		k.add(p+".taskTimeout", []string{p + ".maxTimeout"}, "%s is less than maxTimeout (%s)", formatDuration(s.TaskTimeout), formatDuration(s.MaxTimeout))
	}
	if s.CPUTime < time.Second {
		k.addf(p+".cpuTime", "%s is below the minimum 1s (the kernel counts CPU time in whole seconds)", formatDuration(s.CPUTime))
	}
	k.minSize(p+".memory", s.Memory, 32*MiB)
	k.minSize(p+".output", s.Output, KiB)
	k.minSize(p+".fileSize", s.FileSize, KiB)
	k.minSize(p+".tmpSize", s.TmpSize, MiB)
	k.minSize(p+".workspaceQuota", s.WorkspaceQuota, MiB)
	k.between(p+".workspaceEntries", s.WorkspaceEntries, 100, -1)
	switch s.WorkspaceImages {
	case "auto", "on", "off":
	default:
		k.addf(p+".workspaceImages", `%q is not one of "auto", "on", "off"`, s.WorkspaceImages)
	}
	k.between(p+".pids", s.Pids, 4, -1)
	k.between(p+".openFiles", s.OpenFiles, 16, -1)
	k.between(p+".maxToolCalls", s.MaxToolCalls, 1, -1)
	k.between(p+".pool", s.Pool, 0, 64)
	k.between(p+".idlePool", s.IdlePool, 0, 64) // past pool it means pool
	if s.NamespaceIdle != 0 && s.NamespaceIdle < time.Second {
		k.addf(p+".namespaceIdle", "%s is below the minimum 1s (0 keeps idle namespaces' resources for good)", formatDuration(s.NamespaceIdle))
	}
	k.between(p+".warmLimit", s.WarmLimit, 1, 1024)
	if s.WarmLimit >= 1 {
		k.between(p+".sparePool", s.SparePool, 0, s.WarmLimit) // spares are warm capacity too
	}
	k.minSize(p+".warmMemory", s.WarmMemory, 64*MiB)
	k.between(p+".concurrency", s.Concurrency, 1, 4096)
	k.between(p+".namespaceConcurrency", s.NamespaceConcurrency, 1, 4096)
	if s.NamespaceConcurrency > s.Concurrency && s.Concurrency >= 1 {
		k.add(p+".namespaceConcurrency", []string{p + ".concurrency"}, "%d is above concurrency (%d): one namespace could take every slot", s.NamespaceConcurrency, s.Concurrency)
	}
	if len(s.Preload) > maxPreload {
		k.addf(p+".preload", "lists %d modules; at most %d", len(s.Preload), maxPreload)
	}
	for i, m := range s.Preload {
		if !moduleName.MatchString(m) {
			k.addf(fmt.Sprintf("%s.preload[%d]", p, i), "%q is not a module name (such as numpy or matplotlib.pyplot)", m)
		}
	}
	if s.AnswerBudget != 0 {
		k.between(p+".answerBudget", s.AnswerBudget, MinAnswerBudget, -1)
	}
	k.network(p+".network", s.Network)
	for i, u := range s.IndexURLs {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			k.addf(fmt.Sprintf("%s.indexUrls[%d]", p, i), "%q is not an http:// or https:// URL with a host", u)
		}
	}
	for i, h := range s.IndexHosts {
		if host, port, err := net.SplitHostPort(h); err != nil || host == "" || port == "" {
			k.addf(fmt.Sprintf("%s.indexHosts[%d]", p, i), "%q is not host:port", h)
		}
	}
	for i, dir := range s.ExternalEnvironments {
		if !filepath.IsAbs(dir) || filepath.Clean(dir) == "/" {
			k.addf(fmt.Sprintf("%s.externalEnvironments[%d]", p, i), "%q is not an absolute directory other than /", dir)
		}
	}
	if s.Wheelhouse != "" && !filepath.IsAbs(s.Wheelhouse) {
		k.addf(p+".wheelhouse", "%q is not an absolute path", s.Wheelhouse)
	}
	if s.IndexURL != "" {
		// Not quoted in the reason: an index URL may carry credentials.
		if u, err := url.Parse(s.IndexURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			k.addf(p+".indexUrl", "must be an http:// or https:// URL with a host")
		}
	}
}

// positive checks a duration that must be above zero.
func (k *checker) positive(path string, d time.Duration) {
	if d <= 0 {
		k.addf(path, "must be positive, not %s", formatDuration(d))
	}
}

// minSize checks a size against its minimum.
func (k *checker) minSize(path string, n, min int64) {
	if n < min {
		k.addf(path, "%s is below the minimum %s", FormatSize(n), FormatSize(min))
	}
}

// between checks a count against its bounds; hi < 0 means no upper bound.
func (k *checker) between(path string, n, lo, hi int) {
	switch {
	case n < lo:
		k.addf(path, "%d is below the minimum %d", n, lo)
	case hi >= 0 && n > hi:
		k.addf(path, "%d is above the maximum %d", n, hi)
	}
}

func (k *checker) policy(p *Policy) {
	k.patterns("policy.allow", p.Allow)
	k.patterns("policy.deny", p.Deny)
	k.patterns("policy.approve", p.Approve)
	k.positive("policy.approvalTimeout", p.ApprovalTimeout)
}

// patterns checks tool-name patterns.
func (k *checker) patterns(p string, list []string) {
	for i, pat := range list {
		if pat == "" {
			k.addf(index(p, i), `is empty (write "server.tool", "server.*" or "*")`)
			continue
		}
		if _, err := path.Match(pat, ""); err != nil {
			k.addf(index(p, i), "%q is not a valid pattern: %v", pat, err)
		}
	}
}

func (k *checker) pii(p *PII) {
	switch p.Mode {
	case "tokenize", "off":
	default:
		k.addf("pii.mode", `%q is not a PII mode (want "tokenize" or "off")`, p.Mode)
	}
	p.PhoneRegion = strings.ToUpper(p.PhoneRegion)
	if !phonenumbers.GetSupportedRegions()[p.PhoneRegion] {
		k.addf("pii.phoneRegion", "%q is not a region libphonenumber knows: use an ISO 3166-1 alpha-2 code such as US, GB or DE", p.PhoneRegion)
	}
	seen := map[string]bool{}
	for i, c := range p.Custom {
		cp := index("pii.custom", i)
		switch {
		case !piiKindRE.MatchString(c.Kind):
			k.addf(cp+".kind", "%q is not a valid kind: use upper-case letters, digits and _, starting with a letter (e.g. EMPLOYEE_ID)", c.Kind)
		case seen[c.Kind]:
			k.addf(cp+".kind", "%q is defined twice", c.Kind)
		}
		seen[c.Kind] = true
		if c.Pattern == "" {
			k.addf(cp+".pattern", "is empty")
			continue
		}
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			k.addf(cp+".pattern", "is not a valid regular expression: %v", err)
			continue
		}
		if re.MatchString("") {
			k.addf(cp+".pattern", "%q matches the empty string, so it would match everywhere", c.Pattern)
		}
	}
}

func (k *checker) http(h *HTTP) {
	// Tokens are secrets: problems name the namespace, never the token.
	type entry struct{ token, ns string }
	entries := make([]entry, 0, len(h.Tokens))
	for t, ns := range h.Tokens {
		entries = append(entries, entry{t, ns})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.token, b.token))
	})
	for _, e := range entries {
		if !namespaceRE.MatchString(e.ns) {
			k.addf("http.tokens", "%q is not a valid namespace: use 1 to 63 lower-case letters, digits, _ and -, starting with a letter or digit", e.ns)
		}
		if len(e.token) < MinTokenLength {
			k.addf("http.tokens", "the token for namespace %q has %d characters; use at least %d", e.ns, len(e.token), MinTokenLength)
		}
		if !isTokenText(e.token) {
			k.addf("http.tokens", "the token for namespace %q must be printable ASCII without spaces, as it is sent in an Authorization header", e.ns)
		}
	}
	for i, o := range h.AllowedOrigins {
		if c, ok := canonicalOrigin(o); !ok || c != o {
			k.addf(index("http.allowedOrigins", i), "%q is not an origin: write scheme and host only, like https://app.example or http://localhost:3000", o)
		}
	}
}

func (k *checker) sessions(s *Sessions) {
	k.positive("sessions.idleTimeout", s.IdleTimeout)
	k.between("sessions.maxPerNamespace", s.MaxPerNamespace, 1, -1)
}

func (k *checker) store(s *Store, sb *Sandbox) {
	if s.URL == "" {
		return
	}
	if sb.WorkspaceImages == "on" {
		k.add("sandbox.workspaceImages", []string{"store.url"}, `"on" cannot go with store.url: replicas share the data dir, perhaps from several machines, and a workspace image must never be mounted by two at once; use "auto" (plain directories with store.url) or "off"`)
	}
	// The URL may hold a password: the message shows none of it.
	u, err := url.Parse(s.URL)
	switch {
	case err != nil:
		k.addf("store.url", "is not a URL")
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		k.addf("store.url", "must be a PostgreSQL URL, postgres://user@host/database (or empty for the SQLite file in the data dir)")
	}
}

func (k *checker) toolsets(list []string) {
	if len(list) == 0 {
		k.addf("toolsets", `lists no toolsets, so no tools would be served (use ["all"] for every toolset)`)
	}
	seen := map[string]bool{}
	for i, t := range list {
		switch {
		case !slices.Contains(knownToolsets, t):
			k.addf(index("toolsets", i), "%q is not a toolset (want one of %s)", t, strings.Join(knownToolsets, ", "))
		case seen[t]:
			k.addf(index("toolsets", i), "%q is listed twice", t)
		}
		seen[t] = true
	}
}

// canonicalOrigin returns s as an Origin header carries it: lower-case
// scheme and host, the port only when not the scheme's default, no path.
func canonicalOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return "", false
	}
	host := strings.ToLower(u.Host)
	if port := u.Port(); (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return scheme + "://" + host, true
}

// network checks sandbox.network.
func (k *checker) network(p string, n Network) {
	switch n.Mode {
	case "none":
		for key, set := range map[string]bool{"allow": len(n.Allow) > 0, "headers": len(n.Headers) > 0,
			"hosts": len(n.Hosts) > 0, "namespaces": len(n.Namespaces) > 0, "roots": n.Roots != ""} {
			if set {
				k.add(p+"."+key, []string{p + ".mode"}, `applies only with mode "allowlist"`)
			}
		}
	case "allowlist":
	default:
		k.addf(p+".mode", `%q is not a network mode (want "none" or "allowlist")`, n.Mode)
	}
	k.rules(p, n.Allow, n.Headers)
	for name, addrs := range n.Hosts {
		if !isDomain(name) || strings.HasPrefix(name, "*.") {
			k.addf(join(p+".hosts", name), "%q is not a host name", name)
		}
		if len(addrs) == 0 {
			k.addf(join(p+".hosts", name), "names no address")
		}
		for i, a := range addrs {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				k.addf(index(join(p+".hosts", name), i), "%q is not an IP address", a)
			} else if err := egress.CheckAddr(ip); err != nil {
				k.addf(index(join(p+".hosts", name), i), "%s: a sandbox may never reach it", strings.TrimPrefix(err.Error(), egress.ErrRefused.Error()+": "))
			}
		}
	}
	if n.Roots != "" && !filepath.IsAbs(n.Roots) {
		k.addf(p+".roots", "%q is not an absolute path", n.Roots)
	}
	k.between(p+".maxConnections", n.MaxConnections, 1, 100_000)
	if n.MaxBytes < 1<<20 {
		k.addf(p+".maxBytes", "%d bytes is below the minimum 1 MiB", n.MaxBytes)
	}
	for ns, nn := range n.Namespaces {
		if !namespaceRE.MatchString(ns) {
			k.addf(join(p+".namespaces", ns), "%q is not a namespace name (^[a-z0-9][a-z0-9_-]{0,62}$)", ns)
		}
		k.rules(join(p+".namespaces", ns), nn.Allow, nn.Headers)
	}
}

// rules checks one allow list and the headers that go with it.
func (k *checker) rules(p string, allow []string, headers map[string]map[string]string) {
	rules := make([]egress.Rule, 0, len(allow))
	for i, a := range allow {
		r, err := egress.ParseRule(a)
		if err != nil {
			k.addf(index(p+".allow", i), "%v", err)
			continue
		}
		rules = append(rules, r)
	}
	for host, hs := range headers {
		if !slices.ContainsFunc(rules, func(r egress.Rule) bool { return r.Admits(host, 443) }) {
			k.add(join(p+".headers", host), []string{p + ".allow"}, "%q is not a host the allow list admits on port 443 (headers go with HTTPS requests to an allowed name)", host)
		}
		for name := range hs {
			if !httpguts.ValidHeaderFieldName(name) {
				k.addf(join(join(p+".headers", host), name), "%q is not a header name", name)
			}
		}
		for name, v := range hs {
			if !httpguts.ValidHeaderFieldValue(v) {
				k.addf(join(join(p+".headers", host), name), "the value is not a valid header value (a line break or a control character)")
			}
		}
	}
}

// isDomain reports whether s is a DNS name, optionally with a leading "*.".
func isDomain(s string) bool {
	s = strings.TrimPrefix(s, "*.")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}

// isHeaderName reports whether s is an HTTP field name (an RFC 9110 token).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// isTokenText reports whether s is printable ASCII without spaces.
func isTokenText(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// sortedKeys returns m's keys in order, for deterministic errors.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// maxPreload bounds sandbox.preload: each module is imported by every fork
// server, and what it holds is held once per warm sandbox.
const maxPreload = 32

// moduleName is a dotted Python module name, as sandbox.preload takes.
var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
