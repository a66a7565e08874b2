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

// crmStore is the state of the crm server. Its methods are safe for
// concurrent use.
type crmStore struct {
	mu         sync.Mutex // guards the fields below
	accounts   []Account
	byID       map[string]int
	contacts   map[string][]Contact // by account id
	opps       []Opportunity
	activities map[string][]Activity // by account id
	tasks      []Task
	seq        int
}

// Contact is a person at an account.
type Contact struct {
	ID        string `json:"contact_id"`
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	Title     string `json:"title"`
}

// Opportunity is a deal in the pipeline.
type Opportunity struct {
	ID        string `json:"opportunity_id"`
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	Stage     string `json:"stage"`
	AmountUSD int    `json:"amount_usd"`
	CloseDate string `json:"close_date"`
}

// Activity is a logged call, email, meeting or note.
type Activity struct {
	ID        string `json:"activity_id"`
	AccountID string `json:"account_id"`
	Type      string `json:"type"`
	Summary   string `json:"summary"`
	At        string `json:"at"`
}

// Task is a follow-up assigned to someone.
type Task struct {
	ID        string `json:"task_id"`
	AccountID string `json:"account_id"`
	Title     string `json:"title"`
	DueDate   string `json:"due_date"`
	Assignee  string `json:"assignee"`
	Done      bool   `json:"done"`
}

var (
	stages     = []string{"prospecting", "qualification", "proposal", "negotiation", "closed_won", "closed_lost"}
	jobTitles  = []string{"VP Engineering", "Head of Support", "CFO", "IT Director", "Operations Manager", "Procurement Lead"}
	activities = []string{"call", "email", "meeting", "note"}
)

func newCRMStore(accounts []Account) *crmStore {
	s := &crmStore{accounts: accounts, byID: map[string]int{}, contacts: map[string][]Contact{}, activities: map[string][]Activity{}}
	r := newRand(4)
	for i, a := range accounts {
		s.byID[a.ID] = i
		for j := range 2 {
			first, last := pick(r, firstNames), pick(r, lastNames)
			s.contacts[a.ID] = append(s.contacts[a.ID], Contact{ID: fmt.Sprintf("CON-%05d", 2*i+j+1), AccountID: a.ID, Name: first + " " + last,
				Email: strings.ToLower(first) + "@" + strings.ToLower(strings.Fields(a.Name)[0]) + ".example", Title: pick(r, jobTitles)})
		}
		if i%4 == 0 {
			s.opps = append(s.opps, Opportunity{ID: fmt.Sprintf("OPP-%05d", len(s.opps)+1), AccountID: a.ID, Name: a.Name + " renewal",
				Stage: pick(r, stages), AmountUSD: a.ARR, CloseDate: a.Renewal})
		}
	}
	return s
}

func (s *crmStore) account(id string) (*Account, error) {
	i, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("account_id: no account has id %q", id)
	}
	return &s.accounts[i], nil
}

type listAccountsIn struct {
	Owner    string `json:"owner,omitempty" jsonschema:"Only accounts owned by this account manager, e.g. J. Alvarez."`
	Industry string `json:"industry,omitempty" jsonschema:"Only accounts in this industry, e.g. retail."`
	Limit    int    `json:"limit,omitempty" jsonschema:"Accounts per page, 1 to 500. Default 100."`
	Offset   int    `json:"offset,omitempty" jsonschema:"Accounts to skip, for paging; keep going while offset + limit < total."`
}

type accountsOut struct {
	Accounts []Account `json:"accounts"`
	Total    int       `json:"total" jsonschema:"How many accounts match in all."`
}

type accountIDIn struct {
	AccountID string `json:"account_id" jsonschema:"The account's id, e.g. ACC-0042."`
}

type searchAccountsIn struct {
	Query string `json:"query" jsonschema:"Part of the account name, case-insensitive."`
}

type createAccountIn struct {
	Name     string `json:"name" jsonschema:"Company name."`
	Industry string `json:"industry,omitempty" jsonschema:"Industry, e.g. healthcare."`
	Owner    string `json:"owner,omitempty" jsonschema:"Account manager; default unassigned."`
}

type updateAccountIn struct {
	AccountID string `json:"account_id" jsonschema:"The account's id."`
	Owner     string `json:"owner,omitempty" jsonschema:"New account manager."`
	Industry  string `json:"industry,omitempty" jsonschema:"New industry."`
	Health    string `json:"health,omitempty" jsonschema:"New health score: green, yellow or red."`
}

type contactsOut struct {
	Contacts []Contact `json:"contacts"`
}

type createContactIn struct {
	AccountID string `json:"account_id" jsonschema:"The account the person works at."`
	Name      string `json:"name" jsonschema:"Full name."`
	Email     string `json:"email" jsonschema:"Work email address."`
	Title     string `json:"title,omitempty" jsonschema:"Job title."`
}

