package bench

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunClosedLoop(t *testing.T) {
	var users atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		users.Add(1)
		if r.Header.Get("x-user") == "b" {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		w.Write([]byte("body"))
	}))
	defer srv.Close()
	l := Load{
		Addr:        strings.TrimPrefix(srv.URL, "http://"),
		Requests:    [][]byte{Request("/x", [2]string{"x-user", "a"}), Request("/x", [2]string{"x-user", "b"})},
		Connections: 2,
		Duration:    100 * time.Millisecond,
	}
	res, err := Run(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Count() == 0 {
		t.Fatalf("%d errors (%v), %d requests", res.Errors, res.FirstError, res.Count())
	}
	// Connection 0 sends a's request, connection 1 b's.
	ok, denied := res.CountStatus(200), res.CountStatus(429)
	if ok+denied != res.Count() || ok == 0 || denied == 0 || users.Load() != int32(res.Count()) {
		t.Errorf("200: %d, 429: %d of %d", ok, denied, res.Count())
	}
	if res.Percentile(50) <= 0 || res.Percentile(99) < res.Percentile(50) {
		t.Errorf("p50 %v, p99 %v", res.Percentile(50), res.Percentile(99))
	}
	if res.PerSecond() <= 0 {
		t.Error("no throughput")
	}
}

func TestRunOpenLoop(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	res, err := Run(context.Background(), Load{
		Addr:        strings.TrimPrefix(srv.URL, "http://"),
		Requests:    [][]byte{Request("/")},
		Connections: 4,
		Duration:    500 * time.Millisecond,
		Rate:        200,
	})
	if err != nil {
		t.Fatal(err)
	}
	// 200/s for 0.5 s is at most 101 requests on a schedule (a slow
	// machine may send fewer before the end).
	if c := res.Count(); c == 0 || c > 101 {
		t.Errorf("%d requests at 200/s in 0.5 s", c)
	}
	if int64(len(res.Samples)) != res.Count() || n.Load() != res.Count() {
		t.Errorf("%d samples, %d completed, %d served", len(res.Samples), res.Count(), n.Load())
	}
	for i, s := range res.Samples {
		if want := time.Duration(i) * 5 * time.Millisecond; s.At != want {
			t.Fatalf("sample %d due at %v, want %v", i, s.At, want)
		}
	}
}

func TestReadResponse(t *testing.T) {
	for _, tc := range []struct {
		in     string
		status int
		err    bool
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, false},
		{"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 0\r\nRetry-After: 1\r\n\r\n", 429, false},
		{"HTTP/1.1 204 No Content\r\n\r\n", 204, false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, true},
		{"HTTP/1.1 200 OK\r\n\r\n", 0, true},
		{"junk\r\n", 0, true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", 0, true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 200, true},
	} {
		status, err := readResponse(bufio.NewReader(strings.NewReader(tc.in)))
		if status != tc.status || (err != nil) != tc.err {
			t.Errorf("%q: %d, %v; want %d, error %v", tc.in, status, err, tc.status, tc.err)
		}
	}
}
