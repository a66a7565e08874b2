package pii

import (
	"strings"
	"testing"
)

// benchText is about 1 MiB of log-like output with some personal data in it.
func benchText() string {
	var b strings.Builder
	lines := []string{
		"2024-03-12 09:05:00 INFO worker: processing order 4419-2201-77 for customer anna.k@icloud.com",
		"2024-03-12 09:05:01 INFO search: query \"isbn 978-0-306-40615-7\" took 12ms, cache hit ratio 0.93",
		"{\"id\": 12345, \"name\": \"Jane Doe\", \"phone\": \"+44 20 7946 0958\", \"city\": \"London\", \"amount\": 1234.56}",
		"GET /api/v1/items?page=3&limit=50 200 41ms ip=203.0.113.7 ua=\"Mozilla/5.0 (X11; Linux x86_64)\"",
		"the quick brown fox jumps over the lazy dog 1234567890 times, then rests for 42 seconds at 10:30:45",
		"api_key=sk_live_4eC39HqLyjWDarjtT1zdp7dc token=[SECRET_3f9a2c] version 1.2.3 build 4567",
	}
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
	}
	return b.String()
}

func BenchmarkFind(b *testing.B) {
	d := mustNew(b, nil)
	text := benchText()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.Find(text)
	}
}

func BenchmarkFindPlain(b *testing.B) {
	d := mustNew(b, nil)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog and keeps running along the river bank\n", 12000)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.Find(text)
	}
}

func BenchmarkFindShort(b *testing.B) {
	d := mustNew(b, nil)
	text := "2024-03-12 09:05:00 INFO worker: processing order for customer anna.k@icloud.com"
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.Find(text)
	}
}
