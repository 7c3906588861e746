package filter

import (
	"strconv"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
	"github.com/redisrate/envoy-redis-ratelimit/filter/usage"
)

// Costs in tokens and money: what a response_cost rule that counts usage
// reserves, what a response costs at its prices (package price), and what
// a response that carries no usage costs (the fallback "estimate").
//
// A priced rule never takes the cheapest guess: every model in sight (the
// model_header, the body's "model", the response's model) is priced, and
// the charge pays, per kind of token, the dearest of their prices. Under
// "refuse" a request naming a model not listed is refused; a response
// naming one is charged at the table's dearest prices (Table.Bound) and
// counted in model_unlisted.

// bytesPerToken is the request's size per input token a reservation
// assumes: JSON of English text runs about 4 bytes a token. The fallback
// "estimate" charges one token per byte instead: no byte-level tokenizer
// makes more tokens than bytes.
const bytesPerToken = 4

// reserveState is the reserve step's state: what one request's
// response_cost rules noted of it for their responses, and whether its
// chat stream's body is to ask for usage (include_usage.go).
type reserveState struct {
	estimates []reqEstimate
	askUsage  bool
}

// reserving is the stream's reserve state, made on first use.
func (s *Stream) reserving() *reserveState {
	if s.reserve == nil {
		s.reserve = &reserveState{}
	}
	return s.reserve
}

// reqEstimate is what a response_cost rule's request tells its response,
// copied at the request: its headers and body are gone by the response.
type reqEstimate struct {
	rule  int
	out   int64 // output tokens reserved: reserve's header, body or default
	bytes int64 // the request's size: the body read, else content-length
	// prices: per kind, the dearest prices of the models the request
	// names (a priced rule); named is false when it names none.
	prices price.Prices
	named  bool
}

// requestModel is the model the request names for t: its model_header,
// and the "model" of a request body a rule read; "" when absent.
func (s *Stream) requestModel(t *price.Table) (header, body string) {
	if t.ModelHeader != "" {
		header, _ = s.req.header(t.ModelHeader)
	}
	if v, ok := s.req.bodyString("model"); ok {
		body = v
	}
	return header, body
}

// noteEstimate keeps what rule ri's response will need of its request;
// for a priced rule, the dearest prices of the models the request names.
// It reports false when the table refuses one of them.
func (s *Stream) noteEstimate(ri int, rc *config.ResponseCost) (e *reqEstimate, ok bool) {
	e = s.estimateOf(ri)
	if e == nil {
		r := s.reserving()
		n := len(r.estimates)
		if n < cap(r.estimates) {
			r.estimates = r.estimates[:n+1]
		} else {
			r.estimates = append(r.estimates, reqEstimate{})
		}
		e = &r.estimates[n]
	}
	*e = reqEstimate{rule: ri, bytes: s.requestBytes()}
	if rc.Price == nil {
		return e, true
	}
	header, body := s.requestModel(rc.Price)
	ok = e.addModel(rc.Price, header)
	return e, e.addModel(rc.Price, body) && ok
}

// addModel raises e's prices to model's; false when t refuses it.
func (e *reqEstimate) addModel(t *price.Table, model string) bool {
	p, refused := t.Price(model)
	if p != nil {
		e.prices.Dearest(p)
		e.named = true
	}
	return !refused
}

// estimateOf is what rule ri's request noted; nil when none.
func (s *Stream) estimateOf(ri int) *reqEstimate {
	if s.reserve == nil {
		return nil
	}
	for i, e := range s.reserve.estimates {
		if e.rule == ri {
			return &s.reserve.estimates[i]
		}
	}
	return nil
}

// requestBytes is the request's size: the body read, else content-length;
// 0 when neither tells it.
func (s *Stream) requestBytes() int64 {
	if s.req.bodyLen > 0 {
		return int64(s.req.bodyLen)
	}
	if v, ok := s.req.header("content-length"); ok {
		n, _ := config.ParseCost(v)
		return n
	}
	return 0
}

// reservation is what a response_cost rule reserves for e.out output
// tokens: with usage, the request's input tokens too (its size over
// bytesPerToken, rounded up), at the prices of the models it names, else
// at the table's dearest.
func reservation(rc *config.ResponseCost, e *reqEstimate) int64 {
	if rc.Usage == nil {
		return e.out
	}
	in := (e.bytes + bytesPerToken - 1) / bytesPerToken
	return tokenCost(rc, e, in, e.out)
}

// estimateCost is the fallback "estimate": the output tokens reserved and
// one input token per byte of the request, at the prices a reservation
// takes. It is what the request could cost, whatever the client said.
func estimateCost(rc *config.ResponseCost, e *reqEstimate) int64 {
	if rc.Usage == nil || e == nil {
		return -1 // the reservation
	}
	return tokenCost(rc, e, e.bytes, e.out)
}

// tokenCost is in input and out output tokens, in tokens or, priced, at
// the dearest prices of the request's models (the table's dearest when it
// names none).
func tokenCost(rc *config.ResponseCost, e *reqEstimate, in, out int64) int64 {
	if rc.Price == nil {
		return min(in+out, config.MaxResponseCost) // each at most 2^40
	}
	p := &rc.Price.Bound
	if e.named {
		p = &e.prices
	}
	return min(price.Estimate(rc.Price.Unit, p, in, out), config.MaxResponseCost)
}

// moneyCost is what a priced rule's response costs, from its usage: per
// kind, the dearest price of the response's model and its request's. A
// model the table refuses, or no model at all under refuse, pays the
// table's dearest prices, counted in model_unlisted.
func (s *Stream) moneyCost(ri int, rc *config.ResponseCost, sc *usage.Scanner) int64 {
	t := rc.Price
	tokens, model := sc.Tokens()
	var p price.Prices
	known := false
	switch q, refused := t.Price(model); {
	case refused:
		s.unlistedModel(ri, model)
		p, known = t.Bound, true
	case q != nil:
		p, known = *q, true
	}
	if e := s.estimateOf(ri); e != nil && e.named {
		p.Dearest(&e.prices)
		known = true
	}
	switch {
	case known:
	case t.Default != nil:
		p = *t.Default
	default: // refuse, and no model named anywhere
		s.unlistedModel(ri, "")
		p = t.Bound
	}
	mult := t.Multiplier(sc.ServiceTier())
	return min(price.CostAt(t.Unit, &p, &tokens, mult), config.MaxResponseCost)
}

// unlistedModel counts a response priced at the table's dearest, and says
// so in the log at most once a minute.
func (s *Stream) unlistedModel(ri int, model string) {
	s.pol.metrics.rules[ri].response.modelUnlisted.Increment(1)
	if l := &s.pol.modelLog; l.dueAt(s.vm.host.Now()) {
		name := s.pol.cfg.Rules[ri].Name
		if model == "" {
			l.emit(LogWarn, "ratelimit: rule "+name+": a response named no model, and none of its request's is listed: charged at the price table's dearest prices")
			return
		}
		if len(model) > price.MaxModelLen {
			model = model[:price.MaxModelLen] + "..."
		}
		l.emit(LogWarn, "ratelimit: rule "+name+": a response named the model "+strconv.Quote(model)+", which the price table does not list: charged at its dearest prices")
	}
}
