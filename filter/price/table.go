package price

import "strings"

// MaxModelLen bounds a model name: longer ones are unknown.
const MaxModelLen = 128

// Table is a price per model, and what a model not listed pays.
type Table struct {
	Unit Unit
	// Models by exact name; a name ending in '*' is a prefix (wild).
	Models map[string]*Prices
	wild   []wildPrice // the prefixes, longest first
	// Default is what a model not listed pays; nil when Refuse.
	Default *Prices
	// Refuse: a model not listed is refused (see Lookup).
	Refuse bool
	// ModelHeader is a request header naming the model; "" when none.
	ModelHeader string
	// Bound is, per kind, the dearest price of the table and default: a
	// request whose model is not known yet reserves at it.
	Bound Prices
	// Tiers are multipliers per service tier (in billionths: One is ×1),
	// of the whole response's cost; nil when none is set.
	Tiers map[string]uint64
	// topTier is the multiplier of a tier not listed: the largest of One
	// and Tiers'.
	topTier uint64
}

// MaxTierLen bounds a service tier's name: a longer one is not listed.
const MaxTierLen = 32

// Multiplier is what a response's cost is multiplied by, in billionths,
// for the service tier it names: the tier's, when listed; One when it
// names none ("") or the base tier ("default" at OpenAI, "standard" at
// Anthropic) not listed; else, for a tier not listed or one the response
// did not name clearly (known false), the largest of One and the
// listed multipliers: never the cheapest guess.
func (t *Table) Multiplier(tier string, known bool) uint64 {
	if !known {
		return t.topTier
	}
	if m, ok := t.Tiers[tier]; ok {
		return m
	}
	if tier == "" || tier == "default" || tier == "standard" {
		return One
	}
	return t.topTier
}

type wildPrice struct {
	prefix string
	p      *Prices
}

// Seal readies t after Models and Default are set: the prefixes and the
// bound.
func (t *Table) Seal() {
	t.wild = t.wild[:0]
	t.Bound = Prices{}
	t.topTier = One
	for _, m := range t.Tiers {
		t.topTier = max(t.topTier, m)
	}
	if t.Default != nil {
		t.Bound = *t.Default
	}
	for name, p := range t.Models {
		if prefix, ok := strings.CutSuffix(name, "*"); ok {
			t.wild = append(t.wild, wildPrice{prefix, p})
		}
		for k := range Kinds {
			t.Bound[k] = max(t.Bound[k], p[k])
		}
	}
	// Longest first, then by name: one order whatever the map's.
	for i := 1; i < len(t.wild); i++ {
		for j := i; j > 0 && longer(t.wild[j].prefix, t.wild[j-1].prefix); j-- {
			t.wild[j], t.wild[j-1] = t.wild[j-1], t.wild[j]
		}
	}
}

func longer(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a < b
}

// Lookup finds a model's prices: its exact name, else the longest prefix
// ("gpt-4o-*" for "gpt-4o-2024-08-06"). ok is false when neither lists it.
func (t *Table) Lookup(model string) (p *Prices, ok bool) {
	if model == "" || len(model) > MaxModelLen {
		return nil, false
	}
	if p, ok := t.Models[model]; ok && !strings.HasSuffix(model, "*") {
		return p, true
	}
	for _, w := range t.wild {
		if strings.HasPrefix(model, w.prefix) {
			return w.p, true
		}
	}
	return nil, false
}

// Dearest raises p, per kind, to q's prices: a charge at the result is
// never below what either model's prices make of the same tokens.
func (p *Prices) Dearest(q *Prices) {
	for k := range Kinds {
		p[k] = max(p[k], q[k])
	}
}

// Price is what a model named by a request or a response pays: its own
// prices when listed, else the default; refused is true, and p nil, when
// the table refuses it. An empty name is no model: p nil, not refused.
func (t *Table) Price(model string) (p *Prices, refused bool) {
	if model == "" {
		return nil, false
	}
	if p, ok := t.Lookup(model); ok {
		return p, false
	}
	if t.Refuse {
		return nil, true
	}
	return t.Default, false
}
