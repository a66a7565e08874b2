package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/config"
	"github.com/codecell/codecell/internal/metrics"
	"github.com/codecell/codecell/internal/pii"
	"github.com/codecell/codecell/internal/store"
)

// Gate is the one place where personal data is tokenized on its way out of
// codecell (README, "Personal data stays out of the model").
// Everything that leaves toward a model or an operator
// passes it, whole, before any cut to a size limit:
//
//   - every MCP result and error (every string of every content type:
//     text, MIME types, annotations, links, _meta; structured content;
//     resource contents; every number) and every notification, by the
//     server's middleware (Server.gateMiddleware);
//   - every blob (image and audio data, resource blobs, file pages sent
//     as base64), read in the form its bytes mean (see blob.go): text in
//     its encoding, images by their metadata; what it cannot read is
//     withheld;
//   - every REST and dashboard answer, by package httpapi (Options.Gate);
//   - every log line, by LogHandler;
//   - every excerpt of an upstream server's stderr, by Redact, line by
//     line as it is written;
//   - the execution log, written tokenized.
//
// Cuts to a size limit (output, progress lines, log excerpts, file pages)
// ask Cut where to cut: never inside a value the detectors find in the
// whole text. Restoring tokens happens only host-side, into the arguments
// of upstream tool calls and into path arguments; the values restored for
// a request are tokenized again wherever they come back in its answer,
// whether or not a detector finds them there.
//
// Tokens are issued by the vault of the namespace the output goes to;
// what goes only to operators (log lines, upstream stderr, shown to every
// namespace) uses a vault of its own, whose tokens no namespace can
// restore; the host's own DNS resolvers are left as they are there. It
// does not protect against what the detectors miss (see package pii),
// against values encoded out of sight in text (base64 inside a string,
// text drawn as pixels of an image), nor against a value split by the
// code itself across outputs or across the pages of a file that is not
// UTF-8.
//
// A Gate is safe for concurrent use; mu guards memory.
type Gate struct {
	det *pii.Detector // nil when pii.mode is "off"
	// opDet is det for what only operators see, which leaves the
	// operator's own addresses (its DNS resolvers) as they are.
	opDet   *pii.Detector
	store   *store.Store // the persistent vault; nil keeps tokens in memory
	metrics *metrics.Metrics

	mu     sync.Mutex
	memory map[string]*pii.MemoryVault
}

// operatorNamespace is the vault of what only operators see. It is not a
// valid namespace name (those start with a letter or digit), so no token
// maps to it.
const operatorNamespace = "_operator"

// NewGate returns the gate for a config's pii settings; st, if not nil,
// keeps the vaults.
func NewGate(c config.PII, st *store.Store) (*Gate, error) {
	g := &Gate{store: st}
	if c.Mode == "off" {
		return g, nil
	}
	custom := make([]pii.Custom, len(c.Custom))
	for i, k := range c.Custom {
		custom[i] = pii.Custom{Kind: k.Kind, Pattern: k.Pattern}
	}
	det, err := pii.New(pii.Options{Custom: custom, PhoneRegion: c.PhoneRegion})
	if err != nil {
		return nil, fmt.Errorf("pii: %w", err)
	}
	g.det, g.opDet = det, det
	if ns := nameservers(resolvConf); len(ns) > 0 {
		if g.opDet, err = pii.New(pii.Options{Custom: custom, PhoneRegion: c.PhoneRegion, Keep: ns}); err != nil {
			return nil, fmt.Errorf("pii: %w", err)
		}
	}
	return g, nil
}

// resolvConf is where the host's DNS resolvers are configured.
var resolvConf = "/etc/resolv.conf"

// nameservers are the addresses of the resolvers a resolv.conf names.
// They are the operator's own infrastructure, not anyone's personal data:
// a log line that says a lookup failed on one names it as it is. An
// unreadable file names none.
func nameservers(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, a.String(), f[1])
			}
		}
	}
	return out
}

// detector is the detector for text going to namespace ns.
func (g *Gate) detector(ns string) *pii.Detector {
	if ns == operatorNamespace {
		return g.opDet
	}
	return g.det
}

// Off reports whether nothing is tokenized (pii.mode "off").
func (g *Gate) Off() bool { return g == nil || g.det == nil }

// storeVault is a namespace's vault in the store.
type storeVault struct {
	ctx context.Context
	st  *store.Store
	ns  string
}

