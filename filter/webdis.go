package filter

import (
	"encoding/base64"
	"fmt"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Webdis takes a command as the body of a POST: its arguments joined by "/",
// each percent-encoded, with ".raw" appended to get the reply as RESP:
//
//	EVALSHA/<sha>/2/rl%3A%7Bapi%7Calice%7D%3Ablock/.../1.raw
//
// Every byte outside A-Z a-z 0-9 - _ ~ is encoded, "." included, so no
// argument can end the command early or change its format.
func appendWebdisBody(dst []byte, dec *redisproto.Decoder, cmd []byte) ([]byte, error) {
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
	return append(dst, ".raw"...), nil
}

// webdisHeaders are the request headers of every call to Webdis.
func webdisHeaders(r *RedisConfig) [][2]string {
	h := [][2]string{{":method", "POST"}, {":path", r.Path}, {":authority", r.Authority},
		{"content-type", "text/plain"}}
	if r.Username != "" || r.Password != "" {
		auth := base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
		h = append(h, [2]string{"authorization", "Basic " + auth})
	}
	return h
}
