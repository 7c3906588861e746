package filter

import (
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/hotkey"
)

// leaseTable is one leased rule's state in one VM: which of its keys are
// hot, and the units each hot key's lease holds.
//
// A hot key's request that finds no units asks Redis for a batch: the
// call decides the request's cost as ever (so it is exact), and when
// admitted takes up to batch units more, as many as every limit still
// admits (algorithms.Choice.Lease). The VM then admits the key's requests
// from those units, with no Redis call, until they run out or max_hold
// passes; what is left goes back in a settle. The batch is what the key's
// recent rate spends in max_hold, at most max_batch, so a lease lasts
// about max_hold; near the limit, Redis grants only what is left.
//
// When Redis denies a batch call, the key is overloaded: the VM holds its
// requests (429) until the Retry-After Redis gave, and asks for a whole
// batch at least from then on (the call's cost is the batch), so that a
// key far over its limit takes its units a batch per call instead of one;
// the units wait in Redis meanwhile. Other VMs wait for the same units, so
// each denial in a row doubles the hold, by at most max_hold more. It asks
// for its cost again once a grant leaves a batch in Redis.
type leaseTable struct {
	cfg     *config.Lease
	rule    int
	entries map[string]*leaseEntry
	order   []*leaseEntry // oldest first, for eviction
	sketch  hotkey.Sketch
}

// leaseEntry is one hot key's lease.
type leaseEntry struct {
	t    *leaseTable
	key  string // the rule's key
	tier int
	// units are left to spend of granted, recorded in Redis as rec,
	// until expires; granted 0: no lease held.
	units, granted int64
	rec            *leaseGrant
	expires        time.Time
	// v is the grant's tightest result, for the headers: its Remaining
	// was Redis's after the grant; resetAt when it was to reset.
	v       verdict
	resetAt time.Time
	// holdUntil: Redis denied a batch; hold is that denial.
	holdUntil  time.Time
	hold       verdict
	overloaded bool
	losses     int   // batch calls denied in a row
	pending    bool  // a batch call is out
	hits, rate int64 // requests this tick, and in the last
	gen        uint32
	gone       bool // evicted: a grant still coming goes back at once
}

// leaseGrant is a batch as Redis recorded it: taken at Redis time at (µs)
// on key in tier, weighing recorded units (a sliding log's one entry),
// less what was given back since.
type leaseGrant struct {
	key      string
	tier     int
	at       int64
	recorded int64
}

// leaseState is the lease step's state: one request's spends from leases.
type leaseState struct {
	uses []leaseUse
}

// leaseUse is a request's spend from a lease, given back if it is denied:
// to the lease while it lasts, else to Redis.
type leaseUse struct {
	e    *leaseEntry
	rec  *leaseGrant
	gen  uint32
	cost int64
}

// leaseAsk is a batch call's lease: its choice in the call, the request's
// cost and the entry it fills.
type leaseAsk struct {
	choice, tier int
	cost         int64
	e            *leaseEntry
}

func newLeaseTables(cfg *config.Config) []*leaseTable {
	var out []*leaseTable
	for ri := range cfg.Rules {
		l := cfg.Rules[ri].Lease
		if l == nil {
			continue
		}
		if out == nil {
			out = make([]*leaseTable, len(cfg.Rules))
		}
		out[ri] = &leaseTable{cfg: l, rule: ri, entries: map[string]*leaseEntry{}}
	}
	return out
}

// leaseOutcome is what a lease says of a request.
type leaseOutcome uint8

const (
	leaseNone  leaseOutcome = iota // not hot, or a batch is out: a plain call
	leaseSpent                     // admitted from the lease
	leaseHeld                      // held: Redis denied the last batch
	leaseAsked                     // the rule joins a call asking for a batch
)

// lease decides the rule's part of a request of cost on s.ruleKey, in the
// given tier, from the rule's lease table, and returns the key's entry
// unless it is cold.
func (s *Stream) lease(t *leaseTable, tier int, cost int64) (leaseOutcome, *leaseEntry) {
	e := t.entries[string(s.ruleKey)]
	if e == nil {
		n := t.sketch.Add(s.ruleKey)
		if n < t.cfg.HotRate {
			return leaseNone, nil
		}
		e = s.pol.addLease(t, string(s.ruleKey), tier)
		e.hits = n - 1 // this tick's, before this request
	}
	e.hits++
	now := s.clock()
	if e.tier != tier {
		s.pol.endLease(e)
		e.tier = tier
	}
	if e.granted > 0 && e.units >= cost && now.Before(e.expires) {
		e.units -= cost
		if s.leased == nil {
			s.leased = &leaseState{}
		}
		s.leased.uses = append(s.leased.uses, leaseUse{e: e, rec: e.rec, gen: e.gen, cost: cost})
		s.pol.leaseMetrics.local.Increment(1)
		return leaseSpent, e
	}
	if now.Before(e.holdUntil) {
		s.pol.leaseMetrics.held.Increment(1)
		return leaseHeld, e
	}
	if e.pending || cost > t.cfg.MaxBatch {
		return leaseNone, e // a batch never holds more than max_batch
	}
	s.pol.endLease(e)
	return leaseAsked, e
}

