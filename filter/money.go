package filter

import (
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
	"github.com/redisrate/envoy-redis-ratelimit/filter/usage"
)

// Costs in money: a response_cost rule with a price turns the usage's
// tokens into an integer cost in its unit (package price), at the response
// and for the reservation.

// bytesPerToken is the request's size per input token a reservation
// assumes: JSON of English text runs about 4 bytes a token.
const bytesPerToken = 4

// reqModel is the model a request names for one priced rule, copied: the
// request's headers are gone by its response.
type reqModel struct {
	rule int
	name []byte
}

// requestModel is the model the request names for rule: its model_header,
// else the "model" of a request body a rule read; "" when neither.
func (s *Stream) requestModel(t *price.Table) string {
	if t.ModelHeader != "" {
		v, _ := s.req.header(t.ModelHeader)
		return v
	}
	if v, ok := s.req.bodyString("model"); ok {
		return v
	}
	return ""
}

// noteModel keeps the model the request names for a priced rule, for its
// response; it reports false when the table refuses that model.
func (s *Stream) noteModel(ri int, t *price.Table) (model string, ok bool) {
	model = s.requestModel(t)
	if model != "" && s.modelOf(ri) == "" {
		n := len(s.models)
		if n < cap(s.models) {
			s.models = s.models[:n+1]
		} else {
			s.models = append(s.models, reqModel{})
		}
		m := &s.models[n]
		m.rule, m.name = ri, append(m.name[:0], model...)
	}
	if _, listed := t.Lookup(model); t.Refuse && model != "" && !listed {
		return model, false
	}
	return model, true
}

// modelOf is the model the request named for rule ri; "" when none.
func (s *Stream) modelOf(ri int) string {
	for i := range s.models {
		if s.models[i].rule == ri {
			return bytesString(s.models[i].name)
		}
	}
	return ""
}

// moneyReservation is what a priced rule reserves: out output tokens and
// the request's size in input tokens, at the named model's prices, else at
// the table's dearest.
func (s *Stream) moneyReservation(t *price.Table, model string, out int64) int64 {
	p, ok := t.Lookup(model)
	if !ok {
		p = &t.Bound
	}
	return min(price.Estimate(t.Unit, p, s.inputEstimate(), out), config.MaxResponseCost)
}

// inputEstimate is the request's input tokens, guessed from its size: the
// body read, else content-length, over bytesPerToken, rounded up.
func (s *Stream) inputEstimate() int64 {
	n := int64(s.req.bodyLen)
	if n == 0 {
		if v, ok := s.req.header("content-length"); ok {
			n, _ = config.ParseCost(v)
		}
	}
	return (n + bytesPerToken - 1) / bytesPerToken
}

// moneyCost is what a priced rule's response costs, from its usage, times
// its service tier's multiplier; ok is false when no price applies (a
// model not listed, under refuse).
func (s *Stream) moneyCost(ri int, rc *config.ResponseCost, sc *usage.Scanner) (int64, bool) {
	tokens, model := sc.Tokens()
	p := rc.Price.For(model, s.modelOf(ri))
	if p == nil {
		return 0, false
	}
	mult := rc.Price.Multiplier(sc.ServiceTier())
	return min(price.CostAt(rc.Price.Unit, p, &tokens, mult), config.MaxResponseCost), true
}
