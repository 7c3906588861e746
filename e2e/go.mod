module github.com/redisrate/envoy-redis-ratelimit/e2e

go 1.25.0

require (
	github.com/alicebob/miniredis/v2 v2.35.0
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/proxy-wasm/proxy-wasm-go-sdk v0.0.0-20260105142703-44c7d5847745
	github.com/redis/go-redis/v9 v9.17.2
	github.com/redisrate/envoy-redis-ratelimit v0.0.0-00010101000000-000000000000
	github.com/redisrate/envoy-redis-ratelimit/deploy v0.0.0-00010101000000-000000000000
	github.com/redisrate/envoy-redis-ratelimit/wasmhost v0.0.0-00010101000000-000000000000
	github.com/tetratelabs/wazero v1.12.0
	github.com/tidwall/gjson v1.18.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/redisrate/envoy-redis-ratelimit => ..

replace github.com/redisrate/envoy-redis-ratelimit/wasmhost => ../wasmhost

replace github.com/redisrate/envoy-redis-ratelimit/deploy => ../deploy

replace github.com/redisrate/envoy-redis-ratelimit/schema => ../schema