// batch is what e's next call asks for, the least and the most: the
// units its rate spends in max_hold, from cost to max_batch; the least is
// cost, or the batch while overloaded.
func (t *leaseTable) batch(e *leaseEntry, cost int64) (least, most int64) {
	rate := max(e.rate, e.hits)
	most = (rate*int64(t.cfg.MaxHold) + int64(time.Second) - 1) / int64(time.Second)
	most = max(cost, min(most, t.cfg.MaxBatch))
	if e.overloaded {
		return most, most
	}
	return cost, most
}

// addLeased adds the rule to a call asking for a batch for e's key.
func (s *Stream) addLeased(e *leaseEntry, ri, tier int, cost int64) {
	least, most := e.t.batch(e, cost)
	c := s.callFor(ri)
	s.addBlockKey(c, ri, cost, 0)
	ch := len(c.choices)
	from := len(c.choiceOrigins)
	s.addChoice(c, ri, tier, least, false)
	c.choices[ch].Lease = most
	for i := from; i < len(c.choiceOrigins); i++ {
		c.choiceOrigins[i].cost = cost
	}
	c.leases = append(c.leases, leaseAsk{choice: ch, tier: tier, cost: cost, e: e})
	e.pending = true
}

// noteLeased counts a spend from e's lease, and makes it part of the
// request's verdict and headers.
func (s *Stream) noteLeased(e *leaseEntry, ri int) {
	s.pol.metrics.rules[ri].allowed.Increment(1)
	s.enforced = append(s.enforced, enforcedRule{rule: ri, tier: e.v.tier})
	s.leaseVerdict(e)
}

// leaseVerdict makes e's lease the request's verdict when it is the
// tightest: the grant's result with the units the VM still holds.
func (s *Stream) leaseVerdict(e *leaseEntry) {
	v := e.v
	v.result.Remaining += e.units
	v.result.ResetAfter = max(0, e.resetAt.Sub(s.clock()))
	s.noteGrant(v)
}

// noteGrant makes v the request's verdict when it is the tightest.
func (s *Stream) noteGrant(v verdict) {
	if !s.hasVerdict || algorithms.Tighter(v.result, s.verdict.result) {
		s.verdict, s.hasVerdict = v, true
	}
}

// heldVerdict is the denial a held key answers with.
func (s *Stream) heldVerdict(e *leaseEntry) verdict {
	v := e.hold
	v.result.RetryAfter = e.holdUntil.Sub(s.clock())
	return v
}

// fillLeases fills each lease the stream's calls asked for, once: when
// the request is decided (an admitted request spends its cost from its
// batch), rejected before its calls went out, or ended before it was
// decided. A call still out is left to its detached reply.
func (s *Stream) fillLeases(admitted bool) {
	if !s.pol.steps.has(stepLease) {
		return
	}
	for _, c := range s.calls {
		if c.inFlight {
			continue
		}
		for _, a := range c.leases {
			if v, ok := s.pol.fillLease(c, a, admitted, s.clock()); ok {
				s.noteGrant(v)
			}
		}
		c.leases = c.leases[:0]
	}
}

// refundLeased gives a denied request's spends back: to their leases, or
// to Redis when the lease has ended meanwhile.
func (s *Stream) refundLeased() {
	if s.leased == nil {
		return
	}
	for _, u := range s.leased.uses {
		if u.e.gen == u.gen && !u.e.gone {
			u.e.units += u.cost
		} else {
			s.pol.giveBack(u.e.t, u.rec, u.cost)
		}
	}
	s.leased.uses = s.leased.uses[:0]
}

