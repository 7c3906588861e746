module github.com/redisrate/envoy-redis-ratelimit/schema

go 1.25.0

require (
	github.com/redisrate/envoy-redis-ratelimit v0.0.0-00010101000000-000000000000
	github.com/redisrate/envoy-redis-ratelimit/deploy v0.0.0-00010101000000-000000000000
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2
)

require (
	github.com/kr/text v0.2.0 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/text v0.37.0 // indirect
)

replace github.com/redisrate/envoy-redis-ratelimit => ..

replace github.com/redisrate/envoy-redis-ratelimit/deploy => ../deploy

replace github.com/redisrate/envoy-redis-ratelimit/wasmhost => ../wasmhost
