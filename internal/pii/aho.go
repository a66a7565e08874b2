package pii

// ahoCorasick finds every occurrence of a set of ASCII keywords in one pass
// over a text (Aho and Corasick, 1975), so that the secret rules run only
// where one of their keywords is. It is read-only once built.
//
// Its transition table is full (no failure links at search time) but has
// a column per class of bytes, not per byte: bytes that appear in no
// keyword share class 0. gitleaks' stopwords make about 20,000 states, and
// 128 columns of them held 10 MB of the server's idle memory; their 40-odd
// distinct bytes hold a third of that.
type ahoCorasick struct {
	class [128]uint8 // byte -> its column
	width int32      // columns
	next  []int32    // state*width + column -> state
	out   [][]int    // state -> indexes of the keywords that end there
	lens  []int      // keyword index -> its length
}

func newAhoCorasick(keywords []string) *ahoCorasick {
	ac := &ahoCorasick{width: 1}
	for _, k := range keywords {
		for i := 0; i < len(k); i++ {
			if c := k[i] & 0x7f; ac.class[c] == 0 {
				ac.class[c] = uint8(ac.width)
				ac.width++
			}
		}
	}
	newState := func() int32 {
		for range ac.width {
			ac.next = append(ac.next, -1)
		}
		ac.out = append(ac.out, nil)
		return int32(len(ac.out) - 1)
	}
	newState() // the root
	for ki, k := range keywords {
		ac.lens = append(ac.lens, len(k))
		st := int32(0)
		for i := 0; i < len(k); i++ {
			at := st*ac.width + int32(ac.class[k[i]&0x7f])
			if ac.next[at] < 0 {
				n := newState()
				ac.next[at] = n
			}
			st = ac.next[at]
		}
		ac.out[st] = append(ac.out[st], ki)
	}
	// Breadth-first: each state's failure is the longest proper suffix
	// that is a state; missing transitions take the failure's.
	fail := make([]int32, len(ac.out))
	var queue []int32
	for c := range ac.width {
		if n := ac.next[c]; n >= 0 {
			fail[n] = 0
			queue = append(queue, n)
		} else {
			ac.next[c] = 0
		}
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		for c := range ac.width {
			n := ac.next[st*ac.width+c]
			if n < 0 {
				ac.next[st*ac.width+c] = ac.next[fail[st]*ac.width+c]
				continue
			}
			fail[n] = ac.next[fail[st]*ac.width+c]
			ac.out[n] = append(ac.out[n], ac.out[fail[n]]...)
			queue = append(queue, n)
		}
	}
	return ac
}

// each calls f with the keyword index and the start of every occurrence in
// text. Bytes outside ASCII never match.
func (ac *ahoCorasick) each(text string, f func(keyword, start int)) {
	st := int32(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 0x80 {
			st = 0
			continue
		}
		st = ac.next[st*ac.width+int32(ac.class[c])]
		for _, k := range ac.out[st] {
			f(k, i+1-ac.lens[k])
		}
	}
}