type listOppsIn struct {
	AccountID string `json:"account_id,omitempty" jsonschema:"Only this account's opportunities."`
	Stage     string `json:"stage,omitempty" jsonschema:"Only opportunities in this stage: prospecting, qualification, proposal, negotiation, closed_won or closed_lost."`
	Limit     int    `json:"limit,omitempty" jsonschema:"1 to 500. Default 100."`
	Offset    int    `json:"offset,omitempty" jsonschema:"Opportunities to skip, for paging."`
}

type oppsOut struct {
	Opportunities []Opportunity `json:"opportunities"`
	Total         int           `json:"total"`
}

type oppStageIn struct {
	OpportunityID string `json:"opportunity_id" jsonschema:"The opportunity's id, e.g. OPP-00012."`
	Stage         string `json:"stage" jsonschema:"The new stage."`
}

type logActivityIn struct {
	AccountID string `json:"account_id" jsonschema:"The account it concerns."`
	Type      string `json:"type" jsonschema:"call, email, meeting or note."`
	Summary   string `json:"summary" jsonschema:"What happened, in a sentence or two."`
}

type activitiesOut struct {
	Activities []Activity `json:"activities"`
}

type createTaskIn struct {
	AccountID string `json:"account_id" jsonschema:"The account it concerns."`
	Title     string `json:"title" jsonschema:"What needs doing."`
	DueDate   string `json:"due_date" jsonschema:"YYYY-MM-DD."`
	Assignee  string `json:"assignee,omitempty" jsonschema:"Who does it; default the account owner."`
}

type pipelineOut struct {
	Stages []stageTotal `json:"stages"`
}

type stageTotal struct {
	Stage     string `json:"stage"`
	Count     int    `json:"count"`
	AmountUSD int    `json:"amount_usd"`
}

