package pii

// ahoCorasick finds every occurrence of a set of ASCII keywords in one pass
// over a text (Aho and Corasick, 1975), so that the secret rules run only
// where one of their keywords is. It is read-only once built.
type ahoCorasick struct {
	next [][128]int32 // state -> byte -> state (a full automaton: no failure links at search time)
	out  [][]int      // state -> indexes of the keywords that end there
	lens []int        // keyword index -> its length
}

func newAhoCorasick(keywords []string) *ahoCorasick {
	ac := &ahoCorasick{next: make([][128]int32, 1), out: make([][]int, 1)}
	for i := range ac.next[0] {
		ac.next[0][i] = -1
	}
	for ki, k := range keywords {
		ac.lens = append(ac.lens, len(k))
		st := int32(0)
		for i := 0; i < len(k); i++ {
			c := k[i] & 0x7f
			if ac.next[st][c] < 0 {
				ac.next = append(ac.next, [128]int32{})
				ac.out = append(ac.out, nil)
				n := int32(len(ac.next) - 1)
				for j := range ac.next[n] {
					ac.next[n][j] = -1
				}
				ac.next[st][c] = n
			}
			st = ac.next[st][c]
		}
		ac.out[st] = append(ac.out[st], ki)
	}
	// Breadth-first: each state's failure is the longest proper suffix
	// that is a state; missing transitions take the failure's.
	fail := make([]int32, len(ac.next))
	var queue []int32
	for c := range ac.next[0] {
		if n := ac.next[0][c]; n >= 0 {
			fail[n] = 0
			queue = append(queue, n)
		} else {
			ac.next[0][c] = 0
		}
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		for c := range ac.next[st] {
			n := ac.next[st][c]
			if n < 0 {
				ac.next[st][c] = ac.next[fail[st]][c]
				continue
			}
			fail[n] = ac.next[fail[st]][c]
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
		st = ac.next[st][c]
		for _, k := range ac.out[st] {
			f(k, i+1-ac.lens[k])
		}
	}
}
