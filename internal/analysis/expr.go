package analysis

import (
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"
)

// Limits of a derive expression: a recursive-descent parser must not recurse
// without bound on input from a caller.
const (
	maxExprLen   = 4096
	maxExprDepth = 100
)

// expr is a parsed arithmetic expression.
type expr interface {
	// eval is the numeric value over row; ok is false for null.
	eval(row map[string]any) (number, bool)
}

type (
	numLit  struct{ n number }
	fieldEx struct{ p path }
	signEx  struct {
		x   expr
		neg bool
	}
	binEx struct {
		op   byte
		l, r expr
	}
)

func (e numLit) eval(map[string]any) (number, bool) { return e.n, true }

func (e fieldEx) eval(row map[string]any) (number, bool) {
	v, _ := e.p.get(row)
	return asNumber(v, true)
}

func (e signEx) eval(row map[string]any) (number, bool) {
	n, ok := e.x.eval(row)
	if !ok || !e.neg {
		return n, ok
	}
	if n.isInt {
		if n.i == math.MinInt64 {
			return floatNum(-float64(n.i)), true
		}
		return intNum(-n.i), true
	}
	return floatNum(-n.f), true
}

func (e binEx) eval(row map[string]any) (number, bool) {
	a, ok := e.l.eval(row)
	if !ok {
		return a, false
	}
	b, ok := e.r.eval(row)
	if !ok {
		return b, false
	}
	if a.isInt && b.isInt {
		switch e.op {
		case '+':
			if s, over := addInt64(a.i, b.i); !over {
				return intNum(s), true
			}
		case '-':
			if b.i != math.MinInt64 {
				if s, over := addInt64(a.i, -b.i); !over {
					return intNum(s), true
				}
			}
		case '*':
			if p, over := mulInt64(a.i, b.i); !over {
				return intNum(p), true
			}
		case '/':
			if b.i == 0 {
				return number{}, false
			}
			if b.i != -1 && a.i%b.i == 0 {
				return intNum(a.i / b.i), true
			}
		}
	}
	x, y := a.float(), b.float()
	var r float64
	switch e.op {
	case '+':
		r = x + y
	case '-':
		r = x - y
	case '*':
		r = x * y
	case '/':
		if y == 0 {
			return number{}, false
		}
		r = x / y
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return number{}, false
	}
	return floatNum(r), true
}

// parseExpr parses an arithmetic expression:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = ("-" | "+") unary | primary
//	primary = number | name | "(" expr ")"
func parseExpr(src string) (expr, error) {
	if len(src) > maxExprLen {
		return nil, fmt.Errorf("is %d bytes long; the limit is %d", len(src), maxExprLen)
	}
	p := &parser{src: src}
	p.next()
	e, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok != tokEOF {
		return nil, p.errorf("unexpected %s", p.describe())
	}
	return e, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokName
	tokOp // + - * / ( )
	tokBad
)

type parser struct {
	src  string
	pos  int // of the next unread byte
	tok  tokKind
	text string
	at   int // where tok starts
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.at, fmt.Sprintf(format, args...))
}

func (p *parser) describe() string {
	switch p.tok {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return "number " + p.text
	case tokName:
		return "name " + p.text
	case tokBad:
		return fmt.Sprintf("character %q", p.text)
	}
	return fmt.Sprintf("%q", p.text)
}

func (p *parser) next() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		p.pos++
	}
	p.at = p.pos
	if p.pos == len(p.src) {
		p.tok, p.text = tokEOF, ""
		return
	}
	c := p.src[p.pos]
	switch {
	case c >= '0' && c <= '9' || c == '.' && p.pos+1 < len(p.src) && isDigit(p.src[p.pos+1]):
		p.number()
	case c == '+' || c == '-' || c == '*' || c == '/' || c == '(' || c == ')':
		p.pos++
		p.tok, p.text = tokOp, string(c)
	default:
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		if r != '_' && !unicode.IsLetter(r) {
			p.pos += size
			p.tok, p.text = tokBad, string(r)
			return
		}
		for p.pos < len(p.src) {
			r, size := utf8.DecodeRuneInString(p.src[p.pos:])
			if r != '_' && r != '.' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			p.pos += size
		}
		p.tok, p.text = tokName, p.src[p.at:p.pos]
	}
}

func (p *parser) number() {
	s := p.src
	for p.pos < len(s) && isDigit(s[p.pos]) {
		p.pos++
	}
	if p.pos < len(s) && s[p.pos] == '.' {
		p.pos++
		for p.pos < len(s) && isDigit(s[p.pos]) {
			p.pos++
		}
	}
	if p.pos < len(s) && (s[p.pos] == 'e' || s[p.pos] == 'E') {
		q := p.pos + 1
		if q < len(s) && (s[q] == '+' || s[q] == '-') {
			q++
		}
		if q < len(s) && isDigit(s[q]) {
			for q < len(s) && isDigit(s[q]) {
				q++
			}
			p.pos = q
		}
	}
	p.tok, p.text = tokNum, s[p.at:p.pos]
}

func (p *parser) expr(depth int) (expr, error) {
	l, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for p.tok == tokOp && (p.text == "+" || p.text == "-") {
		op := p.text[0]
		p.next()
		r, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		l = binEx{op: op, l: l, r: r}
	}
	return l, nil
}

func (p *parser) term(depth int) (expr, error) {
	l, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for p.tok == tokOp && (p.text == "*" || p.text == "/") {
		op := p.text[0]
		p.next()
		r, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		l = binEx{op: op, l: l, r: r}
	}
	return l, nil
}

func (p *parser) unary(depth int) (expr, error) {
	if depth > maxExprDepth {
		return nil, p.errorf("nested more than %d deep", maxExprDepth)
	}
	if p.tok == tokOp && (p.text == "-" || p.text == "+") {
		neg := p.text == "-"
		p.next()
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return signEx{x: x, neg: neg}, nil
	}
	return p.primary(depth)
}

func (p *parser) primary(depth int) (expr, error) {
	switch p.tok {
	case tokNum:
		n, ok := parseNumber(p.text)
		if !ok || !n.isInt && (math.IsInf(n.f, 0) || math.IsNaN(n.f)) {
			return nil, p.errorf("%s is not a finite number", p.text)
		}
		p.next()
		return numLit{n}, nil
	case tokName:
		e := fieldEx{newPath(p.text)}
		p.next()
		return e, nil
	case tokOp:
		if p.text == "(" {
			p.next()
			e, err := p.expr(depth + 1)
			if err != nil {
				return nil, err
			}
			if p.tok != tokOp || p.text != ")" {
				return nil, p.errorf("expected ) but found %s", p.describe())
			}
			p.next()
			return e, nil
		}
	case tokBad:
		return nil, p.errorf("unexpected %s; an expression holds numbers, field names, + - * / and parentheses", p.describe())
	}
	return nil, p.errorf("expected a number, a field name or ( but found %s", p.describe())
}
