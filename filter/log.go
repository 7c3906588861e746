package filter

import (
	"strconv"
	"time"
)

// quietLog logs at most one line per period, counting the rest.
type quietLog struct {
	host       PluginHost
	every      time.Duration
	last       time.Time
	suppressed int
}

func (l *quietLog) log(level LogLevel, msg string) {
	if l.dueAt(l.host.Now()) {
		l.emit(level, msg)
	}
}

// dueAt reports whether a line may be logged at now, and takes the
// period's turn when it may: the caller then emits the line. A line that
// may not is counted as suppressed. A caller builds its message only once
// it is due, so a line suppressed costs no allocation.
func (l *quietLog) dueAt(now time.Time) bool {
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return false
	}
	l.last = now
	return true
}

// emit logs msg, with the count of lines suppressed since the last one.
func (l *quietLog) emit(level LogLevel, msg string) {
	if l.suppressed > 0 {
		msg += " (" + strconv.Itoa(l.suppressed) + " similar messages suppressed)"
	}
	l.suppressed = 0
	l.host.Log(level, msg)
}
