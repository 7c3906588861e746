// Package price turns an LLM response's tokens into money, exactly: prices
// are decimal strings per million tokens, held as integers of 10^-9 of the
// currency per million tokens, and a cost is one integer in a configured
// unit (micro-dollars, say), rounded up once per response. No floating
// point: the sum of tokens × price is taken in 128 bits.
//
// With "unit": "micro_usd" and "input": "2.50" (US$2.50 per million input
// tokens), 1,000 input tokens cost 1,000 × 2.50 / 10^6 dollars = 2,500
// micro-dollars; 3 tokens cost 7.5, charged 8.
package price

import (
	"errors"
	"math"
	"math/bits"
	"strings"
)

// Kinds of tokens, each with its own price. Their counts are disjoint:
// package usage takes cached tokens out of the input and reasoning tokens
// out of the output where an API counts them inside (OpenAI's).
const (
	Input        = iota // input tokens, neither cached nor written to a cache
	Cached              // input tokens read from a cache
	CacheWrite          // input tokens written to a cache (Anthropic's 5-minute writes)
	CacheWrite1h        // input tokens written to a 1-hour cache (Anthropic)
	Output              // output tokens, reasoning aside
	Reasoning           // reasoning (thinking) tokens, when counted apart
	WebSearch           // server web search requests (Anthropic), priced per 1000
	WebFetch            // server web fetch requests (Anthropic), priced per 1000
	Kinds
)

// KindNames are the configuration's names of the kinds, in their order.
var KindNames = [Kinds]string{"input", "cached_input", "cache_write", "cache_write_1h", "output", "reasoning", "web_search", "web_fetch"}

// PerRequest reports whether kind k counts requests, priced per 1000
// requests, rather than tokens, priced per million.
func PerRequest(k int) bool { return k == WebSearch || k == WebFetch }

// requestScale turns a price per 1000 requests into one per million: the
// table holds every kind per million, so Cost treats them alike.
const requestScale = 1000

// Tokens counts a response's tokens, per kind.
type Tokens [Kinds]int64

// Prices are one model's prices per kind, in 10^-9 of the currency per
// million tokens ("2.50" is 2,500,000,000), or per million requests for
// the PerRequest kinds ("10" per 1000 searches is 10,000,000,000,000).
type Prices [Kinds]uint64

// MaxPrice is the largest price: 1,000,000 of the currency per million
// tokens, in nano units.
const MaxPrice = 1_000_000 * 1_000_000_000

// fracDigits is how many decimals a price or a multiplier may have.
const fracDigits = 9

// One is a multiplier of 1 (Table.Multiplier), in billionths.
const One = 1_000_000_000

// ParsePrice reads a decimal string such as "2.50", "10" or "0.075": at
// most 9 decimals, from 0 to 1,000,000.
func ParsePrice(s string) (uint64, error) {
	v, err := parseNano(s, MaxPrice/One)
	switch err {
	case errSyntax:
		if whole, frac, dot := strings.Cut(s, "."); whole == "" || dot && (frac == "" || len(frac) > fracDigits) {
			return 0, errors.New(`must be a decimal such as "2.50": at most 9 decimals, from 0 to 1000000`)
		}
		return 0, errors.New(`must be a decimal such as "2.50"`)
	case errRange:
		return 0, errors.New("must be at most 1000000 per million tokens")
	}
	return v, nil
}

// ParseRequestPrice reads a price per 1000 requests, as ParsePrice reads
// one per million tokens, and returns it per million requests: "10" (US$10
// per 1000 web searches, Anthropic's) is 10,000 × 10^9.
func ParseRequestPrice(s string) (uint64, error) {
	v, err := parseNano(s, MaxPrice/One)
	switch err {
	case errSyntax:
		return 0, errors.New(`must be a decimal such as "10": at most 9 decimals, from 0 to 1000000 per 1000 requests`)
	case errRange:
		return 0, errors.New("must be at most 1000000 per 1000 requests")
	}
	return v * requestScale, nil
}

var (
	errSyntax = errors.New("syntax")
	errRange  = errors.New("range")
)

// parseNano reads a decimal of at most 9 decimals, from 0 to maxWhole, in
// billionths: "2.50" is 2,500,000,000. It never overflows: maxWhole ×
// 10^9 must fit in 64 bits.
func parseNano(s string, maxWhole uint64) (uint64, error) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || dot && (frac == "" || len(frac) > fracDigits) {
		return 0, errSyntax
	}
	var v uint64
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if c < '0' || c > '9' {
			return 0, errSyntax
		}
		if v = v*10 + uint64(c-'0'); v > maxWhole {
			return 0, errRange
		}
	}
	for i := 0; i < fracDigits; i++ {
		v *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, errSyntax
			}
			v += uint64(c - '0')
		}
	}
	if v > maxWhole*One {
		return 0, errRange
	}
	return v, nil
}

