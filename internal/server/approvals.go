package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/sandbox"
)

// Approvals: the config names the upstream tool calls a person must allow
// (policy.approve, policy.approveDestructive). When code calls one, the
// call waits, and the host is asked, as its protocol generation can be:
//
//   - a 2025 client that declared elicitation gets elicitation/create on
//     its session (inside a task or not);
//   - a 2026-07-28 client gets an input request: in a task, the task's
//     status is input_required until tasks/update answers it; otherwise
//     the call's result is input_required (multi round-trip requests) and
//     the client's retry carries the answer (awaitRun);
//   - a client that can be asked neither way gets the call refused.
//
// Accept runs the call; with allow_all it also runs the rest of this
// execution's calls to that tool without asking. Decline, cancel, no answer
// within policy.approvalTimeout, or no way to ask raises
// servers.ApprovalDenied in the code. The wait does not count against the
// execution's timeout (sandbox.PauseTimeout).

// allowAllField is the one field of an approval's form.
const allowAllField = "allow_all"

// maxApprovalArgs bounds the arguments an approval's message shows.
const maxApprovalArgs = 2000

// needsApproval says whether calls to t wait for a person's say.
func (s *Server) needsApproval(t catalog.Tool) bool {
	p := s.cfg.Policy
	if p.ApproveDestructive && t.Destructive {
		return true
	}
	for _, pat := range p.Approve {
		for _, n := range []string{t.Server + "." + t.Name, t.QualifiedName()} {
			if ok, _ := path.Match(pat, n); ok {
				return true
			}
		}
	}
	return false
}

// approvalParams is the elicitation that asks for a call to name with args
// (as the code wrote them: personal data the model saw is still tokens;
// the message passes the gate before it leaves).
func approvalParams(name string, args json.RawMessage) *mcp.ElicitParams {
	shown := string(args)
	if shown == "" || shown == "null" {
		shown = "{}"
	}
	if len(shown) > maxApprovalArgs {
		cut := maxApprovalArgs
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		shown = shown[:cut] + fmt.Sprintf("… (%d bytes in all)", len(args))
	}
	return &mcp.ElicitParams{
		Mode: "form",
		Message: fmt.Sprintf("codecell: code running in the sandbox wants to call %s with arguments %s. "+
			"Accept to run this call; decline to refuse it (the code gets servers.ApprovalDenied).", name, shown),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				allowAllField: map[string]any{
					"type":        "boolean",
					"title":       "Allow every call to " + name + " for the rest of this execution",
					"description": "Without it, the next call to this tool asks again.",
					"default":     false,
				},
			},
		},
	}
}

// errNoWayToAsk is the refusal of a call that needs approval when the
// client cannot be asked.
var errNoWayToAsk = errors.New("this client cannot be asked for approval (it declared neither elicitation nor the tasks extension)")

// approve asks whether the execution may call t (named name) with args,
// unless an earlier answer in this execution allowed every call to it. It
// returns nil when the call may run, else the ApprovalDenied error for the
// code, and records the outcome for the execution log.
func (e *execCalls) approve(ctx context.Context, t catalog.Tool, name string, args json.RawMessage) (string, error) {
	e.mu.Lock()
	all := e.approvedAll[name]
	e.mu.Unlock()
	if all {
		e.s.metrics.Approval("allowed_for_execution")
		return "allowed for the execution", nil
	}
	params := approvalParams(name, args)
	msg, err := e.s.gate.Text(ctx, e.ns, params.Message)
	if err != nil {
		return "refused", e.denied(t, "the approval request could not pass the personal-data gate")
	}
	params.Message = msg
	// Waiting for a person is not the code's time.
	resume := sandbox.PauseTimeout(ctx)
	defer resume()
	actx, cancel := context.WithTimeout(ctx, e.s.cfg.Policy.ApprovalTimeout)
	defer cancel()
	res, err := e.ask(actx, params)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return e.outcome(name, "no answer", nil), e.denied(t, fmt.Sprintf("no answer to the approval request within %s", e.s.cfg.Policy.ApprovalTimeout))
	case err != nil:
		return e.outcome(name, "refused", err), e.denied(t, err.Error())
	case res.Action != "accept":
		return e.outcome(name, res.Action, nil), e.denied(t, "the person "+actionWords(res.Action))
	}
	if v, _ := res.Content[allowAllField].(bool); v {
		e.mu.Lock()
		e.approvedAll[name] = true
		e.mu.Unlock()
		return e.outcome(name, "accepted for the execution", nil), nil
	}
	return e.outcome(name, "accepted", nil), nil
}

