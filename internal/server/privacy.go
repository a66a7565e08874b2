package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/metrics"
	"github.com/codecell/codecell/internal/pii"
	"github.com/codecell/codecell/internal/store"
)

// privacy keeps personal data out of the model (SPEC §7): what codecell
// returns is tokenized, and tokens in arguments to upstream tools are
// restored, through each namespace's own vault.
type privacy struct {
	det   *pii.Detector // nil when pii.mode is "off"
	store *store.Store  // the persistent vault; nil keeps tokens in memory
	// metrics count the values tokenized; nil counts nothing.
	metrics *metrics.Metrics

	mu     sync.Mutex // guards memory
	memory map[string]*pii.MemoryVault
}

// storeVault is a namespace's vault in the store.
type storeVault struct {
	ctx context.Context
	st  *store.Store
	ns  string
}

func (v storeVault) Token(kind, value string) (string, error) {
	return v.st.VaultToken(v.ctx, v.ns, kind, value)
}

func (v storeVault) Value(token string) (string, bool, error) {
	return v.st.VaultValue(v.ctx, v.ns, token)
}

func (p *privacy) vault(ctx context.Context, ns string) pii.Vault {
	if p.store != nil {
		return storeVault{ctx: ctx, st: p.store, ns: ns}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.memory == nil {
		p.memory = map[string]*pii.MemoryVault{}
	}
	v := p.memory[ns]
	if v == nil {
		v = pii.NewMemoryVault()
		p.memory[ns] = v
	}
	return v
}

// text tokenizes a text that goes to the model.
func (p *privacy) text(ctx context.Context, ns, s string) (string, error) {
	if p.det == nil || s == "" {
		return s, nil
	}
	out, counts, err := p.det.Tokenize(s, p.vault(ctx, ns))
	if err != nil {
		return "", fmt.Errorf("tokenize personal data: %w", err)
	}
	p.metrics.PIITokens(counts)
	return out, nil
}

// value tokenizes every string in a JSON value that goes to the model.
func (p *privacy) value(ctx context.Context, ns string, v any) (any, error) {
	if p.det == nil {
		return v, nil
	}
	switch v := v.(type) {
	case string:
		return p.text(ctx, ns, v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			t, err := p.value(ctx, ns, x)
			if err != nil {
				return nil, err
			}
			out[i] = t
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			tk, err := p.text(ctx, ns, k)
			if err != nil {
				return nil, err
			}
			t, err := p.value(ctx, ns, x)
			if err != nil {
				return nil, err
			}
			out[tk] = t
		}
		return out, nil
	}
	return v, nil
}

// jsonValue tokenizes any value that encodes to JSON (typed results such as
// an analysis's), returning it as a plain JSON value with exact numbers.
func (p *privacy) jsonValue(ctx context.Context, ns string, v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var plain any
	if err := dec.Decode(&plain); err != nil {
		return nil, err
	}
	return p.value(ctx, ns, plain)
}

// output tokenizes every model-facing field of an execution's result.
func (p *privacy) output(ctx context.Context, ns string, out *ExecuteCodeOutput) error {
	if p.det == nil {
		return nil
	}
	var err error
	if out.Stdout, err = p.text(ctx, ns, out.Stdout); err != nil {
		return err
	}
	if out.Stderr, err = p.text(ctx, ns, out.Stderr); err != nil {
		return err
	}
	if out.Result, err = p.value(ctx, ns, out.Result); err != nil {
		return err
	}
	if out.Error != nil {
		e := *out.Error
		if e.Message, err = p.text(ctx, ns, e.Message); err != nil {
			return err
		}
		if e.Traceback, err = p.text(ctx, ns, e.Traceback); err != nil {
			return err
		}
		out.Error = &e
	}
	return nil
}

// arguments restores the tokens in arguments going to an upstream tool.
func (p *privacy) arguments(ctx context.Context, ns string, raw json.RawMessage) (json.RawMessage, error) {
	if p.det == nil || len(raw) == 0 {
		return raw, nil
	}
	return pii.RestoreJSON(raw, p.vault(ctx, ns))
}

// SanitizeInput is the input of sanitize_pii.
type SanitizeInput struct {
	Text string `json:"text" jsonschema:"Text whose personal data is replaced by tokens such as [EMAIL_1]."`
}

// SanitizeOutput is the result of sanitize_pii.
type SanitizeOutput struct {
	Text   string         `json:"text" jsonschema:"The text with tokens in place of personal data."`
	Counts map[string]int `json:"counts" jsonschema:"How many values of each kind were replaced."`
}

// RestoreInput is the input of restore_pii.
type RestoreInput struct {
	Text string `json:"text" jsonschema:"Text with tokens to replace by their original values."`
}

// RestoreOutput is the result of restore_pii.
type RestoreOutput struct {
	Text string `json:"text" jsonschema:"The text with this namespace's tokens restored; other tokens stay as they are."`
}

func (s *Server) addPrivacyTools() {
	addTool(s, "privacy", &mcp.Tool{
		Name:        "sanitize_pii",
		Title:       "Replace personal data by tokens",
		Description: "Replace emails, phone numbers, card numbers, IBANs, SSNs, IP addresses and secrets in a text by stable tokens such as [EMAIL_1].",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in SanitizeInput) (*mcp.CallToolResult, SanitizeOutput, error) {
		det := s.privacy.det
		if det == nil {
			var err error
			if det, err = pii.New(nil); err != nil {
				return nil, SanitizeOutput{}, err
			}
		}
		text, counts, err := det.Tokenize(in.Text, s.privacy.vault(ctx, namespaceOf(req)))
		if err != nil {
			return nil, SanitizeOutput{}, err
		}
		s.metrics.PIITokens(counts)
		if counts == nil {
			counts = map[string]int{}
		}
		kinds := make([]string, 0, len(counts))
		for k := range counts {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, counts[k]))
		}
		sort.Strings(kinds)
		return textResult(text + "\n[" + strings.Join(kinds, ", ") + "]\n"), SanitizeOutput{Text: text, Counts: counts}, nil
	})
	addTool(s, "privacy", &mcp.Tool{
		Name:        "restore_pii",
		Title:       "Restore tokenized personal data",
		Description: "Replace the tokens of this namespace in a text by the original values.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in RestoreInput) (*mcp.CallToolResult, RestoreOutput, error) {
		text, err := pii.Restore(in.Text, s.privacy.vault(ctx, namespaceOf(req)))
		if err != nil {
			return nil, RestoreOutput{}, err
		}
		return textResult(text), RestoreOutput{Text: text}, nil
	})
}