func crmServer(s *crmStore) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "crm", Title: "CRM", Version: "4.1.0"},
		&mcp.ServerOptions{Instructions: "Customer accounts, contacts, opportunities and activities. Account ids look like ACC-0042; the support desk refers to accounts by the same ids."})

	mcp.AddTool(srv, &mcp.Tool{Name: "list_accounts", Title: "List accounts",
		Description: "List customer accounts with tier, owner, annual recurring revenue, renewal date and health score, sorted by id. Filter by owner or industry; page with limit and offset."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in listAccountsIn) (*mcp.CallToolResult, accountsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			var all []Account
			for _, a := range s.accounts {
				if (in.Owner == "" || a.Owner == in.Owner) && (in.Industry == "" || a.Industry == in.Industry) {
					all = append(all, a)
				}
			}
			page, err := paged(all, in.Limit, in.Offset, 100, 500)
			return nil, accountsOut{Accounts: page, Total: len(all)}, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_account", Title: "Get an account",
		Description: "One account's details: industry, tier, owner, annual recurring revenue, renewal date and health score."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in accountIDIn) (*mcp.CallToolResult, Account, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			a, err := s.account(in.AccountID)
			if err != nil {
				return nil, Account{}, err
			}
			return nil, *a, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "search_accounts", Title: "Search accounts by name",
		Description: "Find accounts whose name contains the query, case-insensitive. At most 50 results."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in searchAccountsIn) (*mcp.CallToolResult, accountsOut, error) {
			q := strings.ToLower(strings.TrimSpace(in.Query))
			if q == "" {
				return nil, accountsOut{}, fmt.Errorf("query: must not be empty")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			out := accountsOut{Accounts: []Account{}}
			for _, a := range s.accounts {
				if strings.Contains(strings.ToLower(a.Name), q) {
					out.Total++
					if len(out.Accounts) < 50 {
						out.Accounts = append(out.Accounts, a)
					}
				}
			}
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create_account", Title: "Create an account",
		Description: "Create a customer account. New accounts start on the smb tier with green health."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in createAccountIn) (*mcp.CallToolResult, Account, error) {
			if strings.TrimSpace(in.Name) == "" {
				return nil, Account{}, fmt.Errorf("name: must not be empty")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			a := Account{ID: fmt.Sprintf("ACC-%04d", len(s.accounts)+1), Name: in.Name, Industry: in.Industry, Tier: "smb", Owner: in.Owner,
				Renewal: epoch.AddDate(1, 0, 0).Format(time.DateOnly), Health: "green"}
			s.byID[a.ID] = len(s.accounts)
			s.accounts = append(s.accounts, a)
			return nil, a, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "update_account", Title: "Update an account",
		Description: "Change an account's owner, industry or health score. Fields left out are unchanged."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in updateAccountIn) (*mcp.CallToolResult, Account, error) {
			if in.Health != "" && !slices.Contains([]string{"green", "yellow", "red"}, in.Health) {
				return nil, Account{}, fmt.Errorf("health: must be green, yellow or red, not %q", in.Health)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			a, err := s.account(in.AccountID)
			if err != nil {
				return nil, Account{}, err
			}
			if in.Owner != "" {
				a.Owner = in.Owner
			}
			if in.Industry != "" {
				a.Industry = in.Industry
			}
			if in.Health != "" {
				a.Health = in.Health
			}
			return nil, *a, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_contacts", Title: "List contacts",
		Description: "The people recorded at an account, with email and job title."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in accountIDIn) (*mcp.CallToolResult, contactsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, err := s.account(in.AccountID); err != nil {
				return nil, contactsOut{}, err
			}
			return nil, contactsOut{Contacts: append([]Contact{}, s.contacts[in.AccountID]...)}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create_contact", Title: "Add a contact",
		Description: "Record a person at an account."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in createContactIn) (*mcp.CallToolResult, Contact, error) {
			if !strings.Contains(in.Email, "@") {
				return nil, Contact{}, fmt.Errorf("email: %q is not an email address", in.Email)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, err := s.account(in.AccountID); err != nil {
				return nil, Contact{}, err
			}
			s.seq++
			c := Contact{ID: fmt.Sprintf("CON-N%04d", s.seq), AccountID: in.AccountID, Name: in.Name, Email: in.Email, Title: in.Title}
			s.contacts[in.AccountID] = append(s.contacts[in.AccountID], c)
			return nil, c, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_opportunities", Title: "List opportunities",
		Description: "Deals in the pipeline, optionally for one account or in one stage, with amount and expected close date."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in listOppsIn) (*mcp.CallToolResult, oppsOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			var all []Opportunity
			for _, o := range s.opps {
				if (in.AccountID == "" || o.AccountID == in.AccountID) && (in.Stage == "" || o.Stage == in.Stage) {
					all = append(all, o)
				}
			}
			page, err := paged(all, in.Limit, in.Offset, 100, 500)
			return nil, oppsOut{Opportunities: page, Total: len(all)}, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "update_opportunity_stage", Title: "Move an opportunity",
		Description: "Move an opportunity to another pipeline stage."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in oppStageIn) (*mcp.CallToolResult, Opportunity, error) {
			if !slices.Contains(stages, in.Stage) {
				return nil, Opportunity{}, fmt.Errorf("stage: must be one of %s, not %q", strings.Join(stages, ", "), in.Stage)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for i := range s.opps {
				if s.opps[i].ID == in.OpportunityID {
					s.opps[i].Stage = in.Stage
					return nil, s.opps[i], nil
				}
			}
			return nil, Opportunity{}, fmt.Errorf("opportunity_id: no opportunity has id %q", in.OpportunityID)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "log_activity", Title: "Log an activity",
		Description: "Record a call, email, meeting or note against an account; it shows in the account's timeline."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in logActivityIn) (*mcp.CallToolResult, Activity, error) {
			if !slices.Contains(activities, in.Type) {
				return nil, Activity{}, fmt.Errorf("type: must be call, email, meeting or note, not %q", in.Type)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, err := s.account(in.AccountID); err != nil {
				return nil, Activity{}, err
			}
			s.seq++
			a := Activity{ID: fmt.Sprintf("ACT-%05d", s.seq), AccountID: in.AccountID, Type: in.Type, Summary: in.Summary, At: epoch.Format(time.RFC3339)}
			s.activities[in.AccountID] = append(s.activities[in.AccountID], a)
			return nil, a, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_activities", Title: "Account timeline",
		Description: "The calls, emails, meetings and notes logged against an account, newest first."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in accountIDIn) (*mcp.CallToolResult, activitiesOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, err := s.account(in.AccountID); err != nil {
				return nil, activitiesOut{}, err
			}
			out := activitiesOut{Activities: slices.Clone(s.activities[in.AccountID])}
			slices.Reverse(out.Activities)
			if out.Activities == nil {
				out.Activities = []Activity{}
			}
			return nil, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create_task", Title: "Create a follow-up task",
		Description: "Create a task for an account, due on a date and assigned to a person (the account owner by default)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in createTaskIn) (*mcp.CallToolResult, Task, error) {
			if _, err := time.Parse(time.DateOnly, in.DueDate); err != nil {
				return nil, Task{}, fmt.Errorf("due_date: %q is not a YYYY-MM-DD date", in.DueDate)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			a, err := s.account(in.AccountID)
			if err != nil {
				return nil, Task{}, err
			}
			who := in.Assignee
			if who == "" {
				who = a.Owner
			}
			s.seq++
			t := Task{ID: fmt.Sprintf("TSK-%05d", s.seq), AccountID: a.ID, Title: in.Title, DueDate: in.DueDate, Assignee: who}
			s.tasks = append(s.tasks, t)
			return nil, t, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_pipeline_summary", Title: "Pipeline summary",
		Description: "Count and total amount of opportunities in each pipeline stage."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, pipelineOut, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			out := pipelineOut{}
			for _, st := range stages {
				t := stageTotal{Stage: st}
				for _, o := range s.opps {
					if o.Stage == st {
						t.Count++
						t.AmountUSD += o.AmountUSD
					}
				}
				out.Stages = append(out.Stages, t)
			}
			return nil, out, nil
		})
	return srv
}
