package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The scenario data is generated from fixed seeds, so every run (and every
// machine) sees the same bytes and counts the same tokens.

// epoch is "today" for the generated data.
var epoch = time.Date(2025, 9, 15, 0, 0, 0, 0, time.UTC)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

var (
	firstNames = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken", "Frances", "Dennis",
		"Radia", "Leslie", "Sophie", "Linus", "Hedy", "Niklaus", "Karen", "John", "Shafi", "Tim", "Jean", "Guido",
		"Anita", "Bjarne", "Mary", "Rob", "Evelyn", "Robert", "Ingrid", "Lars", "Aiko", "Mateo", "Priya", "Omar",
		"Chen", "Fatima", "Kwame", "Elena", "Yusuf", "Hana"}
	lastNames = []string{"Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Hamilton", "Thompson", "Allen",
		"Ritchie", "Perlman", "Lamport", "Wilson", "Torvalds", "Lamarr", "Wirth", "Jones", "Backus", "Goldwasser",
		"Berners-Lee", "Sammet", "Rossum", "Borg", "Stroustrup", "Keller", "Pike", "Berezin", "Kahn", "Hansen",
		"Nilsen", "Tanaka", "Garcia", "Sharma", "Haddad", "Wei", "Khan", "Mensah", "Petrova", "Demir", "Sato"}
	companyWords = []string{"Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Tyrell", "Cyberdyne", "Soylent",
		"Hooli", "Vandelay", "Massive", "Aperture", "Gringotts", "Wonka", "Oscorp", "Nakatomi", "Dunder", "Pied", "Prestige",
		"Blue Sun", "Monarch", "Sterling", "Bluth", "Virtucon", "Kramerica", "Gekko", "Ollivander", "Nordic", "Fjord"}
	companySuffixes = []string{"Inc", "Ltd", "GmbH", "AS", "AB", "LLC", "Group", "Systems", "Labs", "Holdings"}
	countries       = []string{"US", "US", "US", "US", "GB", "GB", "DE", "DE", "FR", "CA", "AU", "NL", "SE", "NO", "DK", "JP", "BR", "IN", "ES", "IT"}
	plans           = []string{"free", "free", "starter", "starter", "starter", "pro", "pro", "pro", "team", "enterprise"}
	statuses        = []string{"active", "active", "active", "active", "active", "active", "trialing", "past_due", "cancelled"}
	managers        = []string{"J. Alvarez", "M. Okafor", "S. Lindqvist", "R. Patel", "K. Nakamura", "L. Moreau", "D. Fischer", "A. Costa"}
)

// Customer is one row of the sheets server's Customers sheet.
type Customer struct {
	ID      string
	Name    string
	Company string
	Email   string
	Country string
	Plan    string
	Seats   int
	MRR     float64 // monthly recurring revenue, USD
	Signup  string  // YYYY-MM-DD
	Status  string
	Manager string
}

// customerColumns is the header row of the Customers sheet.
var customerColumns = []string{"customer_id", "name", "company", "email", "country", "plan", "seats", "mrr_usd", "signup_date", "status", "account_manager"}

func (c Customer) values() []any {
	return []any{c.ID, c.Name, c.Company, c.Email, c.Country, c.Plan, c.Seats, c.MRR, c.Signup, c.Status, c.Manager}
}

// customerCount is the size of the filter scenario's table.
const customerCount = 10_000

// overdueNorway are the rows the filter scenario must find: the only
// enterprise customers in Norway that are past due.
var overdueNorway = []int{137, 2_048, 4_711, 7_300, 9_876}

// genCustomers returns the Customers sheet: customerCount rows, of which
// exactly the rows at overdueNorway are enterprise customers in Norway with
// status past_due.
func genCustomers() []Customer {
	r := newRand(1)
	special := map[int]bool{}
	for _, i := range overdueNorway {
		special[i] = true
	}
	out := make([]Customer, customerCount)
	for i := range out {
		first, last := pick(r, firstNames), pick(r, lastNames)
		company := pick(r, companyWords) + " " + pick(r, companySuffixes)
		c := Customer{
			ID:      fmt.Sprintf("CUS-%05d", i+1),
			Name:    first + " " + last,
			Company: company,
			Email:   strings.ToLower(first+"."+strings.ReplaceAll(last, "-", "")) + "@" + strings.ToLower(strings.Fields(company)[0]) + ".example",
			Country: pick(r, countries),
			Plan:    pick(r, plans),
			Status:  pick(r, statuses),
			Manager: pick(r, managers),
			Signup:  epoch.AddDate(0, 0, -r.IntN(2000)).Format(time.DateOnly),
		}
		if special[i] {
			c.Country, c.Plan, c.Status = "NO", "enterprise", "past_due"
		} else if c.Country == "NO" && c.Plan == "enterprise" && c.Status == "past_due" {
			c.Status = "active"
		}
		c.Seats, c.MRR = seatsAndMRR(r, c.Plan)
		out[i] = c
	}
	return out
}

