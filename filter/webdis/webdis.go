// Package webdis is the codec for Webdis, the HTTP gateway to Redis that
// the filter's webdis transport calls through the proxy's HTTP callout.
//
// A command is the body of a POST: its arguments joined by "/", each
// percent-encoded (algorithms.WebdisPath frames it so):
//
//	FCALL/ratelimit_<v>_decide/2/rl%3A%7Bapi%7Calice%7D%3Ablock/.../1
//
// Every byte outside A-Z a-z 0-9 - _ ~ is encoded, "." included, so no
// argument can end the command early or pick an output format. The reply is
// Webdis's JSON, {"FCALL":[...]}, which Ints reads directly in the usual
// case and Reply otherwise turns back into RESP: Webdis 0.1.9's raw (RESP)
// output mangles arrays of integers.
package webdis

import (
	"encoding/base64"
	"errors"
	"strconv"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Reply appends to dst the RESP form of a Webdis JSON reply: numbers
// become integers, strings bulk strings, null a null bulk string, arrays
// arrays, and Webdis's error form [false, "message"] an error reply. body
// is checked by package jsonbound first: nested deeper than
// jsonbound.MaxDepth, it is not JSON; a reply nested deeper than 4 arrays
// is an error too.
func Reply(dst, body []byte) ([]byte, error) {
	if !jsonbound.Valid(body) {
		return dst, errors.New("webdis: reply is not JSON")
	}
	var v jsonvalue.Value
	n := 0
	jsonvalue.ParseBytes(body).ForEach(func(_, val jsonvalue.Value) bool {
		v, n = val, n+1
		return true
	})
	if n != 1 {
		return dst, errors.New("webdis: reply is not a one-command object")
	}
	if arr := v.Array(); v.IsArray() && len(arr) == 2 && arr[0].Type == jsonvalue.False && arr[1].Type == jsonvalue.String {
		return redisproto.AppendError(dst, arr[1].Str), nil
	}
	return appendJSONValue(dst, v, 0)
}

func appendJSONValue(dst []byte, v jsonvalue.Value, depth int) ([]byte, error) {
	switch {
	case depth > 4:
		return dst, errors.New("webdis: reply nested too deep")
	case v.IsArray():
		arr := v.Array()
		dst = redisproto.AppendArrayLen(dst, len(arr))
		var err error
		for _, e := range arr {
			if dst, err = appendJSONValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case v.Type == jsonvalue.Number:
		n, err := strconv.ParseInt(v.Raw, 10, 64)
		if err != nil {
			return dst, format.Errorf("webdis: number %s is not an integer", v.Raw)
		}
		return redisproto.AppendInt(dst, n), nil
	case v.Type == jsonvalue.String:
		return redisproto.AppendBulkString(dst, v.Str), nil
	case v.Type == jsonvalue.Null:
		return redisproto.AppendNullBulk(dst), nil
	}
	return dst, format.Errorf("webdis: unexpected JSON %s", v.Raw)
}

// Headers are the request headers of every call to Webdis: a POST of
// text/plain to path at authority, with HTTP Basic authentication when a
// username or password is set.
func Headers(path, authority, username, password string) [][2]string {
	h := [][2]string{{":method", "POST"}, {":path", path}, {":authority", authority},
		{"content-type", "text/plain"}}
	if username != "" || password != "" {
		auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
		h = append(h, [2]string{"authorization", "Basic " + auth})
	}
	return h
}

// Ints reads the script's usual reply as Webdis renders it,
// {"FCALL":[1,-2,...]}, appending its integers to dst without allocating
// beyond dst's growth. ok is false for anything else (an error, other
// JSON), which Reply handles.
func Ints(dst []int64, body []byte) ([]int64, bool) {
	i := 0
	if len(body) < 2 || body[0] != '{' || body[1] != '"' {
		return dst, false
	}
	for i = 2; i < len(body) && 'A' <= body[i] && body[i] <= 'Z'; i++ {
	}
	if i+3 > len(body) || body[i] != '"' || body[i+1] != ':' || body[i+2] != '[' {
		return dst, false
	}
	i += 3
	for {
		v, next, ok := algorithms.ParseIntAt(body, i, ',', 0)
		if !ok {
			if v, next, ok = algorithms.ParseIntAt(body, i, ']', '}'); !ok {
				return dst, false
			}
			dst = append(dst, v)
			for ; next < len(body) && (body[next] == '\n' || body[next] == '\r' || body[next] == ' '); next++ {
			}
			return dst, next == len(body)
		}
		dst = append(dst, v)
		i = next
	}
}
