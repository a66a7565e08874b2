package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/gate"
	"github.com/codecell/codecell/internal/pii"
)

// Restoring tokens is the other half of privacy (README, "Personal data stays out of the
// model"): host-side, in
// what goes to tools, never in what goes to the model. The values a request
// had restored are recorded in its scope, so that the gate tokenizes them
// again where the answer echoes them.

// arguments restores the tokens in arguments going to an upstream tool.
func (s *Server) arguments(ctx context.Context, ns string, raw json.RawMessage) (json.RawMessage, error) {
	if s.gate.Off() || len(raw) == 0 {
		return raw, nil
	}
	out, known, err := pii.RestoreJSONKnown(raw, s.gate.Vault(ctx, ns))
	if err != nil {
		return nil, err
	}
	gate.Restored(ctx, known)
	return out, nil
}

// pathArg restores the tokens in a path argument: paths carry personal data
// too (report_ada@example.org.csv), and a path the model saw, tokenized,
// must find its file.
func (s *Server) pathArg(ctx context.Context, ns, p string) (string, error) {
	if s.gate.Off() || !strings.Contains(p, "[") {
		return p, nil
	}
	out, known, err := pii.RestoreKnown(p, s.gate.Vault(ctx, ns))
	if err != nil {
		return "", err
	}
	gate.Restored(ctx, known)
	return out, nil
}

// SanitizeInput is the input of sanitize_pii.
type SanitizeInput struct {
	Text string `json:"text" jsonschema:"Text whose personal data is replaced by tokens such as [EMAIL_3f9a2c]."`
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
		Description: "Replace emails, phone numbers, card numbers, IBANs, SSNs, IP addresses and secrets in a text by stable tokens such as [EMAIL_3f9a2c].",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in SanitizeInput) (*mcp.CallToolResult, SanitizeOutput, error) {
		det := s.gate.Detector()
		if det == nil {
			var err error
			if det, err = pii.New(pii.Options{PhoneRegion: s.cfg.PII.PhoneRegion}); err != nil {
				return nil, SanitizeOutput{}, err
			}
		}
		text, counts, err := det.Tokenize(in.Text, s.gate.Vault(ctx, namespaceOf(req)))
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
		text = s.fitText(text, s.textRoom(req), "send the text in pieces, or call sanitize_pii from code, where no answer budget applies")
		return textResult(text + "\n[" + strings.Join(kinds, ", ") + "]\n"), SanitizeOutput{Text: text, Counts: counts}, nil
	})
	if !s.cfg.PII.AllowRestore {
		// Restoring hands the model what tokenization hid from it: only
		// where the operator says the model may see every original.
		return
	}
	addTool(s, "privacy", &mcp.Tool{
		Name:        "restore_pii",
		Title:       "Restore tokenized personal data",
		Description: "Replace the tokens of this namespace in a text by the original values.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in RestoreInput) (*mcp.CallToolResult, RestoreOutput, error) {
		text, err := pii.Restore(in.Text, s.gate.Vault(ctx, namespaceOf(req)))
		if err != nil {
			return nil, RestoreOutput{}, err
		}
		text = s.fitText(text, s.textRoom(req), "send the text in pieces, or call restore_pii from code, where no answer budget applies")
		return textResult(text), RestoreOutput{Text: text}, nil
	})
}
