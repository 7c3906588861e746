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
	Input      = iota // input tokens, neither cached nor written to a cache
	Cached            // input tokens read from a cache
	CacheWrite        // input tokens written to a cache (Anthropic)
	Output            // output tokens, reasoning aside
	Reasoning         // reasoning (thinking) tokens, when counted apart
	Kinds
)

// KindNames are the configuration's names of the kinds, in their order.
var KindNames = [Kinds]string{"input", "cached_input", "cache_write", "output", "reasoning"}

// Tokens counts a response's tokens, per kind.
type Tokens [Kinds]int64

// Prices are one model's prices per kind, in 10^-9 of the currency per
// million tokens ("2.50" is 2,500,000,000).
type Prices [Kinds]uint64

// MaxPrice is the largest price: 1,000,000 of the currency per million
// tokens, in nano units.
const MaxPrice = 1_000_000 * 1_000_000_000

// fracDigits is how many decimals a price may have.
const fracDigits = 9

// ParsePrice reads a decimal string such as "2.50", "10" or "0.075": at
// most 9 decimals, from 0 to 1,000,000.
func ParsePrice(s string) (uint64, error) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || dot && (frac == "" || len(frac) > fracDigits) {
		return 0, errors.New(`must be a decimal such as "2.50": at most 9 decimals, from 0 to 1000000`)
	}
	var v uint64
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if c < '0' || c > '9' {
			return 0, errors.New(`must be a decimal such as "2.50"`)
		}
		if v = v*10 + uint64(c-'0'); v > MaxPrice/1_000_000_000 {
			return 0, errors.New("must be at most 1000000 per million tokens")
		}
	}
	for i := 0; i < fracDigits; i++ {
		v *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, errors.New(`must be a decimal such as "2.50"`)
			}
			v += uint64(c - '0')
		}
	}
	if v > MaxPrice {
		return 0, errors.New("must be at most 1000000 per million tokens")
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
func Cost(u Unit, p *Prices, t *Tokens) int64 {
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
	d := u.divisor()
	if hi >= d { // the quotient needs more than 64 bits
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, d)
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// Estimate is what a request reserves: in input tokens at the dearer of
// the input and cache-write prices, and out output tokens at the dearer of
// the output and reasoning prices, rounded up. It is never less than what
// those tokens cost, however they split.
func Estimate(u Unit, p *Prices, in, out int64) int64 {
	var e Prices
	e[Input] = max(p[Input], p[CacheWrite], p[Cached])
	e[Output] = max(p[Output], p[Reasoning])
	return Cost(u, &e, &Tokens{Input: in, Output: out})
}