func (v storeVault) Token(kind, value string) (string, error) {
	kind = strings.ToUpper(kind)
	return v.st.VaultToken(v.ctx, v.ns, kind, value, func(key []byte) []string {
		return pii.TokenCandidates(key, kind, value)
	})
}

func (v storeVault) Value(token string) (string, bool, error) {
	return v.st.VaultValue(v.ctx, v.ns, token)
}

func (g *Gate) vault(ctx context.Context, ns string) pii.Vault {
	v := g.namespaceVault(ctx, ns)
	if f, ok := ctx.Value(foundKey{}).(*foundValues); ok {
		return recordingVault{Vault: v, found: f}
	}
	return v
}

// foundValues are the values tokenized in one answer (see Result).
type foundValues struct {
	mu   sync.Mutex
	seen map[pii.Known]bool
}

type foundKey struct{}

// recordFound returns ctx with a record of the values tokenized under it.
func recordFound(ctx context.Context) (context.Context, *foundValues) {
	f := &foundValues{seen: map[pii.Known]bool{}}
	return context.WithValue(ctx, foundKey{}, f), f
}

func (f *foundValues) values() []pii.Known {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]pii.Known, 0, len(f.seen))
	for k := range f.seen {
		out = append(out, k)
	}
	return out
}

// recordingVault notes each value it issues a token for.
type recordingVault struct {
	pii.Vault
	found *foundValues
}

func (v recordingVault) Token(kind, value string) (string, error) {
	v.found.mu.Lock()
	v.found.seen[pii.Known{Kind: kind, Value: value}] = true
	v.found.mu.Unlock()
	return v.Vault.Token(kind, value)
}

// namespaceVault is the vault of namespace ns.
func (g *Gate) namespaceVault(ctx context.Context, ns string) pii.Vault {
	if ns == "" {
		ns = DefaultNamespace
	}
	if g.store != nil {
		return storeVault{ctx: ctx, st: g.store, ns: ns}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.memory == nil {
		g.memory = map[string]*pii.MemoryVault{}
	}
	v := g.memory[ns]
	if v == nil {
		v = pii.NewMemoryVault()
		g.memory[ns] = v
	}
	return v
}

// scope is what the gate knows of one request: its namespace and the
// values restored for it, to be tokenized again in its answer.
type scope struct {
	ns string
	mu sync.Mutex // guards known
	// known are the values restored into the request's arguments or its
	// tool calls' arguments.
	known []pii.Known
}

type scopeKey struct{}

// withScope returns ctx carrying a scope for namespace ns.
func withScope(ctx context.Context, ns string) (context.Context, *scope) {
	sc := &scope{ns: ns}
	return context.WithValue(ctx, scopeKey{}, sc), sc
}

func scopeOf(ctx context.Context) *scope {
	sc, _ := ctx.Value(scopeKey{}).(*scope)
	return sc
}

// restored records values restored for the request of ctx.
func restored(ctx context.Context, known []pii.Known) {
	sc := scopeOf(ctx)
	if sc == nil || len(known) == 0 {
		return
	}
	sc.mu.Lock()
	sc.known = append(sc.known, known...)
	sc.mu.Unlock()
}

func (sc *scope) knownValues() []pii.Known {
	if sc == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return append([]pii.Known(nil), sc.known...)
}

// Text tokenizes a text going to namespace ns.
func (g *Gate) Text(ctx context.Context, ns, s string) (string, error) {
	return g.labelled(ctx, ns, "", s)
}

func (g *Gate) labelled(ctx context.Context, ns, label, s string) (string, error) {
	if g.Off() || s == "" {
		return s, nil
	}
	known := scopeOf(ctx).knownValues()
	if len(known) == 0 && !mayHold(label, s) {
		return s, nil
	}
	out, counts, err := g.detector(ns).TokenizeLabelled(label, s, g.vault(ctx, ns), known)
	if err != nil {
		return "", fmt.Errorf("tokenize personal data: %w", err)
	}
	if ctx.Value(uncountedKey{}) == nil {
		g.metrics.PIITokens(counts)
	}
	return out, nil
}

type uncountedKey struct{}

// uncounted marks tokenizations that pii_tokens_total does not count: the
// same values again (a result's text beside its structured content) or
// copies for operators (the execution log, log lines).
func uncounted(ctx context.Context) context.Context {
	return context.WithValue(ctx, uncountedKey{}, true)
}

// mayHold is a fast test of whether a short string can hold anything the
// detectors find: every kind has a digit, an @ (or %40), or a key or
// label that says what follows. Most strings of a structured result
// (names, states, field values) have none of these and skip detection.
func mayHold(label, s string) bool {
	if label != "" {
		return true
	}
	if len(s) > 256 {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', c == '@', c == '%', c == ':', c == '=', c == '-', c == '\\', c >= 0x80:
			return true
		}
	}
	return false
}

