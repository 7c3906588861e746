module github.com/redisrate/envoy-redis-ratelimit/wasmhost

go 1.25.0

require (
	github.com/redisrate/envoy-redis-ratelimit v0.0.0-00010101000000-000000000000
	github.com/tetratelabs/wazero v1.12.0
	go.yaml.in/yaml/v3 v3.0.4
)

require golang.org/x/sys v0.45.0 // indirect

replace github.com/redisrate/envoy-redis-ratelimit => ..