func seatsAndMRR(r *rand.Rand, plan string) (int, float64) {
	price := map[string]float64{"free": 0, "starter": 12, "pro": 29, "team": 45, "enterprise": 79}[plan]
	seats := 1 + r.IntN(20)
	if plan == "team" {
		seats = 5 + r.IntN(60)
	}
	if plan == "enterprise" {
		seats = 50 + r.IntN(950)
	}
	return seats, float64(seats) * price
}

// Account is one account of the CRM server.
type Account struct {
	ID       string `json:"account_id"`
	Name     string `json:"name"`
	Industry string `json:"industry"`
	Tier     string `json:"tier"`
	Owner    string `json:"owner"`
	ARR      int    `json:"arr_usd"`
	Renewal  string `json:"renewal_date"`
	Health   string `json:"health"`
}

// Ticket is one ticket of the tickets server.
type Ticket struct {
	ID         string `json:"id"`
	CustomerID string `json:"customer_id"` // an Account.ID of the CRM
	Subject    string `json:"subject"`
	Status     string `json:"status"`
	Priority   string `json:"priority"`
	Assignee   string `json:"assignee"`
	Created    string `json:"created_at"`
	Updated    string `json:"updated_at"`
}

const (
	accountCount = 2_000
	ticketCount  = 6_000
)

var (
	industries    = []string{"software", "retail", "healthcare", "finance", "logistics", "education", "media", "manufacturing", "energy", "public sector"}
	tiers         = []string{"smb", "smb", "smb", "mid-market", "mid-market", "strategic"}
	healths       = []string{"green", "green", "green", "yellow", "red"}
	ticketStates  = []string{"open", "open", "pending", "solved", "solved", "solved", "closed", "closed"}
	priorities    = []string{"low", "normal", "normal", "normal", "high", "urgent"}
	agents        = []string{"support-bot", "T. Brennan", "Y. Haddad", "N. Osei", "P. Ivanova", "C. Romero", "H. Kim"}
	ticketSubject = []string{
		"SSO login fails with SAML assertion error", "Export to CSV times out for large reports", "Invoice shows the wrong VAT rate",
		"Webhook deliveries delayed by several minutes", "Cannot invite users from a second domain", "Dashboard charts render blank in Safari",
		"API returns 429 below the documented rate limit", "Audit log missing entries for bulk deletes", "Mobile app crashes on attachment upload",
		"Request to raise the seat limit before renewal", "Data residency question for EU workspace", "Scheduled report emails land in spam",
		"Search does not find recently created records", "Two-factor codes rejected after phone change", "Billing contact needs to be updated",
		"Sandbox environment refresh stuck at 80%", "Custom field values lost after import", "Slow page loads during business hours",
	}
)

// strategicAtRisk fixes the answer of the join scenario, the open urgent
// tickets of strategic accounts whose health is red: these accounts are the
// only such accounts, and each has exactly two such tickets.
var strategicAtRisk = []int{41, 777, 1_390}

// genCRM returns the accounts and the tickets. Among the accounts, exactly
// those at strategicAtRisk are strategic with red health; each of them has
// open urgent tickets, and no other such account has any.
func genCRM() ([]Account, []Ticket) {
	r := newRand(2)
	special := map[int]bool{}
	for _, i := range strategicAtRisk {
		special[i] = true
	}
	accounts := make([]Account, accountCount)
	for i := range accounts {
		a := Account{
			ID:       fmt.Sprintf("ACC-%04d", i+1),
			Name:     pick(r, companyWords) + " " + pick(r, companySuffixes),
			Industry: pick(r, industries),
			Tier:     pick(r, tiers),
			Owner:    pick(r, managers),
			Renewal:  epoch.AddDate(0, 0, r.IntN(365)).Format(time.DateOnly),
			Health:   pick(r, healths),
		}
		if special[i] {
			a.Tier, a.Health = "strategic", "red"
		} else if a.Tier == "strategic" && a.Health == "red" {
			a.Health = "yellow"
		}
		a.ARR = map[string]int{"smb": 5_000, "mid-market": 40_000, "strategic": 250_000}[a.Tier] * (1 + r.IntN(4))
		accounts[i] = a
	}
	tickets := make([]Ticket, ticketCount)
	for i := range tickets {
		created := epoch.Add(-time.Duration(r.IntN(90*24*60)) * time.Minute)
		t := Ticket{
			ID:         fmt.Sprintf("TCK-%05d", 10_001+i),
			CustomerID: accounts[r.IntN(accountCount)].ID,
			Subject:    pick(r, ticketSubject),
			Status:     pick(r, ticketStates),
			Priority:   pick(r, priorities),
			Assignee:   pick(r, agents),
			Created:    created.Format(time.RFC3339),
			Updated:    created.Add(time.Duration(r.IntN(72*60)) * time.Minute).Format(time.RFC3339),
		}
		tickets[i] = t
	}
	// Each at-risk account gets two open urgent tickets, at fixed
	// positions; its other open urgent tickets, if chance made any, become
	// high priority, so the answer is exactly these six.
	fixed := map[int]bool{}
	for k, a := range strategicAtRisk {
		for j := range 2 {
			i := 1_000*k + 137*j + 500
			fixed[i] = true
			tickets[i].CustomerID, tickets[i].Status, tickets[i].Priority = accounts[a].ID, "open", "urgent"
		}
	}
	for i := range tickets {
		t := &tickets[i]
		if fixed[i] || t.Status != "open" || t.Priority != "urgent" {
			continue
		}
		for _, a := range strategicAtRisk {
			if t.CustomerID == accounts[a].ID {
				t.Priority = "high"
			}
		}
	}
	return accounts, tickets
}

