package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codecell/codecell/internal/editdist"
)

// The config is decoded in two steps: the JSON text into a tree that keeps
// key order and duplicate keys (which encoding/json's maps and structs would
// silently drop), then the tree into a Config by a walker that knows every
// key path, so each error can name one.

// kind is the JSON type of a value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// String names the kind the way a reason reads: "must be a string, not a number".
func (k kind) String() string {
	return [...]string{"null", "true or false", "a number", "a string", "an array", "an object"}[k]
}

// value is a JSON value in the tree.
type value struct {
	kind    kind
	b       bool
	s       string   // a string, or a number's text
	members []member // kindObject, in document order, duplicates kept
	elems   []*value // kindArray
}

// member is one key of an object.
type member struct {
	key string
	val *value
}

// parseTree checks data and builds its tree. It returns nil for data that is
// empty or white space. A syntax error is a *json.SyntaxError.
func parseTree(data []byte) (*value, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a byte-order mark some editors add
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	// Unmarshal into RawMessage only checks the syntax, including trailing
	// data, and reports the offset; the Decoder's tokens below then come from
	// text known to be valid.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return readValue(dec)
}

// readValue reads one value from dec. Recursion is bounded by encoding/json's
// nesting limit, which the syntax check has already applied.
func readValue(dec *json.Decoder) (*value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &value{kind: kindObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("unexpected %v in object", kt)
				}
				mv, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				v.members = append(v.members, member{key, mv})
			}
			_, err := dec.Token()
			return v, err
		case '[':
			v := &value{kind: kindArray}
			for dec.More() {
				ev, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, ev)
			}
			_, err := dec.Token()
			return v, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return &value{kind: kindString, s: t}, nil
	case json.Number:
		return &value{kind: kindNumber, s: string(t)}, nil
	case bool:
		return &value{kind: kindBool, b: t}, nil
	case nil:
		return &value{kind: kindNull}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// decoder walks the tree into a Config and collects errors.
type decoder struct {
	file   string
	env    func(string) string
	errs   []*Error
	failed []string // key paths with a decode error
}

// fail records a problem at path.
func (d *decoder) fail(path, format string, args ...any) {
	d.note(path, format, args...)
	d.failed = append(d.failed, path)
}

// note records a problem at path without marking the path as failed.
func (d *decoder) note(path, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Path: path, Reason: fmt.Sprintf(format, args...)})
}

// failedNear reports whether a decode error sits at, above or below one of
// p's paths. A semantic check of a field that failed to decode would only
// repeat the error, or worse, judge the default that stands in for it.
func (d *decoder) failedNear(p problem) bool {
	for _, f := range d.failed {
		for _, q := range p.paths {
			if within(f, q) || within(q, f) {
				return true
			}
		}
	}
	return false
}

// within reports whether key path q is p or inside it.
func within(q, p string) bool {
	if p == "" || q == p {
		return true
	}
	return strings.HasPrefix(q, p) && (q[len(p)] == '.' || q[len(p)] == '[')
}

// syntaxError turns a JSON syntax error into an *Error naming line and column.
func (d *decoder) syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &Error{File: d.file, Reason: "invalid JSON: " + err.Error()}
	}
	off := int(min(max(se.Offset, 0), int64(len(data))))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	// Offset counts the bytes read, the bad one included, so the column of the
	// bad character is the number of characters from the line's start to it.
	col := max(utf8.RuneCount(data[start:off]), 1)
	return &Error{File: d.file, Reason: fmt.Sprintf("line %d, column %d: invalid JSON: %s", line, col, se.Error())}
}

// keyRE matches keys that read well in a dotted path without quoting.
var keyRE = regexp.MustCompile(`^[A-Za-z0-9_$-]+$`)