// Bytes tokenizes bytes that leave encoded (a file page that is not UTF-8
// text, sent as base64), read as blob reads them: text in its encoding,
// images by their metadata. What the gate cannot read is withheld: the
// error says so, in words fit for the model.
func (g *Gate) Bytes(ctx context.Context, ns, mimeType string, b []byte) ([]byte, error) {
	return g.blob(ctx, ns, mimeType, b)
}

// Cut returns where to cut text to keep at most limit bytes without
// leaving part of a value (or of a token) on either side: see pii.Cut.
// With the gate off it cuts at the last character boundary.
func (g *Gate) Cut(text string, limit int) int {
	if g.Off() {
		if limit >= len(text) {
			return len(text)
		}
		for limit > 0 && text[limit]&0xC0 == 0x80 {
			limit--
		}
		return max(limit, 0)
	}
	return g.det.Cut(text, limit)
}

// JSON tokenizes every string and number of a JSON document (object keys
// included), each with its key as the label that says what it is; a
// number found to be a value becomes its token, a string. Key order and
// other numbers are kept.
func (g *Gate) JSON(ctx context.Context, ns string, raw []byte) ([]byte, error) {
	if g.Off() || len(raw) == 0 {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("tokenize personal data: %w", err)
	}
	v, err := g.walk(ctx, ns, "", v)
	if err != nil {
		return nil, err
	}
	return marshalNoEscape(v)
}

// Value tokenizes any value that encodes to JSON, returning it as JSON.
func (g *Gate) Value(ctx context.Context, ns string, v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return g.JSON(ctx, ns, raw)
}

// walk tokenizes a decoded JSON value under label (its key).
func (g *Gate) walk(ctx context.Context, ns, label string, v any) (any, error) {
	switch v := v.(type) {
	case string:
		return g.labelled(ctx, ns, label, v)
	case json.Number:
		s := v.String()
		t, err := g.labelled(ctx, ns, label, s)
		if err != nil || t == s {
			return v, err
		}
		return t, nil
	case []any:
		for i, x := range v {
			t, err := g.walk(ctx, ns, label, x)
			if err != nil {
				return nil, err
			}
			v[i] = t
		}
		return v, nil
	case map[string]any:
		out := make(orderedObject, 0, len(v))
		for k, x := range v {
			tk, err := g.Text(ctx, ns, k)
			if err != nil {
				return nil, err
			}
			t, err := g.walk(ctx, ns, k, x)
			if err != nil {
				return nil, err
			}
			out = append(out, member{tk, t})
		}
		out.sort()
		return out, nil
	}
	return v, nil
}

// orderedObject is a JSON object whose members encode in order (sorted by
// key, as encoding/json writes maps, so answers are stable).
type orderedObject []member

type member struct {
	key string
	val any
}

func (o orderedObject) sort() {
	for i := 1; i < len(o); i++ {
		for j := i; j > 0 && o[j].key < o[j-1].key; j-- {
			o[j], o[j-1] = o[j-1], o[j]
		}
	}
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshalNoEscape(m.val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// errWithheld replaces an answer the gate could not tokenize: it fails
// closed, never open.
var errWithheld = errors.New("the answer was withheld: personal data in it could not be tokenized")

// gateMiddleware is the receiving middleware that passes every result and
// error of every request through the gate, and gives the request a scope
// for the values restored for it. It is the outermost middleware.
func (s *Server) gateMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ns := namespaceOfExtra(req.GetExtra())
		ctx, _ = withScope(ctx, ns)
		res, err := next(ctx, method, req)
		if s.gate.Off() {
			return res, err
		}
		if err != nil {
			return nil, s.gate.gateError(ctx, ns, err)
		}
		if res == nil || reflect.ValueOf(res).IsNil() {
			return res, nil
		}
		// restore_pii, listed only when the operator allows it, answers
		// with the originals: that is what it is for (see the README).
		if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil && ct.Params.Name == "restore_pii" {
			return res, nil
		}
		out, gerr := s.gate.Result(ctx, ns, res)
		if gerr != nil {
			s.log.Error("gate: an answer was withheld", "method", method, "error", gerr)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: errWithheld.Error()}
		}
		return out, nil
	}
}

