module github.com/redisrate/envoy-redis-ratelimit/cmd/ratelimitctl

go 1.25.0

require (
	github.com/redis/go-redis/v9 v9.17.2
	github.com/redisrate/envoy-redis-ratelimit v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/tidwall/gjson v1.18.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
)

replace github.com/redisrate/envoy-redis-ratelimit => ../..
