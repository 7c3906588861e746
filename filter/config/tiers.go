package config

import (
	"strconv"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// Tiers are a rule's named sets of limits, such as plans; a request's tier
// picks the set that decides it.
type Tiers struct {
	From TierFrom
	// Header is the trusted request header naming the tier (TierFromHeader);
	// KeyPart the index of the key part whose value names it
	// (TierFromKeyPart).
	Header  string
	KeyPart int
	// Levels[0] is the default: for a request without a tier, or naming
	// one the configuration lacks.
	Levels []TierLimits
}

// TierLimits is one tier: its name and limits. Limit i of every tier (and
// of an operator's override) shares the key's state at position i, so a
// key keeps what it used when its tier changes.
type TierLimits struct {
	Name   string
	Limits []NamedLimit
}

// TierFrom says where a request's tier comes from.
type TierFrom uint8

const (
	TierFromHeader  TierFrom = iota + 1 // a header an earlier filter set
	TierFromKeyPart                     // a part of the rule's key
	TierFromRedis                       // the key's tier key, read in the deciding call
)

// maxTiers bounds a rule's tiers: with tiers from Redis, every tier's
// limits travel in each call.
const maxTiers = 8

func parseTiers(v jsonvalue.Value, path, rule string, keyParts int) (*Tiers, error) {
	o, err := fields(v, path, "from", "default", "limits")
	if err != nil {
		return nil, err
	}
	t := &Tiers{}
	from := o["from"]
	switch {
	case !from.Exists():
		return nil, errAt(path+".from", "required")
	case from.Type == jsonvalue.String && from.String() == "redis":
		t.From = TierFromRedis
	case from.IsObject():
		fo, err := fields(from, path+".from", "header", "key_part")
		if err != nil {
			return nil, err
		}
		switch {
		case fo["header"].Exists() == fo["key_part"].Exists():
			return nil, errAt(path+".from", "exactly one of header, key_part, or the string \"redis\"")
		case fo["header"].Exists():
			t.From = TierFromHeader
			if t.Header, err = str(fo["header"], path+".from.header", ""); err != nil {
				return nil, err
			}
			if t.Header == "" {
				return nil, errAt(path+".from.header", "must not be empty")
			}
			t.Header = strings.ToLower(t.Header)
		default:
			t.From = TierFromKeyPart
			i, err := integer(fo["key_part"], path+".from.key_part", 0, 0, int64(keyParts-1))
			if err != nil {
				return nil, err
			}
			t.KeyPart = int(i)
		}
	default:
		return nil, errAt(path+".from", "must be {\"header\": ...}, {\"key_part\": N} or \"redis\"")
	}
	def, err := str(o["default"], path+".default", "")
	if err != nil {
		return nil, err
	}
	if def == "" {
		return nil, errAt(path+".default", "required: the tier of requests that name none, or an unknown one")
	}
	lv := o["limits"]
	if !lv.IsObject() || len(lv.Map()) == 0 {
		return nil, errAt(path+".limits", "required: an object of tier name to limits")
	}
	if len(lv.Map()) > maxTiers {
		return nil, errAt(path+".limits", "at most %d tiers", maxTiers)
	}
	var perr error
	// A repeated tier is reported before anything in it, as fields does.
	seen := map[string]bool{}
	lv.ForEach(func(k, _ jsonvalue.Value) bool {
		if seen[k.String()] {
			perr = errAt(path+".limits."+k.String(), "duplicate field")
			return false
		}
		seen[k.String()] = true
		return true
	})
	lv.ForEach(func(k, v jsonvalue.Value) bool {
		if perr != nil {
			return false
		}
		name, at := k.String(), path+".limits."+k.String()
		if !validName(name) {
			perr = errAt(at, "a tier name must be 1-64 characters of A-Z a-z 0-9 _ . -")
			return false
		}
		limits, err := parseLimits(v, at, rule+"."+name)
		if err != nil {
			perr = err
			return false
		}
		level := TierLimits{Name: name, Limits: limits}
		if name == def {
			t.Levels = append([]TierLimits{level}, t.Levels...)
		} else {
			t.Levels = append(t.Levels, level)
		}
		return true
	})
	if perr != nil {
		return nil, perr
	}
	if t.Levels[0].Name != def {
		return nil, errAt(path+".default", "%q is not one of the tiers in limits", def)
	}
	for _, level := range t.Levels[1:] {
		if err := compatible(t.Levels[0].Limits, level.Limits, path+".limits."+level.Name, t.Levels[0].Name); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// compatible checks that limits can share the state of base's positions:
// the same algorithm at each position, and the same window for sliding
// counters, whose state counts windows.
func compatible(base, limits []NamedLimit, path, baseName string) error {
	for i := range min(len(base), len(limits)) {
		a, b := base[i].Limit, limits[i].Limit
		if a.Algorithm != b.Algorithm {
			return errAt(format.Sprintf("%s[%d]", path, i), "must be a %s, as limit %d of %s: they share the key's state", a.Algorithm, i, baseName)
		}
		if a.Algorithm == algorithms.SlidingCounter && a.Period != b.Period {
			return errAt(format.Sprintf("%s[%d].window", path, i), "must be %s, as limit %d of %s: a sliding counter's state counts windows", a.Period, i, baseName)
		}
		if a.Algorithm == algorithms.CalendarWindow && a.Calendar != b.Calendar {
			return errAt(format.Sprintf("%s[%d]", path, i), "must have the period, time_zone and week_starts of limit %d of %s: a calendar limit's state counts its periods", i, baseName)
		}
	}
	return nil
}

// Levels returns the rule's sets of limits: its tiers, or its limits as
// one unnamed tier.
func (r *Rule) Levels() []TierLimits {
	if r.Tiers != nil {
		return r.Tiers.Levels
	}
	return []TierLimits{{Limits: r.Limits}}
}

// TierLimits returns the limits of tier i: the rule's own without tiers.
func (r *Rule) TierLimits(i int) []NamedLimit {
	if r.Tiers == nil {
		return r.Limits
	}
	return r.Tiers.Levels[i].Limits
}

// HasCalendar reports whether a tier of the rule holds a calendar limit.
func (r *Rule) HasCalendar() bool {
	for _, level := range r.Levels() {
		for _, l := range level.Limits {
			if l.Limit.Algorithm == algorithms.CalendarWindow {
				return true
			}
		}
	}
	return false
}

// HasConcurrency reports whether a tier of the rule holds a concurrency
// limit (an override may hold one only where a tier does).
func (r *Rule) HasConcurrency() bool {
	for _, level := range r.Levels() {
		for _, l := range level.Limits {
			if l.Limit.Algorithm == algorithms.Concurrency {
				return true
			}
		}
	}
	return false
}

// ScriptTiers returns the rule's tiers as the script's choice takes them,
// one per level (see Levels): a name and its limits.
func (r *Rule) ScriptTiers() []algorithms.Tier {
	var tiers []algorithms.Tier
	for _, level := range r.Levels() {
		var limits []algorithms.Limit
		for _, l := range level.Limits {
			limits = append(limits, l.Limit)
		}
		tiers = append(tiers, algorithms.Tier{Name: level.Name, Limits: limits})
	}
	return tiers
}

// OverrideNames are the names of an override's limits, one per position:
// "<rule>.override", or "<rule>.override.<i>" when the rule keeps more
// than one state per key.
func (r *Rule) OverrideNames() []string {
	var names []string
	for i := range r.Positions() {
		name := r.Name + ".override"
		if r.Positions() > 1 {
			name += "." + strconv.Itoa(i)
		}
		names = append(names, name)
	}
	return names
}

// Positions is the number of the rule's limit states per key: the most
// limits of any tier.
func (r *Rule) Positions() int {
	n := 0
	for _, l := range r.Levels() {
		n = max(n, len(l.Limits))
	}
	return n
}

// TierNames lists the rule's tiers, the default first; nil without tiers.
func (r *Rule) TierNames() []string {
	if r.Tiers == nil {
		return nil
	}
	var names []string
	for _, l := range r.Tiers.Levels {
		names = append(names, l.Name)
	}
	return names
}

// TiersFromRedis reports whether an operator assigns the rule's tiers.
func (r *Rule) TiersFromRedis() bool { return r.Tiers != nil && r.Tiers.From == TierFromRedis }

// OverridesEnabled reports whether Redis may hold a key's own limits.
func (r *Rule) OverridesEnabled() bool { return r.Overrides }

// ChosenInRedis reports whether Redis picks the rule's limits per key.
func (r *Rule) ChosenInRedis() bool { return r.Overrides || r.TiersFromRedis() }

// TierIndex returns the tier a name picks: 0, the default, when unknown.
func (t *Tiers) TierIndex(name string) int {
	for i := range t.Levels {
		if t.Levels[i].Name == name {
			return i
		}
	}
	return 0
}

// ParseOverride validates an operator's limits for one key of rule, given
// as the JSON array of limits a rule's configuration holds, and returns
// the override key's value.
func ParseOverride(r *Rule, limitsJSON []byte) (string, error) {
	if !r.Overrides {
		return "", format.Errorf("rule %s: overrides are off (set \"overrides\": true on the rule)", r.Name)
	}
	if err := jsonbound.Check(limitsJSON); err != nil {
		return "", notJSON("limits", err)
	}
	limits, err := parseLimits(jsonvalue.ParseBytes(limitsJSON), "limits", r.Name+".override")
	if err != nil {
		return "", err
	}
	if len(limits) > r.Positions() {
		return "", errAt("limits", "at most %d limits: rule %s keeps %d states per key", r.Positions(), r.Name, r.Positions())
	}
	for _, level := range r.Levels() {
		if err := compatible(level.Limits, limits, "limits", "tier "+level.Name); err != nil {
			return "", err
		}
	}
	var ls []algorithms.Limit
	for _, l := range limits {
		ls = append(ls, l.Limit)
	}
	return algorithms.EncodeOverride(ls)
}
