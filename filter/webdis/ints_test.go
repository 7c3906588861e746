package webdis

import (
	"slices"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// viaRESP reads a Webdis body the long way: JSON to RESP, then decoded.
func viaRESP(body []byte) ([]int64, bool) {
	resp, err := Reply(nil, body)
	if err != nil {
		return nil, false
	}
	v, _, err := redisproto.Decode(resp)
	if err != nil {
		return nil, false
	}
	elems, err := v.Array()
	if err != nil {
		return nil, false
	}
	var out []int64
	for _, e := range elems {
		n, err := e.Int64()
		if err != nil {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

func TestWebdisIntsAgreesWithTheLongWay(t *testing.T) {
	for _, body := range []string{
		`{"EVALSHA":[1700000000000000,-2,1,10,9,-1,100000]}`,
		`{"EVAL":[1700000000000000,5000,1]}`,
		"{\"EVALSHA\":[1,-2]}\n",
	} {
		got, ok := Ints(nil, []byte(body))
		want, wantOK := viaRESP([]byte(body))
		if !ok || !wantOK || !slices.Equal(got, want) {
			t.Errorf("%s: Ints %v %v, the long way %v %v", body, got, ok, want, wantOK)
		}
	}
	for _, body := range []string{
		`{"EVALSHA":[false,"NOSCRIPT No matching script."]}`,
		`{"EVALSHA":[1,"2"]}`, `{"EVALSHA":[01]}`, `{"EVALSHA":[1]} x`, `{"EVALSHA":[1],"X":[2]}`, `[1]`, ``,
	} {
		if got, ok := Ints(nil, []byte(body)); ok {
			t.Errorf("%s: Ints took it: %v", body, got)
		}
	}
}

// The command sent to Webdis is the RESP command re-encoded, as Webdis
// reads it back.
func TestWebdisFramingIsTheRESPCommandReencoded(t *testing.T) {
	funnel, _ := algorithms.NewFunnel(10, 5, time.Second)
	log, _ := algorithms.NewSlidingLog(3, time.Minute)
	blocks := []string{"rl:{a b|ü/..%}:block"}
	checks := []algorithms.Check{{Key: "rl:{a b|ü/..%}:0", Limit: funnel, Cost: 1}, {Key: "rl:{a b|ü/..%}:1", Limit: log, Cost: 0}}
	for _, inv := range []algorithms.Invoke{algorithms.FCall, algorithms.EvalSHA, algorithms.Eval} {
		var dec redisproto.Decoder
		want, err := appendBody(nil, &dec, algorithms.AppendCommand(nil, algorithms.RESP, inv, blocks, checks))
		if err != nil {
			t.Fatal(err)
		}
		if got := algorithms.AppendCommand(nil, algorithms.WebdisPath, inv, blocks, checks); string(got) != string(want) {
			t.Errorf("invoke %v:\n got %s\nwant %s", inv, got, want)
		}
	}
}

func FuzzWebdisInts(f *testing.F) {
	f.Add([]byte(`{"EVALSHA":[1700000000000000,-2,1,10,9,-1,100000]}`))
	f.Add([]byte(`{"EVALSHA":[false,"ERR x"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := Ints(nil, body)
		if !ok {
			return
		}
		if want, wantOK := viaRESP(body); !wantOK || !slices.Equal(got, want) {
			t.Fatalf("%q: Ints %v, the long way %v %v", body, got, want, wantOK)
		}
	})
}

// The reply to the largest call a request makes, a JSON-RPC batch's 64
// limit states (2 + 5 integers each), is read both ways.
func TestWebdisIntsLargestBatch(t *testing.T) {
	body := []byte(`{"FCALL":[1700000000000000,-2`)
	for range 64 {
		body = append(body, `,1,1,9,-1,3600000000`...)
	}
	body = append(body, "]}"...)
	ints, ok := Ints(nil, body)
	long, okLong := viaRESP(body)
	if !ok || !okLong || len(ints) != 2+5*64 || !slices.Equal(ints, long) {
		t.Fatalf("Ints %d %v, the long way %d %v", len(ints), ok, len(long), okLong)
	}
}