// gateSending is the sending middleware that passes every notification
// and request the server sends (progress, log messages) through the gate,
// in the namespace of the request it belongs to, else the operators'.
func (s *Server) gateSending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s.gate.Off() {
			return next(ctx, method, req)
		}
		ns := operatorNamespace
		if sc := scopeOf(ctx); sc != nil {
			ns = sc.ns
		}
		r, ok := req.(*mcp.ServerRequest[mcp.Params])
		if !ok || r.Params == nil || reflect.ValueOf(r.Params).IsNil() {
			return next(ctx, method, req)
		}
		p, err := s.gate.params(ctx, ns, r.Params)
		if err != nil {
			s.log.Error("gate: a notification was withheld", "method", method, "error", err)
			return nil, errWithheld
		}
		return next(ctx, method, &mcp.ServerRequest[mcp.Params]{Session: r.Session, Params: p, Extra: r.Extra})
	}
}

// params tokenizes a notification's or request's parameters.
func (g *Gate) params(ctx context.Context, ns string, p mcp.Params) (mcp.Params, error) {
	switch p := p.(type) {
	case *mcp.ProgressNotificationParams:
		c := *p
		var err error
		c.Message, err = g.Text(ctx, ns, p.Message)
		return &c, err
	}
	out, err := g.roundTrip(ctx, ns, p)
	if err != nil {
		return nil, err
	}
	return out.(mcp.Params), nil
}

// Result tokenizes an MCP result. Tool results and resource reads are
// handled part by part (binary data is tokenized as bytes, images are
// left as they are); any other result through its JSON.
//
// What the detectors find in any part of an answer is tokenized in every
// part of it: a value passed in one place for what its key says (an id
// under "session_id" is no phone number) is still the value found in the
// answer's text. When the first pass found anything, a second pass over its
// output tokenizes those values wherever they are left.
func (g *Gate) Result(ctx context.Context, ns string, res mcp.Result) (mcp.Result, error) {
	ctx, found := recordFound(ctx)
	out, err := g.result(ctx, ns, res)
	if err != nil || g.Off() {
		return out, err
	}
	values := found.values()
	if len(values) == 0 {
		return out, nil
	}
	if scopeOf(ctx) == nil {
		ctx, _ = withScope(ctx, ns)
	}
	restored(ctx, values)
	return g.result(uncounted(ctx), ns, out)
}

func (g *Gate) result(ctx context.Context, ns string, res mcp.Result) (mcp.Result, error) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return g.toolResult(ctx, ns, r)
	case *mcp.ReadResourceResult:
		c := *r
		c.Contents = make([]*mcp.ResourceContents, len(r.Contents))
		for i, rc := range r.Contents {
			t, err := g.resourceContents(ctx, ns, rc)
			if err != nil {
				return nil, err
			}
			c.Contents[i] = t
		}
		var err error
		c.Meta, err = rewriteAs[mcp.Meta](ctx, g, ns, r.Meta)
		return &c, err
	}
	out, err := g.roundTrip(ctx, ns, res)
	if err != nil {
		return nil, err
	}
	return out.(mcp.Result), nil
}

// roundTrip tokenizes any value through its JSON and decodes it back into
// a new value of its type. A number found to be a value does not decode
// into a number field: the answer is withheld rather than sent raw.
func (g *Gate) roundTrip(ctx context.Context, ns string, v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	tok, err := g.JSON(ctx, ns, raw)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(tok, raw) {
		return v, nil
	}
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("gate: cannot rebuild a %T", v)
	}
	out := reflect.New(t.Elem())
	if err := json.Unmarshal(tok, out.Interface()); err != nil {
		return nil, fmt.Errorf("gate: rebuild %T: %w", v, err)
	}
	return out.Interface(), nil
}

