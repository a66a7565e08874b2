package catalog

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// generatedCatalog makes a deterministic catalog of n tools over n/100
// servers, with names, descriptions and parameters drawn from a vocabulary
// of common API verbs and objects, so that postings are as long and as
// skewed as in a large real deployment.
func generatedCatalog(n int) *Catalog {
	verbs := strings.Fields("list get create update delete search archive export import sync move copy " +
		"share send read write run cancel approve assign close open merge upload download")
	objects := strings.Fields("user team project issue ticket comment file folder document page message channel " +
		"invoice payment customer order product subscription event calendar email label report dashboard " +
		"deployment pod service bucket object table query record contact deal task note repository branch")
	adjectives := strings.Fields("recent active archived shared private public pending failed draft scheduled")
	params := strings.Fields("id name query limit cursor owner status since until path content title body " +
		"email channel_id project_key page_size sort order filter format region")
	r := rand.New(rand.NewPCG(42, 7))
	pick := func(s []string) string { return s[r.IntN(len(s))] }

	tools := make([]Tool, 0, n)
	for i := range n {
		server := fmt.Sprintf("server%02d", i/100)
		verb, obj := pick(verbs), pick(objects)
		name := fmt.Sprintf("%s_%s", verb, obj)
		if r.IntN(3) == 0 {
			name += "_" + pick(adjectives)
		}
		name = fmt.Sprintf("%s_%d", name, i) // unique within the server
		desc := fmt.Sprintf("%s a %s %s in the %s. Returns the %s with its %s and %s. Use %s to narrow the results.",
			strings.ToUpper(verb[:1])+verb[1:], pick(adjectives), obj, server, obj, pick(params), pick(params), pick(params))
		props := make(map[string]any)
		for range 1 + r.IntN(5) {
			p := pick(params)
			props[p] = map[string]any{"type": "string", "description": fmt.Sprintf("The %s of the %s %s", p, pick(adjectives), obj)}
		}
		schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
		tools = append(tools, Tool{Server: server, Name: name, Description: desc, InputSchema: schema})
	}
	return New(tools)
}

func benchQueries() []string {
	return []string{
		"list open issues",
		"create a new invoice for a customer",
		"delete a file",
		"send a message to a channel",
		"search recent documents shared with me",
		"download the report as csv",
		"merge a branch into the repository",
		"get pod logs",
		"approve pending payment",
		"what subscriptions failed this month",
		"x",
		"upload a file to a bucket in a region",
	}
}

// BenchmarkSearch runs a mix of queries, from one rare word to eight common
// ones, over 5,000 generated tools.
func BenchmarkSearch(b *testing.B) {
	c := generatedCatalog(5000)
	queries := benchQueries()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		c.Search(Query{Text: queries[i%len(queries)]})
		i++
	}
}

// BenchmarkSearchServer is BenchmarkSearch restricted to one server.
func BenchmarkSearchServer(b *testing.B) {
	c := generatedCatalog(5000)
	queries := benchQueries()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		c.Search(Query{Text: queries[i%len(queries)], Server: "server07"})
		i++
	}
}

// BenchmarkSearchList lists a page of everything.
func BenchmarkSearchList(b *testing.B) {
	c := generatedCatalog(5000)
	b.ReportAllocs()
	for b.Loop() {
		c.Search(Query{Offset: 2000, Limit: 50})
	}
}

// BenchmarkNew builds the index of 10,000 tools, what a reconnecting server
// with a large tool list costs.
func BenchmarkNew(b *testing.B) {
	tools := generatedCatalog(10000).Tools()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		New(tools)
	}
}