// Words for the meeting transcript. The generator strings them into plain
// spoken English, so the tokenizer sees text like a real transcript's.
var (
	speakers = []string{"Maria Alvarez", "Daniel Okafor", "Sofia Lindqvist", "Raj Patel", "Kenji Nakamura", "Louise Moreau", "Tom Brennan"}
	openers  = []string{"So", "Okay, so", "Right,", "I think", "Honestly,", "Just to add to that,", "Yeah, and", "From our side,", "If I can jump in,", "Looking at the numbers,", "To be fair,", "One thing I'd flag:"}
	subjects = []string{"the enterprise pipeline", "the renewal forecast", "the onboarding flow", "our support backlog", "the pricing change",
		"the EU data residency work", "the partner channel", "the Q3 hiring plan", "the mobile release", "churn in the mid-market segment",
		"the SSO migration", "the security review", "the new dashboard", "the marketing budget", "the trial conversion rate",
		"the customer advisory board", "the API rate limits", "the billing system cutover", "the Nordic expansion", "the analytics rebuild"}
	verbs = []string{"is tracking ahead of", "is running behind", "depends heavily on", "should unblock", "is going to slip past",
		"needs another pass before", "came up again in", "is basically done except for", "will probably change", "is the main risk for",
		"looks healthier than", "was discussed in detail at", "has to land before", "got pushed because of", "needs an owner for"}
	objects = []string{"the end of the quarter", "the board meeting", "the October launch", "last month's numbers", "the annual plan",
		"the largest three deals", "what we promised in July", "the renewal conversations", "the engineering roadmap", "the offsite",
		"the customer commitments", "the audit in November", "the regional kickoff", "the hiring freeze", "the new support tiers"}
	tails = []string{"", "", "", " if we are being realistic", " and I want us to be clear about that", " which surprised a few people",
		" based on what the team told me yesterday", " at least according to the latest dashboard", " unless something changes this week",
		" and we should write that down", " so let's not overcommit", " and that's a good thing"}
	asides = []string{"Can everyone see my screen?", "Sorry, I was on mute.", "Let's take that offline.", "Good question.",
		"I'll send the link after the call.", "Does that match what you're seeing?", "Let me pull up the doc.", "Agreed.",
		"We should get legal to look at it.", "I'll follow up with the customer directly.", "Who owns that action item?",
		"That's fair.", "I can take that one.", "Let's park it for now and come back to it."}
)

// genTranscript returns the meeting transcript of the document scenario: a
// header, then timestamped turns until it is at least size bytes long.
func genTranscript(size int) string {
	r := newRand(3)
	var b strings.Builder
	b.WriteString("# Q3 business review: full meeting transcript\n\n")
	b.WriteString("Date: 2025-09-12, from 09:00 CET, about two hours. Recorded and transcribed automatically.\n")
	b.WriteString("Attendees: " + strings.Join(speakers, ", ") + ".\n\n")
	at := 0
	for b.Len() < size {
		fmt.Fprintf(&b, "[%02d:%02d:%02d] %s: ", at/3600, at/60%60, at%60, pick(r, speakers))
		n := 1 + r.IntN(4)
		for i := range n {
			if i > 0 {
				b.WriteString(" ")
			}
			if r.IntN(6) == 0 {
				b.WriteString(pick(r, asides))
				continue
			}
			fmt.Fprintf(&b, "%s %s %s %s%s.", pick(r, openers), pick(r, subjects), pick(r, verbs), pick(r, objects), pick(r, tails))
		}
		b.WriteString("\n")
		at += 4 + r.IntN(24)
	}
	b.WriteString("\n[End of recording]\n")
	return b.String()
}
