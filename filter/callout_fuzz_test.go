package filter

import (
	"slices"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// FuzzScriptReplyValues fuzzes the parser every Redis reply goes through
// (scriptReply.values, with flatInts's in-place read): any bytes give
// integers or an error, never a panic, and when they give integers, they
// are those the full decoder reads.
func FuzzScriptReplyValues(f *testing.F) {
	for _, seed := range []string{
		"*7\r\n:1700000000000000\r\n:-2\r\n:1\r\n:10\r\n:9\r\n:-1\r\n:100000\r\n",
		":7\r\n", "-NOSCRIPT No matching script\r\n", "*2\r\n$1\r\n1\r\n:2\r\n",
		"*1\r\n*1\r\n:1\r\n", "*-1\r\n", "*3\r\n:1\r\n:2\r\n", "*2\r\n:1\r\n:2\r\nx",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c callouts
		c.init()
		r := scriptReply{ok: true, resp: b}
		got, err := r.values(&c)
		if err != nil {
			return
		}
		v, used, derr := redisproto.Decode(b)
		if derr != nil || used != len(b) {
			t.Fatalf("%q: values %v, but the decoder: %v (%d of %d bytes)", b, got, derr, used, len(b))
		}
		var want []int64
		if v.Kind == redisproto.KindInteger {
			want = []int64{v.Int}
		} else {
			elems, _ := v.Array()
			for _, e := range elems {
				n, err := e.Int64()
				if err != nil {
					return // a gateway's bulk string of digits, which values reads as its integer
				}
				want = append(want, n)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q: values %v, decoder %v", b, got, want)
		}
	})
}
