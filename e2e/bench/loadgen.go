package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Load is an HTTP/1.1 load: Connections keep-alive connections, each
// sending one request at a time, for Duration. With Rate = 0 every
// connection sends its next request as soon as the previous response is
// read (closed loop: throughput is what the server sustains). With Rate > 0
// the connections share a fixed schedule of Rate requests per second (open
// loop), and latency counts from the scheduled send time, so a server that
// falls behind is charged for the queueing it causes.
//
// It writes prepared request bytes on plain TCP connections and reads the
// responses with a minimal parser (status line, Content-Length body), so
// that it costs the machine it shares with the server far less than an
// net/http client would.
type Load struct {
	Addr        string   // "host:port"
	Requests    [][]byte // raw requests, sent in turn; see Request
	Connections int
	Duration    time.Duration
	Rate        float64
}

// Request formats a GET with the given headers, keeping the connection
// alive.
func Request(path string, headers ...[2]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: bench\r\n", path)
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// Sample is one request: when it was due, relative to the start, how long
// it took, and its status (0 for a failed request).
type Sample struct {
	At      time.Duration
	Latency time.Duration
	Status  int
}

// Result is what a load observed.
type Result struct {
	Elapsed time.Duration
	Samples []Sample
	Errors  int64
	// FirstError is the first transport error, if any.
	FirstError error
}

// Run applies the load until its duration has passed or ctx is done, and
// waits for the requests in flight.
func Run(ctx context.Context, l Load) (*Result, error) {
	if l.Connections <= 0 || len(l.Requests) == 0 || l.Duration <= 0 {
		return nil, errors.New("bench: Load needs Connections, Requests and Duration")
	}
	conns := make([]*conn, l.Connections)
	for i := range conns {
		c, err := dial(l.Addr)
		if err != nil {
			for _, c := range conns[:i] {
				c.close()
			}
			return nil, err
		}
		conns[i] = c
	}
	ctx, cancel := context.WithTimeout(ctx, l.Duration)
	defer cancel()
	start := time.Now()
	results := make([]*Result, l.Connections)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.run(ctx, l, i, start)
		}()
	}
	wg.Wait()
	out := &Result{Elapsed: time.Since(start)}
	for _, r := range results {
		out.Samples = append(out.Samples, r.Samples...)
		out.Errors += r.Errors
		if out.FirstError == nil {
			out.FirstError = r.FirstError
		}
	}
	sort.Slice(out.Samples, func(i, j int) bool { return out.Samples[i].At < out.Samples[j].At })
	return out, nil
}

type conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{addr: addr, c: c, r: bufio.NewReaderSize(c, 16<<10)}, nil
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// run is one connection's loop. Connection i sends requests i, i+n, i+2n…
// of the schedule and of l.Requests (n connections).
func (c *conn) run(ctx context.Context, l Load, i int, start time.Time) *Result {
	defer c.close()
	res := &Result{}
	n := l.Connections
	var interval time.Duration
	if l.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(n) / l.Rate)
	}
	for k := 0; ; k++ {
		due := time.Now()
		if interval > 0 {
			due = start.Add(time.Duration(float64(time.Second) * float64(k*n+i) / l.Rate))
			if wait := time.Until(due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return res
				}
			}
		}
		if ctx.Err() != nil {
			return res
		}
		status, err := c.roundTrip(l.Requests[(k*n+i)%len(l.Requests)])
		s := Sample{At: due.Sub(start), Latency: time.Since(due), Status: status}
		if err != nil {
			s.Status = 0
			res.Errors++
			if res.FirstError == nil {
				res.FirstError = err
			}
			c.close()
			nc, derr := dial(c.addr)
			if derr != nil {
				res.Samples = append(res.Samples, s)
				return res
			}
			*c = *nc
		}
		res.Samples = append(res.Samples, s)
	}
}

// roundTrip writes one request and reads its response.
func (c *conn) roundTrip(req []byte) (int, error) {
	if c.c == nil {
		return 0, errors.New("connection closed")
	}
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.c.Write(req); err != nil {
		return 0, err
	}
	return readResponse(c.r)
}

// readResponse reads one HTTP/1.1 response with a Content-Length body
// (what the host writes) and returns its status.
func readResponse(r *bufio.Reader) (int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length, closing := -1, false
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, fmt.Errorf("bad header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			return 0, fmt.Errorf("unsupported Transfer-Encoding %q", value)
		case bytes.EqualFold(name, []byte("connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	if length < 0 {
		if status != 204 && status != 304 && status >= 200 {
			return 0, errors.New("response without Content-Length")
		}
		length = 0
	}
	if _, err := r.Discard(length); err != nil {
		return 0, err
	}
	if closing {
		return status, errServerClosed
	}
	return status, nil
}

var errServerClosed = errors.New("server closed the connection")

// Merge adds o's samples and errors to r, and its elapsed time, as for
// rounds of one configuration run apart.
func (r *Result) Merge(o *Result) {
	r.Elapsed += o.Elapsed
	r.Samples = append(r.Samples, o.Samples...)
	r.Errors += o.Errors
	if r.FirstError == nil {
		r.FirstError = o.FirstError
	}
}

// Count is how many requests completed (with a status).
func (r *Result) Count() int64 {
	var n int64
	for _, s := range r.Samples {
		if s.Status != 0 {
			n++
		}
	}
	return n
}

// CountStatus is how many requests got status.
func (r *Result) CountStatus(status int) int64 {
	var n int64
	for _, s := range r.Samples {
		if s.Status == status {
			n++
		}
	}
	return n
}

// PerSecond is completed requests per second of elapsed time.
func (r *Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Count()) / r.Elapsed.Seconds()
}

// Percentile returns the p-th percentile (0 < p <= 100) of the completed
// requests' latencies.
func (r *Result) Percentile(p float64) time.Duration {
	lat := make([]time.Duration, 0, len(r.Samples))
	for _, s := range r.Samples {
		if s.Status != 0 {
			lat = append(lat, s.Latency)
		}
	}
	if len(lat) == 0 {
		return 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	i := int(float64(len(lat))*p/100+0.5) - 1
	i = max(0, min(i, len(lat)-1))
	return lat[i]
}
