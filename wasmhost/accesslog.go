package wasmhost

import (
	"io"
	"strconv"
	"strings"
	"time"
)

// The access log (Config.AccessLog): one line per request, written when
// the stream ends, in the shape of this Envoy access log format:
//
//	[%START_TIME%] "%REQ(:METHOD)% %REQ(:PATH)% %PROTOCOL%" %RESPONSE_CODE%
//	%RESPONSE_CODE_DETAILS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%
//	client=%DOWNSTREAM_REMOTE_ADDRESS% upstream=%UPSTREAM_HOST%
//	rl="%FILTER_STATE(wasm.ratelimit.decision:PLAIN)%"
//
// on one line, for example
//
//	[2025-05-01T10:00:00.123Z] "GET /api HTTP/1.1" 429 wasm_local_reply 0 17 2 client=127.0.0.1:52144 upstream=- rl="rule=api decision=denied"
//
// START_TIME is UTC with milliseconds; :PATH is the path as the filter
// left it; RESPONSE_CODE is 0 when no response started (a reset, a client
// gone); DURATION is in milliseconds; a field with no value is "-". rl is
// the value the guest set with proxy_set_property at DecisionProperty
// (Envoy keeps it as the filter state wasm.ratelimit.decision). Quotes,
// backslashes and control bytes in the quoted fields are written as \xNN,
// so that a line stays one line.

// DecisionProperty is the property path (one segment) whose value the
// access log prints as rl.
const DecisionProperty = "ratelimit.decision"

// accessEntry is one request as the access log shows it.
type accessEntry struct {
	start                  time.Time
	method, path, protocol string
	status                 int
	details                string
	received, sent         int64
	client, upstream       string
	decision               []byte
	hasDecision            bool
}

// recordAccess makes the stream's access log line, on the VM's loop; the
// HTTP handler writes it once the stream has finished (Host.finish).
func (h *Host) recordAccess(s *stream) {
	if h.cfg.AccessLog == nil || s.accessLine != "" {
		return
	}
	e := accessEntry{
		start: s.start, method: firstValue(s.reqHeaders, ":method"), path: firstValue(s.reqHeaders, ":path"),
		protocol: s.protocol, status: s.status, details: s.codeDetails,
		received: int64(len(s.reqBody)), sent: s.respSent, client: s.remote, upstream: s.upstreamAddr,
	}
	e.decision, e.hasDecision = s.props[DecisionProperty]
	s.accessLine = e.line(time.Now())
}

// writeAccess writes one line to Config.AccessLog.
func (h *Host) writeAccess(line string) {
	if h.cfg.AccessLog == nil || line == "" {
		return
	}
	h.accessMu.Lock()
	io.WriteString(h.cfg.AccessLog, line)
	h.accessMu.Unlock()
}

// line formats the entry, ending in "\n".
func (e *accessEntry) line(end time.Time) string {
	b := make([]byte, 0, 160)
	b = append(b, '[')
	b = e.start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, "] \""...)
	b = appendEscaped(b, orDash(e.method))
	b = append(b, ' ')
	b = appendEscaped(b, orDash(e.path))
	b = append(b, ' ')
	b = appendEscaped(b, orDash(protocolName(e.protocol)))
	b = append(b, "\" "...)
	b = strconv.AppendInt(b, int64(e.status), 10)
	b = append(b, ' ')
	b = appendEscaped(b, orDash(strings.Join(strings.Fields(e.details), "_")))
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.received, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.sent, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, end.Sub(e.start).Milliseconds(), 10)
	b = append(b, " client="...)
	b = appendEscaped(b, orDash(e.client))
	b = append(b, " upstream="...)
	b = appendEscaped(b, orDash(e.upstream))
	b = append(b, " rl=\""...)
	if e.hasDecision {
		b = appendEscaped(b, string(e.decision))
	} else {
		b = append(b, '-')
	}
	b = append(b, "\"\n"...)
	return string(b)
}

// protocolName is Envoy's %PROTOCOL%: "HTTP/1.1", "HTTP/2".
func protocolName(p string) string {
	if p == "HTTP/2.0" {
		return "HTTP/2"
	}
	return p
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// appendEscaped appends s with '"', '\\' and bytes below 0x20 or 0x7f
// written as \xNN.
func appendEscaped(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}
