package config

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

var weekdays = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

// parseCalendar reads a calendar limit's period, time_zone (default UTC)
// and week_starts (a week's only; default monday).
func parseCalendar(o map[string]jsonvalue.Value, path string, limit int64, names paramFields) (algorithms.Limit, error) {
	var l algorithms.Limit
	if !o["period"].Exists() {
		return l, errAt(path+".period", "required")
	}
	name, err := enum(o["period"], path+".period", "", "hour", "day", "week", "month")
	if err != nil {
		return l, err
	}
	unit, _ := algorithms.ParseCalendarUnit(name)
	zone, err := str(o["time_zone"], path+".time_zone", "UTC")
	if err != nil {
		return l, err
	}
	if o["week_starts"].Exists() && unit != algorithms.Week {
		return l, errAt(path+".week_starts", "only with \"period\": \"week\"")
	}
	day, err := enum(o["week_starts"], path+".week_starts", "monday", weekdays...)
	if err != nil {
		return l, err
	}
	cal := algorithms.Calendar{Unit: unit, Zone: zone}
	if unit == algorithms.Week {
		for i, d := range weekdays {
			if d == day {
				cal.WeekStart = time.Weekday(i)
			}
		}
	}
	if l, err = algorithms.NewCalendar(limit, cal); err != nil {
		return l, limitError(path, names, err)
	}
	return l, nil
}