func (g *Gate) toolResult(ctx context.Context, ns string, r *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	c := *r
	c.Content = make([]mcp.Content, len(r.Content))
	cctx := ctx
	if r.StructuredContent != nil {
		cctx = uncounted(ctx) // the text renders the structured content
	}
	for i, ct := range r.Content {
		t, err := g.content(cctx, ns, ct)
		if err != nil {
			return nil, err
		}
		c.Content[i] = t
	}
	if r.StructuredContent != nil {
		raw, ok := r.StructuredContent.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(r.StructuredContent); err != nil {
				return nil, err
			}
		}
		tok, err := g.JSON(ctx, ns, raw)
		if err != nil {
			return nil, err
		}
		c.StructuredContent = json.RawMessage(tok)
	}
	var err error
	c.Meta, err = rewriteAs[mcp.Meta](ctx, g, ns, r.Meta)
	return &c, err
}

// content tokenizes every string of a content item, whatever its type
// (text, MIME types, annotations, a link's name and description, _meta...)
// and reads its blobs (see blob). A blob the gate withholds leaves a text
// item in the item's place that says why.
func (g *Gate) content(ctx context.Context, ns string, ct mcp.Content) (mcp.Content, error) {
	out, err := rewriteAs[mcp.Content](ctx, g, ns, ct)
	if isUnreadable(err) {
		// The explanation names the MIME type, which is tokenized too.
		text, err := g.Text(ctx, ns, "["+err.Error()+"]")
		return &mcp.TextContent{Text: text}, err
	}
	return out, err
}

// resourceContents is content for a resource's contents: a blob withheld
// leaves its explanation as the text.
func (g *Gate) resourceContents(ctx context.Context, ns string, rc *mcp.ResourceContents) (*mcp.ResourceContents, error) {
	if rc == nil {
		return nil, nil
	}
	out, err := rewriteAs[*mcp.ResourceContents](ctx, g, ns, rc)
	if isUnreadable(err) {
		c := *rc
		c.Blob, c.Text, c.MIMEType = nil, err.Error(), "text/plain; charset=utf-8"
		return rewriteAs[*mcp.ResourceContents](ctx, g, ns, &c)
	}
	return out, err
}

