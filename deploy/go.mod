module github.com/redisrate/envoy-redis-ratelimit/deploy

go 1.25.0

require (
	github.com/envoyproxy/go-control-plane/envoy v1.39.0
	github.com/google/go-containerregistry v0.22.1
	github.com/redisrate/envoy-redis-ratelimit v0.0.0-00010101000000-000000000000
	github.com/redisrate/envoy-redis-ratelimit/schema v0.0.0-00010101000000-000000000000
	github.com/redisrate/envoy-redis-ratelimit/wasmhost v0.0.0-00010101000000-000000000000
	go.yaml.in/yaml/v3 v3.0.4
	google.golang.org/protobuf v1.36.11
	istio.io/api v1.31.1
)

require (
	cel.dev/expr v0.25.1 // indirect
	github.com/cncf/xds/go v0.0.0-20260202195803-dba9d589def2 // indirect
	github.com/docker/cli v29.7.2+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.3 // indirect
	github.com/envoyproxy/protoc-gen-validate v1.3.3 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	github.com/rogpeppe/go-internal v1.12.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260414002931-afd174a4e478 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260414002931-afd174a4e478 // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
	gotest.tools/v3 v3.5.2 // indirect
)

replace github.com/redisrate/envoy-redis-ratelimit => ..

replace github.com/redisrate/envoy-redis-ratelimit/wasmhost => ../wasmhost

replace github.com/redisrate/envoy-redis-ratelimit/schema => ../schema
