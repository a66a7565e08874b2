package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ticketStore is the state of the tickets server. Its methods are safe for
// concurrent use.
type ticketStore struct {
	mu       sync.Mutex // guards the fields below
	tickets  []Ticket
	byID     map[string]int
	comments map[string][]TicketComment
	tags     map[string][]string
}

// TicketComment is a reply or internal note on a ticket.
type TicketComment struct {
	Author    string `json:"author"`
	Body      string `json:"body"`
	Public    bool   `json:"public"`
	CreatedAt string `json:"created_at"`
}

var (
	ticketStatuses = []string{"open", "pending", "solved", "closed"}
	ticketPrios    = []string{"low", "normal", "high", "urgent"}
	macros         = map[string]string{
		"ask_for_logs":      "Could you send us the browser console log and the time the problem happened? That will help us find the cause.",
		"known_issue":       "This is a known issue; our engineers are working on a fix and we will update this ticket when it ships.",
		"close_no_response": "We haven't heard back, so we are closing this ticket. Reply to reopen it at any time.",
	}
)

func newTicketStore(tickets []Ticket) *ticketStore {
	s := &ticketStore{tickets: tickets, byID: map[string]int{}, comments: map[string][]TicketComment{}, tags: map[string][]string{}}
	for i, t := range tickets {
		s.byID[t.ID] = i
	}
	return s
}

func (s *ticketStore) ticket(id string) (*Ticket, error) {
	i, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("ticket_id: no ticket has id %q", id)
	}
	return &s.tickets[i], nil
}

type listTicketsIn struct {
	Status     string `json:"status,omitempty" jsonschema:"Only tickets in this status: open, pending, solved or closed."`
	Priority   string `json:"priority,omitempty" jsonschema:"Only tickets of this priority: low, normal, high or urgent."`
	Assignee   string `json:"assignee,omitempty" jsonschema:"Only tickets assigned to this agent."`
	CustomerID string `json:"customer_id,omitempty" jsonschema:"Only tickets of this customer account (a CRM account id such as ACC-0042)."`
	Limit      int    `json:"limit,omitempty" jsonschema:"Tickets per page, 1 to 500. Default 100."`
	Offset     int    `json:"offset,omitempty" jsonschema:"Tickets to skip, for paging."`
}

type ticketsOut struct {
	Tickets []Ticket `json:"tickets"`
	Total   int      `json:"total" jsonschema:"How many tickets match in all."`
}

type ticketIDIn struct {
	TicketID string `json:"ticket_id" jsonschema:"The ticket's id, e.g. TCK-10042."`
}

type ticketDetail struct {
	Ticket
	Tags     []string        `json:"tags"`
	Comments []TicketComment `json:"comments"`
}

type createTicketIn struct {
	CustomerID  string `json:"customer_id" jsonschema:"The customer account (CRM account id)."`
	Subject     string `json:"subject" jsonschema:"One line summary."`
	Description string `json:"description" jsonschema:"What the customer reported."`
	Priority    string `json:"priority,omitempty" jsonschema:"low, normal (default), high or urgent."`
}

type updateTicketIn struct {
	TicketID string `json:"ticket_id" jsonschema:"The ticket's id."`
	Status   string `json:"status,omitempty" jsonschema:"New status: open, pending, solved or closed."`
	Priority string `json:"priority,omitempty" jsonschema:"New priority: low, normal, high or urgent."`
}

type ticketCommentIn struct {
	TicketID string `json:"ticket_id" jsonschema:"The ticket's id."`
	Body     string `json:"body" jsonschema:"The reply or note, plain text."`
	Public   bool   `json:"public,omitempty" jsonschema:"True to email it to the customer; false for an internal note."`
}

type ticketCommentsOut struct {
	Comments []TicketComment `json:"comments"`
}

type searchTicketsIn struct {
	Query string `json:"query" jsonschema:"Words that must all appear in the subject."`
	Limit int    `json:"limit,omitempty" jsonschema:"1 to 100. Default 20."`
}

