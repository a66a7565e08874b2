package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/store"
)

// SessionOpener starts live interpreters; *sandbox.Manager is the real one.
// An Executor that is not one cannot run sessions.
type SessionOpener interface {
	OpenSession(ctx context.Context, req sandbox.Request) (*sandbox.Session, error)
}

// sessionID is what a caller may choose as a session id.
var sessionID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// sessions are the live interpreters of every namespace. A session belongs
// to the namespace that created it; the same id in another namespace is
// another session, and nothing here ever crosses namespaces.
type sessions struct {
	open  SessionOpener // nil: sessions are unavailable
	store *store.Store  // the session records; nil keeps none
	idle  time.Duration // a session unused this long is closed
	max   int           // sessions per namespace
	log   *slog.Logger

	createMu sync.Mutex // serializes creations, so two calls with one new id make one session

	mu   sync.Mutex // guards byNS and each session's counters
	byNS map[string]map[string]*liveSession

	stop chan struct{}
	done chan struct{}
}

// liveSession is one session and its bookkeeping.
type liveSession struct {
	id         string
	sb         *sandbox.Session
	created    time.Time
	lastUsed   time.Time
	executions int
	running    int // executions running or waiting their turn; never expired while > 0
	// elsewhere, set when the session was started, is the replica whose
	// records hold a session of the same id in the namespace: the one the
	// caller most likely meant, which this replica cannot reach.
	elsewhere string
}

// StoreWriteTimeout bounds each write of a session record, which runs
// beside an execution with no caller's context to bound it. It is longer
// than the store's SQLite busy timeout (5s), so that a wait for a lock ends
// there first; it bounds a PostgreSQL that does not answer.
const StoreWriteTimeout = 10 * time.Second

// newSessions does not clear the store's session records of this replica
// (left by a process that ran before): the caller does, once, at start-up
// (store.Store.ClearSessions; cmd/codecell's newApp).
func newSessions(open SessionOpener, st *store.Store, idle time.Duration, max int, log *slog.Logger) *sessions {
	r := &sessions{open: open, store: st, idle: idle, max: max, log: log,
		byNS: map[string]map[string]*liveSession{}, stop: make(chan struct{}), done: make(chan struct{})}
	go r.expire()
	return r
}

// acquire returns the live session id of ns, creating it when it does not
// exist or its interpreter has ended (started says so); the caller must
// release it. req is the execution the session starts with (its workspace
// and interpreter).
func (r *sessions) acquire(ctx context.Context, ns, id string, req sandbox.Request) (ls *liveSession, started bool, err error) {
	if r.open == nil {
		return nil, false, fieldError("session_id", "sessions are not available with this executor")
	}
	if ls := r.take(ns, id); ls != nil {
		return ls, false, nil
	}
	r.createMu.Lock()
	defer r.createMu.Unlock()
	if ls := r.take(ns, id); ls != nil {
		return ls, false, nil
	}
	r.mu.Lock()
	n := len(r.byNS[ns])
	r.mu.Unlock()
	if n >= r.max {
		return nil, false, fieldError("session_id", "this namespace already has %d live sessions, the limit; close one with close_session (list_sessions lists them)", n)
	}
	sb, err := r.open.OpenSession(ctx, req)
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			return nil, false, fieldError("session_id", "%v", err)
		}
		return nil, false, fmt.Errorf("start session %s: %w", id, err)
	}
	now := time.Now()
	ls = &liveSession{id: id, sb: sb, created: now, lastUsed: now, running: 1, elsewhere: r.elsewhere(ctx, ns, id)}
	r.mu.Lock()
	if r.byNS[ns] == nil {
		r.byNS[ns] = map[string]*liveSession{}
	}
	r.byNS[ns][id] = ls
	r.mu.Unlock()
	r.record(ns, id, now)
	return ls, true, nil
}

// take returns the live session id of ns, marked running, or nil. A session
// whose interpreter has ended is dropped.
func (r *sessions) take(ns, id string) *liveSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	ls := r.byNS[ns][id]
	if ls == nil {
		return nil
	}
	if !ls.sb.Alive() && ls.running == 0 {
		delete(r.byNS[ns], id)
		return nil
	}
	ls.running++
	return ls
}

