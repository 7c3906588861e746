package config

import (
	"errors"
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

func parseLimits(v jsonvalue.Value, path, rule string) ([]NamedLimit, error) {
	if !v.Exists() {
		return nil, errAt(path, "required")
	}
	if !v.IsArray() || len(v.Array()) == 0 || len(v.Array()) > maxLimitsPerRule {
		return nil, errAt(path, "must be an array of 1 to %d limits", maxLimitsPerRule)
	}
	var out []NamedLimit
	names := map[string]bool{}
	for i, lv := range v.Array() {
		at := elem(path, i)
		l, err := parseLimit(lv, at)
		if err != nil {
			return nil, err
		}
		if l.Name == "" {
			l.Name = rule
			if len(v.Array()) > 1 {
				l.Name = rule + "." + strconv.Itoa(i)
			}
		}
		if names[l.Name] {
			return nil, errAt(at+".name", "duplicate limit name %q", l.Name)
		}
		names[l.Name] = true
		out = append(out, l)
	}
	return out, nil
}

func parseLimit(v jsonvalue.Value, path string) (NamedLimit, error) {
	nl := NamedLimit{}
	if !v.IsObject() {
		return nl, errAt(path, "must be an object")
	}
	algo, err := enum(v.Get("algorithm"), path+".algorithm", "", "sliding_log", "sliding_counter", "funnel", "token_bucket", "concurrency", "calendar")
	if err != nil {
		return nl, err
	}
	if algo == "" {
		return nl, errAt(path+".algorithm", "required")
	}
	names := fieldsOf(algo)
	allowed := []string{"algorithm", "name", names.burst, names.rate, names.period}
	if names.burst == names.rate {
		allowed = append(allowed[:2], allowed[3:]...)
	}
	if algo == "calendar" {
		allowed = append(allowed, names.zone, names.weekStart)
	}
	o, err := fields(v, path, allowed...)
	if err != nil {
		return nl, err
	}
	if nl.Name, err = str(o["name"], path+".name", ""); err != nil {
		return nl, err
	}
	if nl.Name != "" && !validName(nl.Name) {
		return nl, errAt(path+".name", "must be 1-64 characters of A-Z a-z 0-9 _ . -")
	}
	number := func(field string) (int64, error) {
		if !o[field].Exists() {
			return 0, errAt(path+"."+field, "required")
		}
		return integer(o[field], path+"."+field, 0, 1, 1<<53)
	}
	period := func(field string) (time.Duration, error) {
		if !o[field].Exists() {
			return 0, errAt(path+"."+field, "required")
		}
		d, err := duration(o[field], path+"."+field, 0)
		if err == nil && d <= 0 {
			err = errAt(path+"."+field, "must be > 0")
		}
		return d, err
	}
	var l algorithms.Limit
	switch algo {
	case "sliding_log", "sliding_counter":
		limit, err := number("limit")
		if err != nil {
			return nl, err
		}
		window, err := period("window")
		if err != nil {
			return nl, err
		}
		if algo == "sliding_log" {
			l, err = algorithms.NewSlidingLog(limit, window)
		} else {
			l, err = algorithms.NewSlidingCounter(limit, window)
		}
		if err != nil {
			return nl, limitError(path, names, err)
		}
	case "calendar":
		limit, err := number("limit")
		if err != nil {
			return nl, err
		}
		if l, err = parseCalendar(o, path, limit, names); err != nil {
			return nl, err
		}
	case "concurrency":
		limit, err := number("limit")
		if err != nil {
			return nl, err
		}
		maxDuration, err := period("max_duration")
		if err != nil {
			return nl, err
		}
		if l, err = algorithms.NewConcurrency(limit, maxDuration); err != nil {
			return nl, limitError(path, names, err)
		}
	default:
		capacity, err := number("capacity")
		if err != nil {
			return nl, err
		}
		rate, err := number(names.rate)
		if err != nil {
			return nl, err
		}
		per, err := period("period")
		if err != nil {
			return nl, err
		}
		if l, err = algorithms.NewFunnel(capacity, rate, per); err != nil {
			return nl, limitError(path, names, err)
		}
	}
	nl.Limit = l
	return nl, nil
}

// limitError wraps a bad parameter with the path of the field that set
// it, in that field's name: ParamError{Param: ParamRate, Want: "must be
// >= 1"} of a token bucket is "<path>.refill: must be >= 1".
func limitError(path string, names paramFields, err error) error {
	var pe *algorithms.ParamError
	if errors.As(err, &pe) {
		if field, ok := names.of(pe.Param); ok {
			return &fieldError{path: path + "." + field, err: err, msg: pe.Message(field)}
		}
	}
	return &fieldError{path: path, err: err}
}