type assignIn struct {
	TicketID string `json:"ticket_id" jsonschema:"The ticket's id."`
	Assignee string `json:"assignee" jsonschema:"The agent to assign it to (list_agents names them)."`
}

type mergeIn struct {
	SourceID string `json:"source_id" jsonschema:"The duplicate ticket; it is closed."`
	TargetID string `json:"target_id" jsonschema:"The ticket to keep; it gets the duplicate's comments."`
}

type agentsOut struct {
	Agents []agentLoad `json:"agents"`
}

type agentLoad struct {
	Name        string `json:"name"`
	OpenTickets int    `json:"open_tickets"`
}

type slaOut struct {
	TicketID         string `json:"ticket_id"`
	Policy           string `json:"policy"`
	FirstResponseDue string `json:"first_response_due"`
	Breached         bool   `json:"breached"`
}

type ticketTagsIn struct {
	TicketID string   `json:"ticket_id" jsonschema:"The ticket's id."`
	Tags     []string `json:"tags" jsonschema:"Tags to add, e.g. [\"billing\", \"sso\"]."`
}

type macroIn struct {
	TicketID string `json:"ticket_id" jsonschema:"The ticket's id."`
	Macro    string `json:"macro" jsonschema:"The macro's name (list_macros names them)."`
}

type macrosOut struct {
	Macros []macroInfo `json:"macros"`
}

type macroInfo struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type statsIn struct {
	GroupBy string `json:"group_by" jsonschema:"status, priority or assignee."`
}

type statsOut struct {
	Groups []statGroup `json:"groups"`
}

type statGroup struct {
	Key   string `json:"key"`
	Count int    `json:"count"`
}

