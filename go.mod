module github.com/redisrate/envoy-redis-ratelimit

go 1.25.0

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/proxy-wasm/proxy-wasm-go-sdk v0.0.0-20260105142703-44c7d5847745
	github.com/redis/go-redis/v9 v9.17.2
	github.com/tidwall/gjson v1.18.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
)