// Unit is what a cost counts: Per is how many of it make one of the
// currency (10^6 for micro_usd).
type Unit struct {
	Name string
	Per  uint64
}

// divisor is what the sum of tokens × nano-prices is divided by to give
// units: 10^6 tokens × 10^9 nanos = 10^15 per currency, over Per.
func (u Unit) divisor() uint64 { return 1_000_000_000_000_000 / u.Per }

var scales = []struct {
	prefix string
	per    uint64
}{{"nano_", 1_000_000_000}, {"micro_", 1_000_000}, {"milli_", 1_000}, {"cent_", 100}}

// ParseUnit reads a unit such as "micro_usd": nano_, micro_, milli_ or
// cent_, then a currency of 3 lowercase letters, a label only.
func ParseUnit(s string) (Unit, error) {
	for _, sc := range scales {
		cur, ok := strings.CutPrefix(s, sc.prefix)
		if ok && len(cur) == 3 && isLower(cur) {
			return Unit{Name: s, Per: sc.per}, nil
		}
	}
	return Unit{}, errors.New(`must be nano_, micro_, milli_ or cent_ then a currency, such as "micro_usd"`)
}

func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// Cost is what the tokens cost at these prices, in u, rounded up: the
// exact sum of tokens × price, divided once. Negative counts count as 0;
// a cost beyond the largest int64 is the largest int64.
func Cost(u Unit, p *Prices, t *Tokens) int64 { return CostAt(u, p, t, One) }

// CostAt is Cost times a multiplier in billionths (One is ×1, 500,000,000
// ×0.5; Table.Multiplier), still exact and rounded up once: the sum of
// tokens × price (128 bits) times the multiplier (192 bits) is divided by
// the unit's divisor, then by 10^9.
func CostAt(u Unit, p *Prices, t *Tokens, mult uint64) int64 {
	var hi, lo uint64
	for k := range Kinds {
		if t[k] <= 0 || p[k] == 0 {
			continue
		}
		h, l := bits.Mul64(uint64(t[k]), p[k])
		var c uint64
		lo, c = bits.Add64(lo, l, 0)
		hi, c = bits.Add64(hi, h, c)
		if c != 0 {
			return math.MaxInt64
		}
	}
	// n = (hi, lo) × mult, in three words.
	a1, n0 := bits.Mul64(lo, mult)
	n2, b0 := bits.Mul64(hi, mult)
	n1, c := bits.Add64(a1, b0, 0)
	n2 += c
	// ceil(n / (d × 10^9)) = floor(floor(n/d) / 10^9), plus 1 when either
	// division leaves a remainder.
	n2, n1, n0, r1 := div192(n2, n1, n0, u.divisor())
	n2, n1, n0, r2 := div192(n2, n1, n0, One)
	if n2 != 0 || n1 != 0 || n0 >= math.MaxInt64 {
		return math.MaxInt64
	}
	if r1 != 0 || r2 != 0 {
		n0++
	}
	return int64(n0)
}

// div192 divides the 192-bit (n2, n1, n0) by d > 0: the quotient, and
// the remainder.
func div192(n2, n1, n0, d uint64) (q2, q1, q0, r uint64) {
	q2, r = bits.Div64(0, n2, d)
	q1, r = bits.Div64(r, n1, d)
	q0, r = bits.Div64(r, n0, d)
	return q2, q1, q0, r
}

// Estimate is what a request reserves: in input tokens at the dearest of
// the input, cached and cache-write prices, and out output tokens at the dearer of
// the output and reasoning prices, rounded up. It is never less than what
// those tokens cost, however they split.
func Estimate(u Unit, p *Prices, in, out int64) int64 {
	var e Prices
	e[Input] = max(p[Input], p[CacheWrite], p[CacheWrite1h], p[Cached])
	e[Output] = max(p[Output], p[Reasoning])
	return Cost(u, &e, &Tokens{Input: in, Output: out})
}

// MaxMultiplier is the largest service-tier multiplier: ×100.
const MaxMultiplier = 100 * One

// ParseMultiplier reads a service tier's multiplier, a decimal string such
// as "0.5" or "2": at most 9 decimals, more than 0, at most 100. It
// returns billionths: "0.5" is 500,000,000.
func ParseMultiplier(s string) (uint64, error) {
	v, err := parseNano(s, MaxMultiplier/One)
	if err != nil || v == 0 {
		return 0, errors.New(`must be a decimal multiplier such as "0.5": at most 9 decimals, more than 0, at most 100`)
	}
	return v, nil
}
