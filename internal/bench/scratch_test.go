package bench

import (
	"strings"
	"testing"
	"time"
)

func TestScratchTok(t *testing.T) {
	tk, err := NewTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hello world", "tiktoken is great!"} {
		t.Log(s, tk.Encode(s))
	}
	big := strings.Repeat(`{"id":"C00001","name":"Ada Lovelace","email":"ada@example.com","country":"GB","plan":"pro","mrr":123.45},`, 10000)
	start := time.Now()
	n := tk.Count(big)
	t.Log(len(big), n, time.Since(start))
}