// fillLease stores what a batch call took in its entry, less the
// request's cost when it was admitted: a denied call holds the key until
// its Retry-After; a failed or unsent one, not at all. For an admitted
// grant it returns the verdict the request's headers show.
func (p *policy) fillLease(c *call, a leaseAsk, admitted bool, now time.Time) (verdict, bool) {
	e := a.e
	e.pending = false
	d := &c.decision
	if !c.replied || c.err != nil || c.inVM || d.Blocked || a.choice >= len(d.Granted) {
		return verdict{}, false
	}
	g := d.Granted[a.choice]
	v, denied := p.grantVerdict(c, a.choice)
	if g == 0 {
		if denied {
			e.overloaded, e.hold = true, v
			e.losses = min(e.losses+1, 4)
			wait := v.result.RetryAfter
			e.holdUntil = now.Add(wait + min(wait*(1<<(e.losses-1)-1), e.t.cfg.MaxHold))
		}
		return verdict{}, false
	}
	e.losses = 0
	p.leaseMetrics.grants.Increment(1)
	p.leaseMetrics.units.Increment(uint64(g))
	rec := &leaseGrant{key: e.key, tier: a.tier, at: d.Now, recorded: g}
	if admitted {
		g -= a.cost
	}
	if a.tier != e.tier || e.gone { // the key changed tier meanwhile, or left the table
		p.giveBack(e.t, rec, g)
		v.result.Remaining += g // back in Redis
		return v, admitted
	}
	e.gen++
	e.granted, e.units, e.rec = rec.recorded, g, rec
	e.expires, e.v, e.resetAt = now.Add(e.t.cfg.MaxHold), v, now.Add(v.result.ResetAfter)
	_, most := e.t.batch(e, a.cost)
	e.overloaded = e.overloaded && v.result.Remaining < most
	if e.overloaded {
		e.holdAfterBatch(v, most, now)
	}
	v.result.Remaining += e.units
	return v, admitted
}

// holdAfterBatch holds an overloaded key, once its batch is spent, until
// its tightest limit should have a whole batch again at its average rate
// (a funnel's exactly): asking sooner is a call Redis denies.
func (e *leaseEntry) holdAfterBatch(v verdict, most int64, now time.Time) {
	l := v.lim
	if l.Rate <= 0 || l.Period <= 0 {
		return
	}
	each := l.Period / time.Duration(l.Rate)
	e.hold = v
	e.hold.result.Allowed, e.hold.result.Remaining = false, 0
	e.holdUntil = now.Add(time.Duration(most-v.result.Remaining) * each)
}

// grantVerdict is the tightest result of a choice's positions, and
// whether one of them denied.
func (p *policy) grantVerdict(c *call, choice int) (verdict, bool) {
	var v verdict
	found, denied := false, false
	for i := len(c.checks); i < len(c.origins); i++ {
		o, r := &c.origins[i], c.decision.Results[i]
		if o.choice != choice || r.Unused() {
			continue
		}
		denied = denied || !r.Allowed
		if !found || algorithms.Tighter(r, v.result) {
			v = verdict{rule: o.rule, limit: o.limit, tier: o.tier, lim: o.picked, result: r, reason: reasonRateLimited}
			found = true
		}
	}
	return v, denied
}

// endLease gives back what e's lease did not spend, in one settle of
// each of its limits, and forgets the lease.
func (p *policy) endLease(e *leaseEntry) {
	if e.granted == 0 {
		return
	}
	left := e.units
	e.gen++
	e.granted, e.units = 0, 0
	p.giveBack(e.t, e.rec, left)
}

// giveBack settles left units of the batch rec back: each limit's record
// of it shrinks by left.
func (p *policy) giveBack(t *leaseTable, rec *leaseGrant, left int64) {
	if left <= 0 || rec == nil {
		return
	}
	p.leaseMetrics.returned.Increment(uint64(left))
	sc := p.newSettleCall()
	for i, l := range p.cfg.Rules[t.rule].TierLimits(rec.tier) {
		sc.settles = append(sc.settles, algorithms.Settle{Key: rec.key + ":" + strconv.Itoa(i), Limit: l.Limit, At: rec.at,
			Reserved: rec.recorded, Cost: rec.recorded - left})
		sc.rules = append(sc.rules, t.rule)
	}
	rec.recorded -= left
	sc.lease = true
	p.vm.settle(sc)
}

// fillDetachedLeases fills the leases of a call whose stream ended while
// it was out: the request took nothing, so a grant is all the lease's.
func (p *policy) fillDetachedLeases(c *call) {
	for _, a := range c.leases {
		p.fillLease(c, a, false, p.vm.host.Now())
	}
	c.leases = c.leases[:0]
}
