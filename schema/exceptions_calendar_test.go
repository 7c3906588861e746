package schema

import (
	"encoding/json"
	"regexp"
	"time"

	_ "time/tzdata" // the zones the filter embeds
)

// calendarPeriod is what a calendar limit's state counts: its period,
// time_zone and week_starts, defaults filled in.
func calendarPeriod(l map[string]any) string {
	zone, ok := l["time_zone"]
	if !ok {
		zone = "UTC"
	}
	start, ok := l["week_starts"]
	if !ok {
		start = "monday"
	}
	b, _ := json.Marshal([]any{l["period"], zone, start})
	return string(b)
}

var calendarExceptions = []exception{
	{
		name:    "calendar-unknown-zone",
		why:     "time_zone must name a zone of the IANA database, a list the schema does not copy",
		message: regexp.MustCompile(`^rules\[\d+\]\.(limits|tiers\.limits\.[A-Za-z0-9_.-]+)\[\d+\]\.time_zone: must be an IANA time zone such as Europe/Berlin$`),
		applies: func(_ []byte, doc map[string]any) bool {
			return anyLimit(doc, func(algo string, l map[string]any) bool {
				zone, ok := l["time_zone"].(string)
				if algo != "calendar" || !ok {
					return false
				}
				_, err := time.LoadLocation(zone)
				return err != nil || zone == "Local"
			})
		},
		example: exampleConfig("", `[{"algorithm":"calendar","limit":5,"period":"day","time_zone":"Mars/Olympus"}]`, ""),
	},
}

func init() { exceptions = append(exceptions, calendarExceptions...) }
