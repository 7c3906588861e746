package config

import (
	"errors"
	"math"
	"math/bits"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// LocalFallback is failure_mode: local. While Redis cannot decide (it
// fails, times out, or the breaker is open), each VM decides alone, in
// memory, with every limit scaled to the VM's share (see localLimiter).
type LocalFallback struct {
	// Share is the fraction of each limit one VM may admit, in millionths:
	// local_fallback.share 0.25 (4 Envoy workers, one VM each) is 250000.
	// A limit of 100 per minute becomes ceil(0.25 × 100) = 25 per minute
	// in each VM.
	Share int64
	// MaxKeys bounds the limit states each VM keeps (one per key and
	// limit; local_fallback.max_keys, default 10000). When all are held, a
	// new key pushes out the least used state that would still admit its
	// last request; a state that denies stays, and when all do, the new
	// key is decided as a fresh one and not held (localTable).
	MaxKeys int
}

// shareUnit is what a Share of 1 is: shares are read to the millionth,
// rounded to the nearest.
const shareUnit = 1_000_000

// parseFailureMode reads failure_mode and local_fallback into c.
func parseFailureMode(o map[string]jsonvalue.Value, c *Config) error {
	mode, err := enum(o["failure_mode"], "failure_mode", "allow", "allow", "deny", "local")
	if err != nil {
		return err
	}
	c.FailOpen = mode == "allow"
	v := o["local_fallback"]
	if mode != "local" {
		if v.Exists() {
			return errAt("local_fallback", "only with failure_mode: local")
		}
		return nil
	}
	if !v.Exists() {
		return errAt("local_fallback.share", "required with failure_mode: local (the fraction of each limit one VM may admit: 1 / the number of Envoy workers)")
	}
	lo, err := fields(v, "local_fallback", "share", "max_keys")
	if err != nil {
		return err
	}
	s := lo["share"]
	switch {
	case !s.Exists():
		return errAt("local_fallback.share", "required with failure_mode: local (the fraction of each limit one VM may admit: 1 / the number of Envoy workers)")
	case s.Type != jsonvalue.Number || s.Num < 1.0/shareUnit || s.Num > 1:
		return errAt("local_fallback.share", "must be a number from 0.000001 to 1")
	}
	keys, err := integer(lo["max_keys"], "local_fallback.max_keys", 10000, 1, 1<<20)
	if err != nil {
		return err
	}
	c.Local = &LocalFallback{Share: int64(math.Round(s.Num * shareUnit)), MaxKeys: int(keys)}
	return nil
}

// checkLocalLimits rejects a share that scales a limit out of the
// algorithms' range: a funnel whose rate rounds up to 1 may drain so
// slowly that capacity × period / rate passes 2^48 µs.
func checkLocalLimits(c *Config) error {
	if c.Local == nil {
		return nil
	}
	for ri := range c.Rules {
		for _, level := range c.Rules[ri].Levels() {
			for _, l := range level.Limits {
				err := c.Local.Scale(l.Limit).Validate()
				var pe *algorithms.ParamError
				if errors.As(err, &pe) {
					name := string(pe.Param)
					if pe.Param == algorithms.ParamBurst {
						name = "capacity" // only a funnel's can fail
					}
					return errAt("local_fallback.share", "scales limit %q of rules[%d] out of range: %s", l.Name, ri, pe.Message(name))
				}
			}
		}
	}
	return nil
}

// scale returns l as one VM enforces it: its rate and burst times the
// share, rounded up, at least 1; the period is kept.
func (f *LocalFallback) Scale(l algorithms.Limit) algorithms.Limit {
	l.Rate, l.Burst = f.part(l.Rate), f.part(l.Burst)
	return l
}

// part is ceil(n × Share / shareUnit), at least 1, computed exactly.
func (f *LocalFallback) part(n int64) int64 {
	hi, lo := bits.Mul64(uint64(n), uint64(f.Share))
	q, r := bits.Div64(hi, lo, shareUnit) // q <= n, as Share <= shareUnit
	if r > 0 {
		q++
	}
	return max(int64(q), 1)
}
