package wasmhost

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A response whose headers, body and trailers reach the handler in one
// message is written before anything is flushed: its trailers must still
// make it chunked, not be dropped for a computed content-length.
func TestClientWriterKeepsTrailersOfAResponseWrittenAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := newClientWriter(w, r, t.Logf)
		out.start(&finalResponse{status: 200, headers: [][2]string{{"content-type", "text/plain"}}})
		out.end([]byte("body"), [][2]string{{"x-checksum", "c0ffee"}})
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "body" || resp.Trailer.Get("X-Checksum") != "c0ffee" {
		t.Fatalf("body %q, trailers %v, content-length %d", body, resp.Trailer, resp.ContentLength)
	}
}
