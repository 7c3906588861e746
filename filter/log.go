package filter

import (
	"fmt"
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
	now := l.host.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return
	}
	if l.suppressed > 0 {
		msg = fmt.Sprintf("%s (%d similar messages suppressed)", msg, l.suppressed)
	}
	l.last, l.suppressed = now, 0
	l.host.Log(level, msg)
}