// release ends an execution of ls. A session whose interpreter ended in it
// is dropped, so the next call with its id starts a new one. The store's
// record is written when a session starts and removed when it ends, not on
// each execution: last use lives here, and a write per execution would put
// a database sync on every session call.
func (r *sessions) release(ns string, ls *liveSession) {
	r.mu.Lock()
	ls.running--
	ls.executions++
	ls.lastUsed = time.Now()
	ended := !ls.sb.Alive() && ls.running == 0 && r.byNS[ns][ls.id] == ls
	if ended {
		delete(r.byNS[ns], ls.id)
	}
	r.mu.Unlock()
	if ended {
		r.forget(ns, ls.id)
	}
}

// closeSession ends session id of ns.
func (r *sessions) closeSession(ns, id string) error {
	r.mu.Lock()
	ls := r.byNS[ns][id]
	if ls != nil {
		delete(r.byNS[ns], id)
	}
	r.mu.Unlock()
	if ls == nil {
		return fieldError("session_id", "no session %q in this namespace (list_sessions lists them)", id)
	}
	ls.sb.Close()
	r.forget(ns, id)
	return nil
}

// SessionInfo describes one live session.
type SessionInfo struct {
	SessionID  string    `json:"session_id"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	ExpiresAt  time.Time `json:"expires_at" jsonschema:"When the session is closed if it stays unused."`
	Executions int       `json:"executions"`
	Running    bool      `json:"running" jsonschema:"An execution is running in it now."`
	// Replica is set for a session another replica holds: its record, as
	// that replica wrote it when the session started (last use, expiry and
	// counts are that replica's to know), or as a replica that died left it.
	Replica string `json:"replica,omitempty" jsonschema:"Set when another replica holds the session: calls with its session_id reach it there (through the balancer); its last use and counts are known there."`
}

// list returns the sessions of ns: the live ones of this process, and,
// with replicas sharing a database, those the other replicas recorded. A
// 2026-07-28 client's calls without a session_id reach any replica, so its
// list must not depend on which one answers.
func (r *sessions) list(ctx context.Context, ns string) []SessionInfo {
	out := r.local(ns)
	if r.store == nil {
		return out
	}
	recs, err := r.store.ListSessions(ctx, ns)
	if err != nil {
		r.log.Warn("read session records", "namespace", ns, "error", err)
		return out
	}
	for _, rec := range recs {
		if rec.Replica == r.store.Replica() {
			continue // this replica's own: listed live above, or ended
		}
		out = append(out, SessionInfo{SessionID: rec.ID, CreatedAt: rec.CreatedAt.UTC(), LastUsedAt: rec.LastUsedAt.UTC(),
			ExpiresAt: rec.LastUsedAt.Add(r.idle).UTC(), Replica: rec.Replica})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastUsedAt.After(out[j].LastUsedAt) })
	return out
}

// local returns the live sessions of ns in this process.
func (r *sessions) local(ns string) []SessionInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []SessionInfo{}
	for _, ls := range r.byNS[ns] {
		if !ls.sb.Alive() && ls.running == 0 {
			continue
		}
		out = append(out, SessionInfo{SessionID: ls.id, CreatedAt: ls.created.UTC(), LastUsedAt: ls.lastUsed.UTC(),
			ExpiresAt: ls.lastUsed.Add(r.idle).UTC(), Executions: ls.executions, Running: ls.running > 0})
	}
	return out
}

// expire closes sessions left unused for the idle time.
func (r *sessions) expire() {
	defer close(r.done)
	every := min(max(r.idle/4, 10*time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			type gone struct {
				ns string
				ls *liveSession
			}
			var old []gone
			r.mu.Lock()
			for ns, m := range r.byNS {
				for id, ls := range m {
					if ls.running == 0 && (now.Sub(ls.lastUsed) >= r.idle || !ls.sb.Alive()) {
						delete(m, id)
						old = append(old, gone{ns, ls})
					}
				}
			}
			r.mu.Unlock()
			for _, g := range old {
				g.ls.sb.Close()
				r.forget(g.ns, g.ls.id)
			}
		}
	}
}

// closeAll ends every session and the expiry loop.
func (r *sessions) closeAll() {
	select {
	case <-r.stop:
		return
	default:
	}
	close(r.stop)
	<-r.done
	r.mu.Lock()
	var all []*liveSession
	for ns, m := range r.byNS {
		for _, ls := range m {
			all = append(all, ls)
		}
		delete(r.byNS, ns)
	}
	r.mu.Unlock()
	for _, ls := range all {
		ls.sb.Close()
	}
}

// elsewhere returns the replica (another than this one) whose records
// hold session id of ns, or "": with replicas sharing one database, a call
// that starts a session the caller had on another replica (which stopped,
// or which its reconnected MCP session no longer reaches) is told where the
// old one was. Records of a replica that died stay until it starts again
// under its name, so the answer is where the session was last seen.
func (r *sessions) elsewhere(ctx context.Context, ns, id string) string {
	if r.store == nil {
		return ""
	}
	recs, err := r.store.ListSessions(ctx, ns)
	if err != nil {
		r.log.Warn("read session records", "namespace", ns, "error", err)
		return ""
	}
	for _, rec := range recs { // most recently used first
		if rec.ID == id && rec.Replica != r.store.Replica() {
			return rec.Replica
		}
	}
	return ""
}

func (r *sessions) record(ns, id string, t time.Time) {
	if r.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), StoreWriteTimeout)
	defer cancel()
	if err := r.store.TouchSession(ctx, ns, id, t); err != nil {
		r.log.Warn("record session", "namespace", ns, "session", id, "error", err)
	}
}

func (r *sessions) forget(ns, id string) {
	if r.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), StoreWriteTimeout)
	defer cancel()
	if err := r.store.DeleteSession(ctx, ns, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		r.log.Warn("delete session record", "namespace", ns, "session", id, "error", err)
	}
}

// ListSessionsOutput is the result of list_sessions.
type ListSessionsOutput struct {
	Sessions []SessionInfo `json:"sessions"`
}

// CloseSessionInput is the input of close_session.
type CloseSessionInput struct {
	SessionID string `json:"session_id" jsonschema:"The session to end; its interpreter and globals are discarded."`
}

// CloseSessionOutput is the result of close_session.
type CloseSessionOutput struct {
	Closed string `json:"closed"`
}

func (s *Server) addSessionTools() {
	addTool(s, "exec", &mcp.Tool{
		Name:        "list_sessions",
		Title:       "List live sessions",
		Description: "The live interpreter sessions of execute_code (session_id) in this namespace.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ListSessionsOutput, error) {
		list := s.sessions.list(ctx, namespaceOf(req))
		var b strings.Builder
		for _, si := range list {
			if si.Replica != "" {
				fmt.Fprintf(&b, "%s: on replica %s, started %s\n", si.SessionID, si.Replica, si.CreatedAt.Format(time.RFC3339))
				continue
			}
			fmt.Fprintf(&b, "%s: %d executions, last used %s\n", si.SessionID, si.Executions, si.LastUsedAt.Format(time.RFC3339))
		}
		if len(list) == 0 {
			b.WriteString("no live sessions\n")
		}
		return textResult(b.String()), ListSessionsOutput{Sessions: list}, nil
	})
	addTool(s, "exec", &mcp.Tool{
		Name:        "close_session",
		Annotations: destroys(),
		Title:       "Close a session",
		Description: "End a session of execute_code and discard its interpreter's state.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in CloseSessionInput) (*mcp.CallToolResult, CloseSessionOutput, error) {
		if err := s.sessions.closeSession(namespaceOf(req), in.SessionID); err != nil {
			return nil, CloseSessionOutput{}, err
		}
		return textResult("closed " + in.SessionID + "\n"), CloseSessionOutput{Closed: in.SessionID}, nil
	})
}

// live says whether ns holds a session whose interpreter lives or runs:
// such a namespace is not idle, whatever the time since its last call.
func (r *sessions) live(ns string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ls := range r.byNS[ns] {
		if ls.running > 0 || ls.sb.Alive() {
			return true
		}
	}
	if len(r.byNS[ns]) == 0 {
		delete(r.byNS, ns)
	}
	return false
}