// join appends key to a key path, quoting keys that would make it ambiguous.
func join(path, key string) string {
	if !keyRE.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// index appends an array index to a key path.
func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// field decodes the value of one key; v is never JSON null.
type field func(v *value, path string)

// object walks an object, handing each known key to its field and reporting
// unknown and duplicate keys. A null value leaves the field at its default.
func (d *decoder) object(v *value, path string, fields map[string]field) {
	if v.kind != kindObject {
		d.fail(path, "must be an object, not %v", v.kind)
		return
	}
	seen := make(map[string]bool, len(v.members))
	for _, m := range v.members {
		p := join(path, m.key)
		// Unknown and duplicate keys are noted rather than failed: they
		// leave no default standing in for a bad value, so the checks of
		// Validate still say something true.
		if seen[m.key] {
			d.note(p, "duplicate key")
			continue
		}
		seen[m.key] = true
		f, ok := fields[m.key]
		if !ok {
			d.note(p, "%s", unknownKey(m.key, fields))
			continue
		}
		if m.val.kind != kindNull {
			f(m.val, p)
		}
	}
}

// unknownKey explains an unknown key, suggesting the known key it most
// likely misspells.
func unknownKey(key string, fields map[string]field) string {
	known := make([]string, 0, len(fields))
	for k := range fields {
		if !strings.HasPrefix(k, "$") {
			known = append(known, k)
		}
	}
	slices.Sort(known)
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) {
			best = k
			break
		}
		if dist := keyDistance(strings.ToLower(key), strings.ToLower(k)); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", best)
	}
	return fmt.Sprintf("unknown key (known keys: %s)", strings.Join(known, ", "))
}

// str decodes a string, expanding ${VAR}.
func (d *decoder) str(v *value, path string) (string, bool) {
	if v.kind != kindString {
		d.fail(path, "must be a string, not %v", v.kind)
		return "", false
	}
	s, err := expand(v.s, d.env)
	if err != nil {
		d.fail(path, "%v", err)
		return "", false
	}
	return s, true
}

// setStr returns a field that stores a string in dst.
func (d *decoder) setStr(dst *string) field {
	return func(v *value, path string) {
		if s, ok := d.str(v, path); ok {
			*dst = s
		}
	}
}

// setStrs returns a field that stores a list of strings in dst. An explicit
// empty list is kept as a non-nil empty slice.
func (d *decoder) setStrs(dst *[]string) field {
	return func(v *value, path string) {
		if v.kind != kindArray {
			d.fail(path, "must be an array of strings, not %v", v.kind)
			return
		}
		out, ok := make([]string, 0, len(v.elems)), true
		for i, e := range v.elems {
			s, good := d.str(e, index(path, i))
			out = append(out, s)
			ok = ok && good
		}
		if ok {
			*dst = out
		}
	}
}

// setBool returns a field that stores a boolean in dst.
func (d *decoder) setBool(dst *bool) field {
	return func(v *value, path string) {
		if v.kind != kindBool {
			d.fail(path, "must be true or false, not %v", v.kind)
			return
		}
		*dst = v.b
	}
}