// rewriteAs is rewrite for a value of type T.
func rewriteAs[T any](ctx context.Context, g *Gate, ns string, v T) (T, error) {
	rv := reflect.ValueOf(&v).Elem()
	out, err := g.rewrite(ctx, ns, "", rv)
	if err != nil {
		var zero T
		return zero, err
	}
	return out.Interface().(T), nil
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// rewrite returns a deep copy of v with every string tokenized (each under
// the key of the map it is in, if any, as its label) and every blob read
// (a []byte, of the MIME type of the MIMEType field beside it). It walks
// Go values rather than their JSON so that it sees each field whatever
// its JSON name, and knows a blob from text. A number that is a value
// becomes its token where the type allows a string (an any), and
// withholds the answer where it does not.
func (g *Gate) rewrite(ctx context.Context, ns, label string, v reflect.Value) (reflect.Value, error) {
	switch v.Kind() {
	case reflect.String:
		s, err := g.labelled(ctx, ns, label, v.String())
		if err != nil {
			return v, err
		}
		out := reflect.New(v.Type()).Elem()
		out.SetString(s)
		return out, nil
	case reflect.Pointer:
		if v.IsNil() {
			return v, nil
		}
		e, err := g.rewrite(ctx, ns, label, v.Elem())
		if err != nil {
			return v, err
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(e)
		return out, nil
	case reflect.Interface:
		if v.IsNil() {
			return v, nil
		}
		e := v.Elem()
		var err error
		if isNumber(e.Kind()) {
			s := fmt.Sprint(e.Interface())
			if e.Kind() == reflect.Float32 || e.Kind() == reflect.Float64 {
				s = strconv.FormatFloat(e.Float(), 'f', -1, 64)
			}
			t, err := g.labelled(ctx, ns, label, s)
			if err != nil || t == s {
				return v, err
			}
			if !reflect.TypeFor[string]().AssignableTo(v.Type()) {
				return v, errors.New("gate: a number field holds personal data")
			}
			e = reflect.ValueOf(t)
		} else if e, err = g.rewrite(ctx, ns, label, e); err != nil {
			return v, err
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(e)
		return out, nil
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		mimeType := ""
		if m := v.FieldByName("MIMEType"); m.IsValid() && m.Kind() == reflect.String {
			mimeType = m.String()
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			var nv reflect.Value
			var err error
			if fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Uint8 && fv.Type() != rawMessageType {
				var b []byte
				if b, err = g.blob(ctx, ns, mimeType, fv.Bytes()); err == nil {
					nv = reflect.New(fv.Type()).Elem()
					nv.SetBytes(b)
				}
			} else {
				nv, err = g.rewrite(ctx, ns, "", fv)
			}
			if err != nil {
				return v, err
			}
			out.Field(i).Set(nv)
		}
		return out, nil
	case reflect.Slice:
		if v.IsNil() {
			return v, nil
		}
		if v.Type() == rawMessageType {
			b, err := g.JSON(ctx, ns, v.Bytes())
			return reflect.ValueOf(json.RawMessage(b)), err
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b, err := g.blob(ctx, ns, "", v.Bytes())
			out := reflect.New(v.Type()).Elem()
			out.SetBytes(b)
			return out, err
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			e, err := g.rewrite(ctx, ns, label, v.Index(i))
			if err != nil {
				return v, err
			}
			out.Index(i).Set(e)
		}
		return out, nil
	case reflect.Map:
		if v.IsNil() {
			return v, nil
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k, key := it.Key(), ""
			if k.Kind() == reflect.String {
				key = k.String()
				var err error
				if k, err = g.rewrite(ctx, ns, "", k); err != nil {
					return v, err
				}
			}
			e, err := g.rewrite(ctx, ns, key, it.Value())
			if err != nil {
				return v, err
			}
			out.SetMapIndex(k, e)
		}
		return out, nil
	}
	if isNumber(v.Kind()) {
		s := fmt.Sprint(v.Interface())
		if t, err := g.labelled(ctx, ns, label, s); err != nil || t != s {
			return v, errors.New("gate: a number field holds personal data")
		}
	}
	return v, nil
}

func isNumber(k reflect.Kind) bool {
	return reflect.Int <= k && k <= reflect.Float64
}

// gateError tokenizes an error's message; a JSON-RPC error keeps its code.
func (g *Gate) gateError(ctx context.Context, ns string, err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		msg, terr := g.Text(ctx, ns, je.Message)
		if terr != nil {
			return &jsonrpc.Error{Code: je.Code, Message: errWithheld.Error()}
		}
		c := *je
		c.Message = msg
		if len(je.Data) > 0 {
			if c.Data, terr = g.JSON(ctx, ns, je.Data); terr != nil {
				c.Data = nil
			}
		}
		return &c
	}
	msg, terr := g.Text(ctx, ns, err.Error())
	if terr != nil {
		return errWithheld
	}
	return errors.New(msg)
}

// Redact tokenizes text only operators see, shared by every namespace
// (an upstream server's stderr): its tokens are the operators' vault's,
// which no namespace restores.
func (g *Gate) Redact(text string) string {
	out, err := g.Text(uncounted(context.Background()), operatorNamespace, text)
	if err != nil {
		return "(withheld: personal data could not be tokenized)"
	}
	return out
}

// Operator tokenizes JSON only operators see (the answer of a REST route
// that is the server's, not a namespace's).
func (g *Gate) Operator(ctx context.Context, raw []byte) ([]byte, error) {
	return g.JSON(ctx, operatorNamespace, raw)
}

// LogHandler returns a slog handler that tokenizes every record's message
// and every string attribute (the values of nested groups too) before h
// writes it, in the operators' vault.
func (g *Gate) LogHandler(h slog.Handler) slog.Handler {
	if g.Off() {
		return h
	}
	return logGate{g: g, h: h}
}

type logGate struct {
	g *Gate
	h slog.Handler
}

func (l logGate) Enabled(ctx context.Context, lv slog.Level) bool { return l.h.Enabled(ctx, lv) }

func (l logGate) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, l.g.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(l.attr(a))
		return true
	})
	return l.h.Handle(ctx, out)
}

func (l logGate) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, l.g.Redact(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, x := range as {
			out[i] = l.attr(x)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, l.g.Redact(err.Error()))
		}
		return slog.String(a.Key, l.g.Redact(fmt.Sprint(v.Any())))
	case slog.KindInt64, slog.KindUint64:
		s := v.String()
		if t := l.g.Redact(s); t != s {
			return slog.String(a.Key, t)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (l logGate) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = l.attr(a)
	}
	return logGate{g: l.g, h: l.h.WithAttrs(out)}
}

func (l logGate) WithGroup(name string) slog.Handler { return logGate{g: l.g, h: l.h.WithGroup(name)} }
