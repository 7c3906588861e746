module github.com/redisrate/envoy-redis-ratelimit

go 1.25.0

require github.com/proxy-wasm/proxy-wasm-go-sdk v0.0.0-20260105142703-44c7d5847745
