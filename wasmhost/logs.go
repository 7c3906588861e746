package wasmhost

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Sources of log entries.
const (
	SourceGuest  = "guest"  // proxy_log
	SourceStdout = "stdout" // the guest's fd 1, logged at info as Envoy does
	SourceStderr = "stderr" // the guest's fd 2 (Go panics), logged at error
	SourceHost   = "host"   // the host's own diagnostics
)

// LogEntry is one log line.
type LogEntry struct {
	VM      int // index of the VM, -1 for the host as a whole
	Level   LogLevel
	Source  string // SourceGuest, SourceStdout, SourceStderr or SourceHost
	Message string
}

// String formats the entry as the host writes it to Config.LogWriter.
func (e LogEntry) String() string {
	return fmt.Sprintf("[vm %d] %s %s: %s", e.VM, e.Source, e.Level, e.Message)
}

// maxLogEntries bounds the lines a Host keeps; older ones are dropped.
const maxLogEntries = 1 << 17

// Logs returns the log lines so far, in order (the last 131072 of them).
func (h *Host) Logs() []LogEntry {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return append([]LogEntry(nil), h.logs...)
}

// GuestLogs returns the messages the guest logged with proxy_log at level
// or above.
func (h *Host) GuestLogs(level LogLevel) []string {
	var out []string
	for _, e := range h.Logs() {
		if e.Source == SourceGuest && e.Level >= level {
			out = append(out, e.Message)
		}
	}
	return out
}

// logCount is the number of lines ever logged, a mark for logsSince.
func (h *Host) logCount() int {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return h.logDropped + len(h.logs)
}

// logsSince returns the lines logged since logCount returned mark.
func (h *Host) logsSince(mark int) []LogEntry {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	skip := min(max(mark-h.logDropped, 0), len(h.logs))
	return append([]LogEntry(nil), h.logs[skip:]...)
}

func (h *Host) addLog(e LogEntry) {
	h.logMu.Lock()
	if len(h.logs) >= maxLogEntries {
		n := len(h.logs) / 2
		h.logDropped += n
		h.logs = append(h.logs[:0], h.logs[n:]...)
	}
	h.logs = append(h.logs, e)
	if h.cfg.LogWriter != nil {
		io.WriteString(h.cfg.LogWriter, e.String()+"\n")
	}
	h.logMu.Unlock()
}

func (h *Host) hostLog(vmIndex int, level LogLevel, format string, a ...any) {
	h.addLog(LogEntry{VM: vmIndex, Level: level, Source: SourceHost, Message: fmt.Sprintf(format, a...)})
}

// lineWriter turns a guest's stdout or stderr into log entries, one per
// line, and copies the bytes to Config.Stdout.
type lineWriter struct {
	h      *Host
	vm     int
	level  LogLevel
	source string
	mu     sync.Mutex
	buf    []byte
}

func (h *Host) newLineWriter(vmIndex int, level LogLevel, source string) io.Writer {
	return &lineWriter{h: h, vm: vmIndex, level: level, source: source}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h.cfg.Stdout != nil {
		w.h.stdoutMu.Lock()
		w.h.cfg.Stdout.Write(p)
		w.h.stdoutMu.Unlock()
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.buf[:i]), "\r")
		w.buf = w.buf[i+1:]
		w.h.addLog(LogEntry{VM: w.vm, Level: w.level, Source: w.source, Message: line})
	}
	return len(p), nil
}
