// Package headerparts renders, once per rule and tier, the pieces of the
// rate-limit response headers (RateLimit-Policy and RateLimit, IETF draft
// 10, and X-RateLimit-*) that a request's headers are put together from,
// with the rule's tiers as the script's choices take them.
package headerparts

import (
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Rule is a rule's header pieces, rendered once per tier: the
// RateLimit-Policy value, and per limit the quoted name and the quota.
type Rule struct {
	Levels []Level
	// Positions are the quoted names of an override's limits:
	// "<rule>.override", or "<rule>.override.<i>" when the rule keeps
	// more than one state per key.
	Positions []string
	// Choices: the rule's tiers as a Choice sends them; with tiers from a
	// header or key part, one single-tier slice per tier.
	Choices    []algorithms.Tier
	LevelTiers [][]algorithms.Tier
}

// Level is one tier's pieces: the RateLimit-Policy value, and per limit
// the quoted name and the quota.
type Level struct {
	Policy        string
	Names, Quotas []string
}

// New renders r's pieces.
func New(r *config.Rule) Rule {
	var h Rule
	for _, level := range r.Levels() {
		var lh Level
		var policy []string
		for _, l := range level.Limits {
			name := `"` + l.Name + `"`
			policy = append(policy, PolicyItem(name, l.Limit))
			q, _ := l.Limit.Policy()
			lh.Names, lh.Quotas = append(lh.Names, name), append(lh.Quotas, strconv.FormatInt(q, 10))
		}
		lh.Policy = strings.Join(policy, ", ")
		h.Levels = append(h.Levels, lh)
	}
	h.Choices = r.ScriptTiers()
	for _, t := range h.Choices {
		h.LevelTiers = append(h.LevelTiers, []algorithms.Tier{t})
	}
	for _, name := range r.OverrideNames() {
		h.Positions = append(h.Positions, `"`+name+`"`)
	}
	return h
}

// PolicyItem is one limit's RateLimit-Policy item: "name";q=10;w=60, or
// for a concurrency limit "name";q=10;qu="concurrent-requests", the
// draft's quota unit for requests in flight, with no window.
func PolicyItem(quotedName string, l algorithms.Limit) string {
	q, w := l.Policy()
	if l.Algorithm == algorithms.Concurrency {
		return quotedName + ";q=" + strconv.FormatInt(q, 10) + `;qu="concurrent-requests"`
	}
	return quotedName + ";q=" + strconv.FormatInt(q, 10) + ";w=" + strconv.FormatInt(CeilSeconds(w), 10)
}

// CeilSeconds rounds a positive duration up to whole seconds, at least 1;
// zero and negative durations give 0.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
