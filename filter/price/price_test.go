package price

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParsePrice(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"2.50", 2_500_000_000, true},
		{"10", 10_000_000_000, true},
		{"0.075", 75_000_000, true},
		{"0.000000001", 1, true},
		{"0", 0, true},
		{"000012.5", 12_500_000_000, true},
		{"1000000", MaxPrice, true},
		{"1000000.000000000", MaxPrice, true},
		{"1000000.000000001", 0, false},
		{"1000001", 0, false},
		{"99999999999999999999999", 0, false},
		{"0.0000000001", 0, false},
		{"", 0, false}, {".5", 0, false}, {"5.", 0, false}, {"-1", 0, false}, {"1e3", 0, false},
		{"1.2.3", 0, false}, {" 1", 0, false}, {"+1", 0, false}, {"1,5", 0, false},
	} {
		got, err := ParsePrice(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePrice(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestParseUnit(t *testing.T) {
	for in, per := range map[string]uint64{"nano_usd": 1e9, "micro_usd": 1e6, "milli_eur": 1e3, "cent_usd": 100} {
		if u, err := ParseUnit(in); err != nil || u.Per != per || u.Name != in {
			t.Errorf("ParseUnit(%q) = %+v, %v; want per %d", in, u, err, per)
		}
	}
	for _, in := range []string{"usd", "micro_", "micro_USD", "micro_usdt", "kilo_usd", "micro-usd", ""} {
		if _, err := ParseUnit(in); err == nil {
			t.Errorf("ParseUnit(%q) accepted", in)
		}
	}
}

func mustPrices(t *testing.T, kv ...string) *Prices {
	t.Helper()
	var p Prices
	for i := 0; i < len(kv); i += 2 {
		n := slices.Index(KindNames[:], kv[i])
		v, err := ParsePrice(kv[i+1])
		if n < 0 || err != nil {
			t.Fatalf("%s: %q: %v", kv[i], kv[i+1], err)
		}
		p[n] = v
	}
	return &p
}

// Worked numbers: each rounded up once per response.
func TestCostWorkedNumbers(t *testing.T) {
	micro, _ := ParseUnit("micro_usd")
	cent, _ := ParseUnit("cent_usd")
	gpt4o := mustPrices(t, "input", "2.50", "cached_input", "1.25", "output", "10", "reasoning", "10")
	for _, tc := range []struct {
		name string
		u    Unit
		p    *Prices
		t    Tokens
		want int64
	}{
		{"1000 input tokens at $2.50/M: 2500 µ$", micro, gpt4o, Tokens{Input: 1000}, 2500},
		{"3 input tokens: 7.5 µ$, up to 8", micro, gpt4o, Tokens{Input: 3}, 8},
		{"1 cached token: 1.25 µ$, up to 2", micro, gpt4o, Tokens{Cached: 1}, 2},
		{"mixed: 800×2.5 + 200×1.25 + 300×10 + 50×10 = 5750", micro, gpt4o, Tokens{Input: 800, Cached: 200, Output: 300, Reasoning: 50}, 5750},
		{"one input and one cached: 3.75, rounded once to 4 (not 3+2)", micro, gpt4o, Tokens{Input: 1, Cached: 1}, 4},
		{"no tokens cost nothing", micro, gpt4o, Tokens{}, 0},
		{"negative counts count as 0", micro, gpt4o, Tokens{Input: -5, Output: 1}, 10},
		{"in cents: 1M output tokens at $10 = 1000 cents", cent, gpt4o, Tokens{Output: 1_000_000}, 1000},
		{"in cents: 1 token is a fraction, charged 1", cent, gpt4o, Tokens{Output: 1}, 1},
		{"the largest counts at the largest price saturate", Unit{Per: 1e9}, &Prices{MaxPrice, MaxPrice, MaxPrice, MaxPrice, MaxPrice},
			Tokens{math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64}, math.MaxInt64},
	} {
		if got := Cost(tc.u, tc.p, &tc.t); got != tc.want {
			t.Errorf("%s: got %d", tc.name, got)
		}
	}
	// The estimate: input at the dearer of input and cache_write, output at
	// the dearer of output and reasoning.
	claude := mustPrices(t, "input", "3", "cached_input", "0.30", "cache_write", "3.75", "output", "15")
	if got := Estimate(micro, claude, 1000, 100); got != 1000*375/100+100*15 {
		t.Errorf("Estimate = %d, want 5250", got)
	}
}

// Cost agrees with the big-integer model on random prices and counts, from
// the smallest to the largest.
func TestCostAgreesWithBigModel(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 8))
	pick := picker(r)
	for i := range 200000 {
		var p Prices
		var tk Tokens
		for k := range Kinds {
			p[k] = pick(MaxPrice)
			tk[k] = int64(pick(1 << uint(r.IntN(64))))
			if r.IntN(8) == 0 {
				tk[k] = -tk[k]
			}
		}
		u := testUnits[r.IntN(len(testUnits))]
		if got, want := Cost(u, &p, &tk), bigCostAt(u, &p, &tk, One); got != want {
			t.Fatalf("case %d: Cost(%d, %v, %v) = %d, the model %d", i, u.Per, p, tk, got, want)
		}
	}
}

// A price printed with 9 decimals reads back as the same integer.
func TestParsePriceRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		v := r.Uint64N(MaxPrice + 1)
		s := strconv.FormatUint(v/1e9, 10) + "." + strconv.FormatUint(1e9+v%1e9, 10)[1:]
		if got, err := ParsePrice(s); err != nil || got != v {
			t.Fatalf("ParsePrice(%q) = %d, %v; want %d", s, got, err, v)
		}
	}
}

func TestLookup(t *testing.T) {
	a, b, c, d := &Prices{1}, &Prices{2}, &Prices{3}, &Prices{4}
	tb := &Table{Models: map[string]*Prices{"gpt-4o": a, "gpt-4o-*": b, "gpt-4o-mini*": c}, Default: d}
	tb.Seal()
	for model, want := range map[string]*Prices{
		"gpt-4o": a, "gpt-4o-2024-08-06": b, "gpt-4o-mini": c, "gpt-4o-mini-2024-07-18": c, "gpt-4o-*": b,
	} {
		if got, ok := tb.Lookup(model); !ok || got != want {
			t.Errorf("Lookup(%q) = %v, %v", model, got, ok)
		}
	}
	for _, model := range []string{"", "gpt-4", "claude", strings.Repeat("gpt-4o-", 20)} {
		if _, ok := tb.Lookup(model); ok {
			t.Errorf("Lookup(%q) found a price", model)
		}
	}
	if p, r := tb.Price("gpt-4o-mini"); p != c || r {
		t.Errorf("Price(gpt-4o-mini) = %v, %t; want its own", p, r)
	}
	if p, r := tb.Price("o3"); p != d || r {
		t.Errorf("Price(o3) = %v, %t; want the default", p, r)
	}
	if p, r := tb.Price(""); p != nil || r {
		t.Errorf("Price(\"\") = %v, %t; want no model", p, r)
	}
	if tb.Bound != (Prices{4}) {
		t.Errorf("Bound = %v, want the dearest per kind", tb.Bound)
	}
	tb.Default, tb.Refuse = nil, true
	tb.Seal()
	if p, r := tb.Price("o3"); p != nil || !r {
		t.Errorf("under refuse, Price(o3) = %v, %t; want refused", p, r)
	}
	p := Prices{1, 5, 0, 2}
	p.Dearest(&Prices{3, 4, 0, 2, 9})
	if p != (Prices{3, 5, 0, 2, 9}) {
		t.Errorf("Dearest = %v, want the larger price per kind", p)
	}
}
