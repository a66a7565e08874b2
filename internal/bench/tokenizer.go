package bench

import (
	"fmt"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding is the BPE vocabulary transcripts are counted with: OpenAI's
// cl100k_base. Claude's tokenizer is not published; cl100k_base is a real,
// widely used byte-level BPE that splits JSON and prose at similar rates,
// and the figures that matter here are ratios.
const Encoding = "cl100k_base"

// setLoader points tiktoken at the vocabularies embedded in the binary. It
// is process-wide state in tiktoken, so it is set once; the offline loader
// serves every encoding the online one would, without the network.
var setLoader = sync.OnceFunc(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })

// Tokenizer counts cl100k_base tokens. It is safe for concurrent use.
type Tokenizer struct {
	enc *tiktoken.Tiktoken
}

// NewTokenizer loads the embedded cl100k_base vocabulary (about 100,000
// merges; it takes a fraction of a second).
func NewTokenizer() (*Tokenizer, error) {
	setLoader()
	enc, err := tiktoken.GetEncoding(Encoding)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", Encoding, err)
	}
	return &Tokenizer{enc: enc}, nil
}

// Encode returns the token ids of text. Special-token strings such as
// "<|endoftext|>" in text are encoded as ordinary text, as a chat API does
// with user content.
func (t *Tokenizer) Encode(text string) []int {
	return t.enc.EncodeOrdinary(text)
}

// Count returns the number of tokens of text.
func (t *Tokenizer) Count(text string) int {
	return len(t.Encode(text))
}
