package price

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigCostAt is the model of CostAt: the exact rational, rounded up, in big
// integers, capped at the largest int64.
func bigCostAt(u Unit, p *Prices, t *Tokens, mult uint64) int64 {
	sum := new(big.Int)
	for k := range Kinds {
		if t[k] > 0 {
			sum.Add(sum, new(big.Int).Mul(big.NewInt(t[k]), new(big.Int).SetUint64(p[k])))
		}
	}
	if sum.BitLen() > 128 { // Cost's sum saturates past 128 bits
		return math.MaxInt64
	}
	sum.Mul(sum, new(big.Int).SetUint64(u.Per))
	sum.Mul(sum, new(big.Int).SetUint64(mult))
	den := new(big.Int).Mul(big.NewInt(1_000_000_000_000_000), big.NewInt(One))
	q, r := new(big.Int).QuoRem(sum, den, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

// testUnits are the units the model tests draw from.
var testUnits = []Unit{{Per: 1e9}, {Per: 1e6}, {Per: 1e3}, {Per: 100}}

// picker draws a value from 0 to max, its edges often: 0, below 1000,
// max itself, or any.
func picker(r *rand.Rand) func(max uint64) uint64 {
	return func(max uint64) uint64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.Uint64N(1000)
		case 2:
			return max
		}
		return r.Uint64N(max + 1)
	}
}

// CostAt agrees with the big-integer model on random prices, counts and
// multipliers, from the smallest to the largest.
func TestCostAtAgreesWithBigModel(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 3))
	pick := picker(r)
	for i := range 100000 {
		var p Prices
		var tk Tokens
		for k := range Kinds {
			p[k] = pick(MaxPrice * requestScale)
			tk[k] = int64(pick(1 << uint(r.IntN(64))))
		}
		u := testUnits[r.IntN(len(testUnits))]
		mult := max(pick(MaxMultiplier), 1)
		if got, want := CostAt(u, &p, &tk, mult), bigCostAt(u, &p, &tk, mult); got != want {
			t.Fatalf("case %d: CostAt(%d, %v, %v, %d) = %d, the model %d", i, u.Per, p, tk, mult, got, want)
		}
	}
}

// Worked numbers for the new kinds and the multiplier.
func TestCostKindsAndTiers(t *testing.T) {
	micro, _ := ParseUnit("micro_usd")
	search, err := ParseRequestPrice("10") // US$10 per 1000 searches
	if err != nil || search != 10_000*One {
		t.Fatalf("ParseRequestPrice(10) = %d, %v", search, err)
	}
	claude := mustPrices(t, "input", "3", "cache_write", "3.75", "cache_write_1h", "6", "output", "15")
	claude[WebSearch] = search
	half, _ := ParseMultiplier("0.5")
	double, _ := ParseMultiplier("2")
	third, _ := ParseMultiplier("0.333333333")
	for _, tc := range []struct {
		name string
		t    Tokens
		mult uint64
		want int64
	}{
		{"3 web searches at $10/1000: 30000 µ$", Tokens{WebSearch: 3}, One, 30_000},
		{"1 web search: 10000 µ$", Tokens{WebSearch: 1}, One, 10_000},
		{"1000 5m writes at 3.75 + 1000 1h writes at 6: 9750", Tokens{CacheWrite: 1000, CacheWrite1h: 1000}, One, 9_750},
		{"1000 output at flex (×0.5): 7500", Tokens{Output: 1000}, half, 7_500},
		{"1000 output at priority (×2): 30000", Tokens{Output: 1000}, double, 30_000},
		{"1 input at ×0.5: 1.5, rounded once to 2", Tokens{Input: 1}, half, 2},
		{"3 input at ×0.333333333: 2.999999997, up to 3", Tokens{Input: 3}, third, 3},
		{"a search and a token at ×2: 20006", Tokens{WebSearch: 1, Input: 1}, double, 20_006},
	} {
		if got := CostAt(micro, claude, &tc.t, tc.mult); got != tc.want {
			t.Errorf("%s: got %d", tc.name, got)
		}
	}
	if got := Estimate(micro, claude, 1000, 0); got != 6000 {
		t.Errorf("Estimate of 1000 input tokens = %d, want 6000 (at the 1h write price)", got)
	}
}

func TestParseMultiplier(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"1", One}, {"0.5", One / 2}, {"2", 2 * One}, {"100", MaxMultiplier}, {"100.000000000", MaxMultiplier},
		{"0.000000001", 1}, {"0", 0}, {"0.0", 0}, {"100.000000001", 0}, {"101", 0}, {"-1", 0}, {"1e2", 0}, {"", 0}, {".5", 0},
	} {
		got, err := ParseMultiplier(tc.in)
		if (err == nil) != (tc.want != 0) || got != tc.want {
			t.Errorf("ParseMultiplier(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseRequestPrice("1000001"); err == nil {
		t.Error("ParseRequestPrice accepted 1000001")
	}
}

// A tier listed has its multiplier; none, or the base tier unlisted, ×1;
// any other, or an unclear one, the largest of 1 and those listed.
func TestMultiplier(t *testing.T) {
	tb := &Table{Models: map[string]*Prices{}, Tiers: map[string]uint64{"flex": One / 2, "priority": 2 * One}}
	tb.Seal()
	for _, tc := range []struct {
		tier  string
		known bool
		want  uint64
	}{
		{"flex", true, One / 2}, {"priority", true, 2 * One}, {"", true, One}, {"default", true, One}, {"standard", true, One},
		{"scale", true, 2 * One}, {"batch", true, 2 * One}, {"Flex", true, 2 * One}, {"flex", false, 2 * One}, {"", false, 2 * One},
	} {
		if got := tb.Multiplier(tc.tier, tc.known); got != tc.want {
			t.Errorf("Multiplier(%q, %v) = %d, want %d", tc.tier, tc.known, got, tc.want)
		}
	}
	cheap := &Table{Tiers: map[string]uint64{"flex": One / 2, "default": One / 4}}
	cheap.Seal()
	if cheap.Multiplier("scale", true) != One || cheap.Multiplier("default", true) != One/4 {
		t.Error("with only cheaper tiers listed, an unknown tier pays ×1; a listed default pays its own")
	}
	none := &Table{}
	none.Seal()
	if none.Multiplier("priority", true) != One || none.Multiplier("", false) != One {
		t.Error("without tiers, every response pays ×1")
	}
}