// wholeNumber reads a JSON number that must be an integer ("1e3" counts).
func wholeNumber(s string) (int64, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// setInt returns a field that stores a whole number in dst. Ranges are
// checked by Validate; here only what fits in an int32 is accepted, so that
// no limit overflows when handed to the kernel.
func (d *decoder) setInt(dst *int) field {
	return func(v *value, path string) {
		if v.kind != kindNumber {
			d.fail(path, "must be a number, not %v", v.kind)
			return
		}
		n, ok := wholeNumber(v.s)
		if !ok {
			d.fail(path, "%s is not a whole number", v.s)
			return
		}
		if n > math.MaxInt32 || n < math.MinInt32 {
			d.fail(path, "%s is out of range", v.s)
			return
		}
		*dst = int(n)
	}
}

// setSize returns a field that stores a size in dst: a string for ParseSize
// or a JSON number of bytes.
func (d *decoder) setSize(dst *int64) field {
	return func(v *value, path string) {
		switch v.kind {
		case kindNumber:
			n, ok := wholeNumber(v.s)
			if !ok || n < 0 {
				d.fail(path, "%s is not a size (use e.g. \"512MiB\", or a whole number of bytes)", v.s)
				return
			}
			*dst = n
		case kindString:
			s, ok := d.str(v, path)
			if !ok {
				return
			}
			n, err := ParseSize(s)
			if err != nil {
				d.fail(path, "%v", err)
				return
			}
			*dst = n
		default:
			d.fail(path, "must be a size such as \"512MiB\", not %v", v.kind)
		}
	}
}

// setDuration returns a field that stores a duration in dst: a Go duration
// string or a JSON number of seconds.
func (d *decoder) setDuration(dst *time.Duration) field {
	return func(v *value, path string) {
		switch v.kind {
		case kindNumber:
			f, err := strconv.ParseFloat(v.s, 64)
			if err != nil {
				d.fail(path, "%s is not a number of seconds", v.s)
				return
			}
			dur, err := secondsToDuration(f)
			if err != nil {
				d.fail(path, "%v", err)
				return
			}
			*dst = dur
		case kindString:
			s, ok := d.str(v, path)
			if !ok {
				return
			}
			dur, err := parseDuration(s)
			if err != nil {
				d.fail(path, "%v", err)
				return
			}
			*dst = dur
		default:
			d.fail(path, "must be a duration such as \"30s\" or a number of seconds, not %v", v.kind)
		}
	}
}

// setStrMap returns a field that stores an object of strings in dst,
// expanding ${VAR} in keys and values. Keys that expand to the same text are
// an error. Values are never quoted in errors: these maps hold secrets.
func (d *decoder) setStrMap(dst *map[string]string) field {
	return func(v *value, path string) {
		if v.kind != kindObject {
			d.fail(path, "must be an object of strings, not %v", v.kind)
			return
		}
		out, ok := make(map[string]string, len(v.members)), true
		seen := map[string]bool{}
		for _, m := range v.members {
			p := join(path, m.key)
			if seen[m.key] {
				d.fail(p, "duplicate key")
				ok = false
				continue
			}
			seen[m.key] = true
			key, err := expand(m.key, d.env)
			if err != nil {
				d.fail(p, "in the key: %v", err)
				ok = false
				continue
			}
			s, good := d.str(m.val, p)
			if !good {
				ok = false
				continue
			}
			if _, dup := out[key]; dup {
				d.fail(p, "the key expands to the same name as an earlier key")
				ok = false
				continue
			}
			out[key] = s
		}
		if ok {
			*dst = out
		}
	}
}

// network decodes sandbox.network.
func (d *decoder) network(v *value, path string, n *Network) {
	d.object(v, path, map[string]field{
		"mode":           d.setStr(&n.Mode),
		"allow":          d.setRules(&n.Allow),
		"headers":        d.setHeaders(&n.Headers),
		"roots":          d.setStr(&n.Roots),
		"maxConnections": d.setInt(&n.MaxConnections),
		"maxBytes":       d.setSize(&n.MaxBytes),
		"hosts": func(v *value, path string) {
			if v.kind != kindObject {
				d.fail(path, "must be an object of host names to lists of addresses, not %v", v.kind)
				return
			}
			n.Hosts = map[string][]string{}
			for _, m := range v.members {
				var addrs []string
				d.setStrs(&addrs)(m.val, join(path, m.key))
				n.Hosts[strings.ToLower(strings.TrimSuffix(m.key, "."))] = addrs
			}
		},
		"namespaces": func(v *value, path string) {
			if v.kind != kindObject {
				d.fail(path, "must be an object of namespaces, not %v", v.kind)
				return
			}
			n.Namespaces = map[string]NamespaceNetwork{}
			for _, m := range v.members {
				var ns NamespaceNetwork
				d.object(m.val, join(path, m.key), map[string]field{
					"allow":   d.setRules(&ns.Allow),
					"headers": d.setHeaders(&ns.Headers),
				})
				n.Namespaces[m.key] = ns
			}
		},
	})
}

// setRules stores a list of network rules, lower case.
func (d *decoder) setRules(dst *[]string) field {
	return func(v *value, path string) {
		d.setStrs(dst)(v, path)
		for i, a := range *dst {
			(*dst)[i] = strings.ToLower(a)
		}
	}
}

// setHeaders stores host -> header -> value, ${VAR} expanded (values are
// secrets: setStrMap never quotes them).
func (d *decoder) setHeaders(dst *map[string]map[string]string) field {
	return func(v *value, path string) {
		if v.kind != kindObject {
			d.fail(path, "must be an object of host names to objects of headers, not %v", v.kind)
			return
		}
		out := map[string]map[string]string{}
		for _, m := range v.members {
			var h map[string]string
			d.setStrMap(&h)(m.val, join(path, m.key))
			out[strings.ToLower(strings.TrimSuffix(m.key, "."))] = h
		}
		*dst = out
	}
}

// config decodes the top-level object.
func (d *decoder) config(root *value, c *Config) {
	if root.kind != kindObject {
		d.fail("", "the config must be a JSON object, not %v", root.kind)
		return
	}
	d.object(root, "", map[string]field{
		// Editors use "$schema" to find a JSON Schema; it means nothing here.
		"$schema":    func(v *value, path string) { d.str(v, path) },
		"mcpServers": func(v *value, path string) { d.servers(v, path, c) },
		"sandbox":    func(v *value, path string) { d.sandbox(v, path, &c.Sandbox) },
		"policy": func(v *value, path string) {
			d.object(v, path, map[string]field{
				"allow":              d.setStrs(&c.Policy.Allow),
				"deny":               d.setStrs(&c.Policy.Deny),
				"approve":            d.setStrs(&c.Policy.Approve),
				"approveDestructive": d.setBool(&c.Policy.ApproveDestructive),
				"approvalTimeout":    d.setDuration(&c.Policy.ApprovalTimeout),
			})
		},
		"pii": func(v *value, path string) { d.pii(v, path, &c.PII) },
		"http": func(v *value, path string) {
			d.object(v, path, map[string]field{
				"tokens":         func(v *value, path string) { d.tokens(v, path, &c.HTTP) },
				"allowedOrigins": d.origins(&c.HTTP.AllowedOrigins),
			})
		},
		"sessions": func(v *value, path string) {
			d.object(v, path, map[string]field{
				"idleTimeout":     d.setDuration(&c.Sessions.IdleTimeout),
				"maxPerNamespace": d.setInt(&c.Sessions.MaxPerNamespace),
			})
		},
		"store": func(v *value, path string) {
			d.object(v, path, map[string]field{
				"url": d.setStr(&c.Store.URL),
			})
		},
		"toolsets": func(v *value, path string) { d.toolsets(v, path, c) },
	})
}

// servers decodes mcpServers. Names are checked by Validate.
func (d *decoder) servers(v *value, path string, c *Config) {
	if v.kind != kindObject {
		d.fail(path, "must be an object of servers by name, not %v", v.kind)
		return
	}
	for _, m := range v.members {
		p := join(path, m.key)
		if _, dup := c.MCPServers[m.key]; dup {
			d.note(p, "duplicate server name")
			continue
		}
		s := Server{Name: m.key, Timeout: defaultServerTimeout, StartupTimeout: DefaultStartupTimeout}
		if m.val.kind != kindNull {
			d.server(m.val, p, &s)
		}
		c.MCPServers[m.key] = s
	}
}

// server decodes one entry of mcpServers.
func (d *decoder) server(v *value, path string, s *Server) {
	var transport, typ string
	d.object(v, path, map[string]field{
		"command":   d.setStr(&s.Command),
		"args":      d.setStrs(&s.Args),
		"env":       d.setStrMap(&s.Env),
		"cwd":       d.setStr(&s.Cwd),
		"url":       d.setStr(&s.URL),
		"headers":   d.setStrMap(&s.Headers),
		"transport": d.setStr(&transport),
		// "type" is how Claude Code, VS Code and others spell the transport;
		// accepting it lets users paste their mcpServers unchanged.
		"type":           d.setStr(&typ),
		"disabled":       d.setBool(&s.Disabled),
		"timeout":        d.setDuration(&s.Timeout),
		"startupTimeout": d.setDuration(&s.StartupTimeout),
	})
	if typ != "" {
		t, ok := map[string]string{"stdio": "stdio", "http": "streamable-http", "streamable-http": "streamable-http", "sse": "sse"}[typ]
		switch {
		case !ok:
			d.fail(join(path, "type"), `%q is not a server type (want "stdio", "http" or "sse")`, typ)
		case transport != "" && transport != t:
			d.fail(join(path, "type"), "%q contradicts transport %q", typ, transport)
		case transport == "":
			transport = t
		}
	}
	switch {
	case transport != "":
		s.Transport = transport
	case s.Command != "":
		s.Transport = "stdio"
	case s.URL != "":
		s.Transport = "streamable-http"
	}
}

// sandbox decodes the sandbox object.
func (d *decoder) sandbox(v *value, path string, s *Sandbox) {
	// A hardened pool's default depends on the machine (HardenedPool),
	// unless the file gives one.
	poolGiven, setPool := false, d.setInt(&s.Pool)
	taskTimeoutGiven, setTaskTimeout := false, d.setDuration(&s.TaskTimeout)
	defer func() {
		// A task may always run as long as a call: the default bound
		// grows with a maxTimeout past it.
		if !taskTimeoutGiven && s.TaskTimeout < s.MaxTimeout {
			s.TaskTimeout = s.MaxTimeout
		}
		if !poolGiven && s.Isolation == "hardened" {
			s.Pool = HardenedPool(runtime.NumCPU())
		}
	}()
	d.object(v, path, map[string]field{
		"isolation":            d.setStr(&s.Isolation),
		"python":               d.setStr(&s.Python),
		"timeout":              d.setDuration(&s.Timeout),
		"maxTimeout":           d.setDuration(&s.MaxTimeout),
		"taskAfter":            d.setDuration(&s.TaskAfter),
		"taskTimeout":          func(v *value, path string) { taskTimeoutGiven = true; setTaskTimeout(v, path) },
		"memory":               d.setSize(&s.Memory),
		"pids":                 d.setInt(&s.Pids),
		"cpuTime":              d.setDuration(&s.CPUTime),
		"output":               d.setSize(&s.Output),
		"fileSize":             d.setSize(&s.FileSize),
		"openFiles":            d.setInt(&s.OpenFiles),
		"tmpSize":              d.setSize(&s.TmpSize),
		"workspaceQuota":       d.setSize(&s.WorkspaceQuota),
		"workspaceEntries":     d.setInt(&s.WorkspaceEntries),
		"workspaceImages":      d.setStr(&s.WorkspaceImages),
		"maxToolCalls":         d.setInt(&s.MaxToolCalls),
		"pool":                 func(v *value, path string) { poolGiven = true; setPool(v, path) },
		"answerBudget":         d.setInt(&s.AnswerBudget),
		"idlePool":             d.setInt(&s.IdlePool),
		"namespaceIdle":        d.setDuration(&s.NamespaceIdle),
		"sparePool":            d.setInt(&s.SparePool),
		"warmLimit":            d.setInt(&s.WarmLimit),
		"warmMemory":           d.setSize(&s.WarmMemory),
		"concurrency":          d.setInt(&s.Concurrency),
		"namespaceConcurrency": d.setInt(&s.NamespaceConcurrency),
		"preload":              d.setStrs(&s.Preload),
		"wheelhouse":           d.setStr(&s.Wheelhouse),
		"indexUrl":             d.setStr(&s.IndexURL),
		"externalEnvironments": d.setStrs(&s.ExternalEnvironments),
		"indexUrls":            d.setStrs(&s.IndexURLs),
		"indexHosts":           d.setStrs(&s.IndexHosts),
		"allowBuilds":          d.setBool(&s.AllowBuilds),
		"network":              func(v *value, path string) { d.network(v, path, &s.Network) },
	})
}

// pii decodes the pii object.
func (d *decoder) pii(v *value, path string, p *PII) {
	d.object(v, path, map[string]field{
		"mode":         d.setStr(&p.Mode),
		"allowRestore": d.setBool(&p.AllowRestore),
		"phoneRegion":  d.setStr(&p.PhoneRegion),
		"custom": func(v *value, path string) {
			if v.kind != kindArray {
				d.fail(path, `must be an array of {"kind", "pattern"} objects, not %v`, v.kind)
				return
			}
			for i, e := range v.elems {
				var c CustomPII
				d.object(e, index(path, i), map[string]field{
					"kind":    d.setStr(&c.Kind),
					"pattern": d.setStr(&c.Pattern),
				})
				p.Custom = append(p.Custom, c)
			}
		},
	})
}

// tokens decodes http.tokens. A key is a bearer token, so errors name the
// entry by its namespace (or the variable it comes from) and never print the
// key itself.
func (d *decoder) tokens(v *value, path string, h *HTTP) {
	if v.kind != kindObject {
		d.fail(path, "must be an object mapping tokens to namespaces, not %v", v.kind)
		return
	}
	for i, m := range v.members {
		// These problems are recorded with note, not fail: a bad entry is left
		// out of the map, so Validate cannot report it again, and failing the
		// whole path would hide the other entries' problems.
		if m.val.kind != kindString {
			d.note(path, "entry %d: the namespace must be a string, not %v", i+1, m.val.kind)
			continue
		}
		entry := fmt.Sprintf("the entry for namespace %q", m.val.s)
		ns, err := expand(m.val.s, d.env)
		if err != nil {
			d.note(path, "%s: %v", entry, err)
			continue
		}
		tok, err := expand(m.key, d.env)
		if err != nil {
			d.note(path, "%s: in the token: %v", entry, err)
			continue
		}
		if _, dup := h.Tokens[tok]; dup {
			d.note(path, "%s: the same token appears twice", entry)
			continue
		}
		h.Tokens[tok] = ns
	}
}

// origins returns a field for http.allowedOrigins, stored in canonical form
// (lower case, no trailing slash) so that comparing with an Origin header is
// a plain string match. A value that is not an origin is kept as written for
// Validate to report.
func (d *decoder) origins(dst *[]string) field {
	return func(v *value, path string) {
		d.setStrs(dst)(v, path)
		for i, o := range *dst {
			if c, ok := canonicalOrigin(o); ok {
				(*dst)[i] = c
			}
		}
	}
}

// toolsets decodes the toolsets list.
func (d *decoder) toolsets(v *value, path string, c *Config) {
	if v.kind != kindArray {
		d.fail(path, "must be an array of toolset names, not %v", v.kind)
		return
	}
	want, ok := map[string]bool{}, true
	for i, e := range v.elems {
		s, good := d.str(e, index(path, i))
		if !good {
			ok = false
			continue
		}
		if err := addToolset(want, s); err != nil {
			d.fail(index(path, i), "%v", err)
			ok = false
		}
	}
	if !ok {
		return
	}
	out := orderToolsets(want)
	if len(out) == 0 {
		d.fail(path, `lists no toolsets, so no tools would be served (use ["all"] for every toolset)`)
		return
	}
	c.Toolsets = out
}

// keyDistance is the edit distance between two config keys, bounded in
// cost by the short keys it is used on.
func keyDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	return editdist.Levenshtein(a, b)
}
