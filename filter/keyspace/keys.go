package keyspace

import (
	"encoding/base64"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/ipaddr"
	"github.com/redisrate/envoy-redis-ratelimit/filter/pathnorm"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// Redis keys are built from untrusted request data, so every part is
// escaped or hashed:
//
//	<prefix>{<rule>|<part>|<part>...}:<limit index>   one limit's state
//	<prefix>{<rule>|<part>|<part>...}:block           an operator's block
//
// A part keeps the bytes A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) * + , ; = @ / and
// percent-encodes every other byte, so it never holds { } | : # or control
// bytes and distinct values stay distinct. A part whose encoding exceeds
// MaxPartLen becomes "#" and 22 base64url characters of its SHA-256's
// first 128 bits. The whole key therefore stays under about 700 bytes, and all keys
// of one rule and key share a hash tag, so one call never spans Redis
// Cluster slots.
//
// MaxPartLen bounds an encoded part.
const MaxPartLen = 64

var safeByte = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=@/") {
		t[c] = true
	}
	return t
}()

// AppendPart appends the encoded form of v, a key part's value, to dst:
// "user 42" is "user%2042"; a value of more than 64 bytes once encoded
// is "#" and 22 characters of its hash.
func AppendPart(dst []byte, v string) []byte {
	n := 0
	for i := 0; i < len(v) && n <= MaxPartLen; i++ {
		if safeByte[v[i]] {
			n++
		} else {
			n += 3
		}
	}
	if n > MaxPartLen {
		sum := sum256(v)
		dst = append(dst, '#')
		return base64.RawURLEncoding.AppendEncode(dst, sum[:16])
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(v); i++ {
		c := v[i]
		if safeByte[c] {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}

// Canonical is the form of key part p's value that goes into the key, as
// a request's would: ratelimitctl passes the values an operator types. A
// client_ip is grouped as a request's is (GroupIP): "203.0.113.7" or
// "203.0.113.0/24" under ipv4_prefix_len 24 is "203.0.113.0/24". A path is
// normalized as a request's is ("/api//x" is "/api/x"). Other sources keep
// v.
func Canonical(p *config.KeyPart, v string) (string, error) {
	switch p.Source {
	case config.SourcePath:
		return pathnorm.Normalize(v), nil
	case config.SourceClientIP:
	default:
		return v, nil
	}
	if ip, ok := ipaddr.Parse(v); ok {
		return GroupIP(p, ip), nil
	}
	// A network is accepted when the rule groups at least as coarsely:
	// the key holds it, or the network that contains it. A mapped
	// "::ffff:a.b.c.d/n" is an IPv4 network of n-96 bits.
	if ip, bits, ok := ipaddr.ParsePrefix(v); ok {
		want := ip.BitLen()
		if b := prefixOf(p, ip); b.Set {
			want = b.Bits
		}
		if bits < want {
			return "", format.Errorf("%q is a network wider than the rule's /%d", v, want)
		}
		return GroupIP(p, ip), nil
	}
	return "", format.Errorf("%q is not an IP address or network", v)
}

// GroupIP is a client address as a key holds it: the whole address, or
// the network of the configured prefix length in CIDR form, such as
// "203.0.113.0/24" or "2001:db8:1:2::/64". ipaddr's addresses are
// normalized: an IPv4-mapped IPv6 address counts as IPv4, and a zone is
// dropped. Requests and Canonical both use it.
func GroupIP(p *config.KeyPart, ip ipaddr.Addr) string {
	bits := prefixOf(p, ip)
	if !bits.Set {
		return ip.String()
	}
	pfx, ok := ip.Prefix(bits.Bits)
	if !ok { // bits out of range: the parser allows none
		return ip.String()
	}
	return pfx.String()
}

// prefixOf is the grouping of ip's family.
func prefixOf(p *config.KeyPart, ip ipaddr.Addr) config.PrefixLen {
	if ip.Is4() {
		return p.IPv4Prefix
	}
	return p.IPv6Prefix
}
