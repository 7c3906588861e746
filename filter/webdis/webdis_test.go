package webdis

import (
	"fmt"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

func TestWebdisReply(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{`{"EVALSHA":[1700000000000000,-2,1,16,15,-1,2000000]}`, "*7\r\n:1700000000000000\r\n:-2\r\n:1\r\n:16\r\n:15\r\n:-1\r\n:2000000\r\n", ""},
		{`{"EVALSHA":[false,"NOSCRIPT No matching script. Please use EVAL."]}`, "-NOSCRIPT No matching script. Please use EVAL.\r\n", ""},
		{`{"EVAL":["a",null,[1]]}`, "*3\r\n$1\r\na\r\n$-1\r\n*1\r\n:1\r\n", ""},
		{`{"EVAL":1.5}`, "", "webdis: number 1.5 is not an integer"},
		{`{"A":1,"B":2}`, "", "webdis: reply is not a one-command object"},
		{`<html>`, "", "webdis: reply is not JSON"},
	} {
		got, err := Reply(nil, []byte(tc.in))
		if string(got) != tc.want || errString(err) != tc.err {
			t.Errorf("%s: got %q, %v", tc.in, got, err)
		}
	}
}

func TestWebdisBody(t *testing.T) {
	var dec redisproto.Decoder
	cmd := redisproto.AppendCommand(nil, "EVALSHA", "abc", "1", "rl:{api|u.1}:0", "x/y.raw")
	got, err := appendBody(nil, &dec, cmd)
	if want := "EVALSHA/abc/1/rl%3A%7Bapi%7Cu%2E1%7D%3A0/x%2Fy%2Eraw"; err != nil || string(got) != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

// appendBody appends the Webdis body of a RESP command, decoding it and
// re-encoding each argument as the package doc says: the oracle for
// algorithms.WebdisPath.
func appendBody(dst []byte, dec *redisproto.Decoder, cmd []byte) ([]byte, error) {
	v, _, err := dec.Decode(cmd)
	if err != nil {
		return dst, err
	}
	args, err := v.Array()
	if err != nil {
		return dst, err
	}
	const hex = "0123456789ABCDEF"
	for i, a := range args {
		b, err := a.Bytes()
		if err != nil {
			return dst, fmt.Errorf("argument %d: %w", i, err)
		}
		if i > 0 {
			dst = append(dst, '/')
		}
		for _, c := range b {
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '~' {
				dst = append(dst, c)
			} else {
				dst = append(dst, '%', hex[c>>4], hex[c&15])
			}
		}
	}
	return dst, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