func ticketsServer(s *ticketStore) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "tickets", Title: "Support desk", Version: "3.0.2"},
		&mcp.ServerOptions{Instructions: "The customer support desk. Tickets refer to customers by their CRM account id (customer_id)."})
	const me = "support-bot"

	mcp.AddTool(srv, &mcp.Tool{Name: "list_tickets", Title: "List tickets",
		Description: "List support tickets, sorted by id. Filter by status, priority, assignee or customer account; page with limit and offset."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in listTicketsIn) (*mcp.CallToolResult, ticketsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			var all []Ticket
			for _, t := range s.tickets {
				if (in.Status == "" || t.Status == in.Status) && (in.Priority == "" || t.Priority == in.Priority) &&
					(in.Assignee == "" || t.Assignee == in.Assignee) && (in.CustomerID == "" || t.CustomerID == in.CustomerID) {
					all = append(all, t)
				}
			}
			page, err := paged(all, in.Limit, in.Offset, 100, 500)
			return nil, ticketsOut{Tickets: page, Total: len(all)}, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_ticket", Title: "Get a ticket",
		Description: "One ticket with its tags and its whole conversation."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ticketIDIn) (*mcp.CallToolResult, ticketDetail, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			t, err := s.ticket(in.TicketID)
			if err != nil {
				return nil, ticketDetail{}, err
			}
			return nil, ticketDetail{Ticket: *t, Tags: append([]string{}, s.tags[t.ID]...), Comments: append([]TicketComment{}, s.comments[t.ID]...)}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create_ticket", Title: "Open a ticket",
		Description: "Open a new ticket for a customer account. It starts open and unassigned."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in createTicketIn) (*mcp.CallToolResult, Ticket, error) {
			prio := in.Priority
			if prio == "" {
				prio = "normal"
			}
			if !slices.Contains(ticketPrios, prio) {
				return nil, Ticket{}, fmt.Errorf("priority: must be low, normal, high or urgent, not %q", prio)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			now := epoch.Format(time.RFC3339)
			t := Ticket{ID: fmt.Sprintf("TCK-%05d", 10_001+len(s.tickets)), CustomerID: in.CustomerID, Subject: in.Subject, Status: "open", Priority: prio, Created: now, Updated: now}
			s.byID[t.ID] = len(s.tickets)
			s.tickets = append(s.tickets, t)
			s.comments[t.ID] = []TicketComment{{Author: in.CustomerID, Body: in.Description, Public: true, CreatedAt: now}}
			return nil, t, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "update_ticket", Title: "Update a ticket",
		Description: "Change a ticket's status or priority. Fields left out are unchanged."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in updateTicketIn) (*mcp.CallToolResult, Ticket, error) {
			if in.Status != "" && !slices.Contains(ticketStatuses, in.Status) {
				return nil, Ticket{}, fmt.Errorf("status: must be open, pending, solved or closed, not %q", in.Status)
			}
			if in.Priority != "" && !slices.Contains(ticketPrios, in.Priority) {
				return nil, Ticket{}, fmt.Errorf("priority: must be low, normal, high or urgent, not %q", in.Priority)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			t, err := s.ticket(in.TicketID)
			if err != nil {
				return nil, Ticket{}, err
			}
			if in.Status != "" {
				t.Status = in.Status
			}
			if in.Priority != "" {
				t.Priority = in.Priority
			}
			t.Updated = epoch.Format(time.RFC3339)
			return nil, *t, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_ticket_comment", Title: "Reply or add a note",
		Description: "Add a public reply (emailed to the customer) or an internal note to a ticket."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ticketCommentIn) (*mcp.CallToolResult, ticketCommentsOut, error) {
			if strings.TrimSpace(in.Body) == "" {
				return nil, ticketCommentsOut{}, fmt.Errorf("body: must not be empty")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			t, err := s.ticket(in.TicketID)
			if err != nil {
				return nil, ticketCommentsOut{}, err
			}
			s.comments[t.ID] = append(s.comments[t.ID], TicketComment{Author: me, Body: in.Body, Public: in.Public, CreatedAt: epoch.Format(time.RFC3339)})
			return nil, ticketCommentsOut{Comments: append([]TicketComment{}, s.comments[t.ID]...)}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_ticket_comments", Title: "Ticket conversation",
		Description: "The replies and internal notes of a ticket, oldest first."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ticketIDIn) (*mcp.CallToolResult, ticketCommentsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			t, err := s.ticket(in.TicketID)
			if err != nil {
				return nil, ticketCommentsOut{}, err
			}
			return nil, ticketCommentsOut{Comments: append([]TicketComment{}, s.comments[t.ID]...)}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "search_tickets", Title: "Search tickets",
		Description: "Find tickets whose subject contains all the given words, case-insensitive."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in searchTicketsIn) (*mcp.CallToolResult, ticketsOut, error) {
			words := strings.Fields(strings.ToLower(in.Query))
			if len(words) == 0 {
				return nil, ticketsOut{}, fmt.Errorf("query: give at least one word")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			var all []Ticket
			for _, t := range s.tickets {
				subj, ok := strings.ToLower(t.Subject), true
				for _, w := range words {
					ok = ok && strings.Contains(subj, w)
				}
				if ok {
					all = append(all, t)
				}
			}
			page, err := paged(all, in.Limit, 0, 20, 100)
			return nil, ticketsOut{Tickets: page, Total: len(all)}, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "assign_ticket", Title: "Assign a ticket",
		Description: "Assign a ticket to a support agent."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in assignIn) (*mcp.CallToolResult, Ticket, error) {
			if !slices.Contains(agents, in.Assignee) {
				return nil, Ticket{}, fmt.Errorf("assignee: no agent is named %q (list_agents names them)", in.Assignee)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			t, err := s.ticket(in.TicketID)
			if err != nil {
				return nil, Ticket{}, err
			}
			t.Assignee = in.Assignee
			return nil, *t, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "merge_tickets", Title: "Merge duplicate tickets",
		Description: "Merge a duplicate ticket into another: the duplicate is closed and its conversation is copied over."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mergeIn) (*mcp.CallToolResult, Ticket, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			src, err := s.ticket(in.SourceID)
			if err != nil {
				return nil, Ticket{}, err
			}
			dst, err := s.ticket(in.TargetID)
			if err != nil {
				return nil, Ticket{}, err
			}
			if src == dst {
				return nil, Ticket{}, fmt.Errorf("target_id: is the source")
			}
			s.comments[dst.ID] = append(s.comments[dst.ID], s.comments[src.ID]...)
			src.Status = "closed"
			return nil, *dst, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_agents", Title: "List support agents",
		Description: "The support agents and how many open tickets each has."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, agentsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			out := agentsOut{}
			for _, a := range agents {
				n := 0
				for _, t := range s.tickets {
					if t.Assignee == a && t.Status == "open" {
						n++
					}
				}
				out.Agents = append(out.Agents, agentLoad{Name: a, OpenTickets: n})
			}
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_sla_status", Title: "SLA status",
		Description: "The service-level policy that applies to a ticket, when the first response is due and whether it is breached."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ticketIDIn) (*mcp.CallToolResult, slaOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			t, err := s.ticket(in.TicketID)
			if err != nil {
				return nil, slaOut{}, err
			}
			hours := map[string]int{"low": 72, "normal": 24, "high": 8, "urgent": 1}[t.Priority]
			created, _ := time.Parse(time.RFC3339, t.Created)
			due := created.Add(time.Duration(hours) * time.Hour)
			return nil, slaOut{TicketID: t.ID, Policy: fmt.Sprintf("%s: first response within %d h", t.Priority, hours),
				FirstResponseDue: due.Format(time.RFC3339), Breached: t.Status == "open" && len(s.comments[t.ID]) == 0 && due.Before(epoch)}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_tags", Title: "Tag a ticket",
		Description: "Add tags to a ticket; tags drive routing rules and reports."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ticketTagsIn) (*mcp.CallToolResult, ticketDetail, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			t, err := s.ticket(in.TicketID)
			if err != nil {
				return nil, ticketDetail{}, err
			}
			for _, tag := range in.Tags {
				if !slices.Contains(s.tags[t.ID], tag) {
					s.tags[t.ID] = append(s.tags[t.ID], tag)
				}
			}
			return nil, ticketDetail{Ticket: *t, Tags: append([]string{}, s.tags[t.ID]...), Comments: append([]TicketComment{}, s.comments[t.ID]...)}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_macros", Title: "List macros",
		Description: "Canned replies that apply_macro can post on a ticket."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, macrosOut, error) {
			out := macrosOut{}
			for n, text := range macros {
				out.Macros = append(out.Macros, macroInfo{Name: n, Text: text})
			}
			slices.SortFunc(out.Macros, func(a, b macroInfo) int { return strings.Compare(a.Name, b.Name) })
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "apply_macro", Title: "Apply a macro",
		Description: "Post a macro's canned reply on a ticket as a public comment."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in macroIn) (*mcp.CallToolResult, ticketCommentsOut, error) {
			text, ok := macros[in.Macro]
			if !ok {
				return nil, ticketCommentsOut{}, fmt.Errorf("macro: no macro is named %q (list_macros names them)", in.Macro)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			t, err := s.ticket(in.TicketID)
			if err != nil {
				return nil, ticketCommentsOut{}, err
			}
			s.comments[t.ID] = append(s.comments[t.ID], TicketComment{Author: me, Body: text, Public: true, CreatedAt: epoch.Format(time.RFC3339)})
			return nil, ticketCommentsOut{Comments: append([]TicketComment{}, s.comments[t.ID]...)}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_ticket_stats", Title: "Ticket statistics",
		Description: "Count tickets grouped by status, priority or assignee."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in statsIn) (*mcp.CallToolResult, statsOut, error) {
			key := map[string]func(Ticket) string{
				"status":   func(t Ticket) string { return t.Status },
				"priority": func(t Ticket) string { return t.Priority },
				"assignee": func(t Ticket) string { return t.Assignee },
			}[in.GroupBy]
			if key == nil {
				return nil, statsOut{}, fmt.Errorf("group_by: must be status, priority or assignee, not %q", in.GroupBy)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			count := map[string]int{}
			for _, t := range s.tickets {
				count[key(t)]++
			}
			out := statsOut{Groups: []statGroup{}}
			for k, n := range count {
				out.Groups = append(out.Groups, statGroup{Key: k, Count: n})
			}
			slices.SortFunc(out.Groups, func(a, b statGroup) int { return strings.Compare(a.Key, b.Key) })
			return nil, out, nil
		})
	return srv
}
