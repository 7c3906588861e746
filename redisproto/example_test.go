package redisproto_test

import (
	"errors"
	"fmt"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Example_evalsha encodes an EVALSHA call and decodes the replies Redis
// may send back, as they arrive in pieces.
func Example_evalsha() {
	// Build the command piecewise: integers need no strconv or allocation.
	buf := redisproto.AppendArrayLen(nil, 5)
	buf = redisproto.AppendBulkString(buf, "EVALSHA")
	buf = redisproto.AppendBulkString(buf, "e0e1f9fa")
	buf = redisproto.AppendBulkInt(buf, 1)
	buf = redisproto.AppendBulkString(buf, "rl:{user-7}")
	buf = redisproto.AppendBulkInt(buf, 60)
	fmt.Printf("%q\n", buf)

	var d redisproto.Decoder
	in := []byte("*3\r\n:1\r\n:99\r\n:1000\r\n-NOSCRIPT No matching script. Please use EVAL.\r\n")

	// The first 9 bytes are only part of a reply: wait for more.
	_, _, err := d.Decode(in[:9])
	fmt.Println(err == redisproto.ErrIncomplete)

	v, n, err := d.Decode(in)
	fmt.Println(v, n, err)
	elems, _ := v.Array()
	allowed, _ := elems[0].Int64()
	fmt.Println("allowed:", allowed == 1)

	v, _, _ = d.Decode(in[n:])
	var rerr *redisproto.Error
	if errors.As(v.Err(), &rerr) && rerr.Prefix() == "NOSCRIPT" {
		fmt.Println("script not loaded:", v)
	}
	// Output:
	// "*5\r\n$7\r\nEVALSHA\r\n$8\r\ne0e1f9fa\r\n$1\r\n1\r\n$11\r\nrl:{user-7}\r\n$2\r\n60\r\n"
	// true
	// [1 99 1000] 20 <nil>
	// allowed: true
	// script not loaded: (error) NOSCRIPT No matching script. Please use EVAL.
}