// outcome logs and counts an approval's outcome, and returns it for the
// execution's record of the call.
func (e *execCalls) outcome(name, outcome string, reason error) string {
	args := []any{"tool", name, "outcome", outcome, "namespace", e.ns}
	if reason != nil {
		args = append(args, "reason", reason.Error())
	}
	e.s.log.Info("approval", args...)
	e.s.metrics.Approval(strings.ReplaceAll(outcome, " ", "_"))
	return outcome
}

func actionWords(action string) string {
	if action == "decline" {
		return "declined the call"
	}
	return "dismissed the approval request (" + action + ")"
}

func (e *execCalls) denied(t catalog.Tool, why string) error {
	return &sandbox.CallError{Kind: "ApprovalDenied", Message: "not approved: " + why,
		Data: map[string]string{"server": t.Server, "tool": t.Name}}
}

// ask puts params to the person behind the client of the execution's
// request, as its generation can be asked (see the top of this file).
func (e *execCalls) ask(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	req := e.req
	if req == nil || req.Session == nil {
		return nil, errNoWayToAsk
	}
	if !isModern(req) {
		if _, viaElicit := canAsk(req); !viaElicit {
			return nil, errNoWayToAsk
		}
		if r := runOf(ctx); r != nil {
			r.setWaiting(+1)
			defer r.setWaiting(-1)
			if id := r.taskID(); id != "" {
				// A 2025 task's requests name it.
				params.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": id}}
			}
		}
		return req.Session.Elicit(ctx, params)
	}
	r := runOf(ctx)
	if r == nil {
		return nil, errNoWayToAsk
	}
	a := r.newAsk(params)
	select {
	case r.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case ans := <-a.answer:
		return ans.res, ans.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// modernProtocol is the first protocol revision whose clients are asked
// through input requests rather than requests on a session.
const modernProtocol = "2026-07-28"

// canAsk says how a request's client takes an input request: through a
// task (the tasks extension) or a multi round-trip result or elicitation
// (elicitation). It reads the capabilities the request itself declares
// (2026) without decoding them, as it runs on every execution, else those
// its session began with.
func canAsk(req *mcp.CallToolRequest) (viaTask, viaElicit bool) {
	if req == nil || req.Params == nil {
		return false, false
	}
	if caps, ok := req.Params.Meta[metaClientCapabilities].(map[string]any); ok {
		ext, _ := caps["extensions"].(map[string]any)
		_, viaTask = ext[tasksExtension]
		_, viaElicit = caps["elicitation"].(map[string]any)
		return viaTask, viaElicit
	}
	if req.Session == nil {
		return false, false
	}
	ip := req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return false, false
	}
	_, viaTask = ip.Capabilities.Extensions[tasksExtension]
	return viaTask, ip.Capabilities.Elicitation != nil
}

// isModern says req's client speaks 2026-07-28 or later.
func isModern(req *mcp.CallToolRequest) bool {
	if v, ok := req.Params.Meta[metaProtocolVersion].(string); ok && v != "" {
		return v >= modernProtocol
	}
	if req.Session == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= modernProtocol
}

// _meta keys of a 2026 request: its protocol version and its client's
// capabilities, which it declares on every request.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)
