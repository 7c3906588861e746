package config

import (
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

func parseRedis(v jsonvalue.Value, path string) (RedisConfig, error) {
	r := RedisConfig{}
	if !v.Exists() {
		return r, errAt(path, "required")
	}
	o, err := fields(v, path, "transport", "cluster", "username", "password", "timeout", "database", "key_prefix", "cluster_mode", "authority", "path",
		"buffer_flush_timeout", "command", "nodes", "slot_map_refresh")
	if err != nil {
		return r, err
	}
	transport, err := enum(o["transport"], path+".transport", "redis_abi", "redis_abi", "webdis")
	if err != nil {
		return r, err
	}
	if transport == "webdis" {
		r.Transport = TransportWebdis
	}
	if r.Cluster, err = str(o["cluster"], path+".cluster", ""); err != nil {
		return r, err
	}
	if r.Cluster == "" && !o["nodes"].Exists() {
		return r, errAt(path+".cluster", "required")
	}
	if r.Username, err = str(o["username"], path+".username", ""); err != nil {
		return r, err
	}
	if r.Password, err = str(o["password"], path+".password", ""); err != nil {
		return r, err
	}
	if r.Username != "" && r.Password == "" {
		return r, errAt(path+".password", "required when username is set")
	}
	if r.Timeout, err = duration(o["timeout"], path+".timeout", 200*time.Millisecond); err != nil {
		return r, err
	}
	if r.Timeout < time.Millisecond || r.Timeout > time.Minute {
		return r, errAt(path+".timeout", "must be >= 1ms and <= 1m")
	}
	db, err := integer(o["database"], path+".database", 0, 0, 1<<16)
	if err != nil {
		return r, err
	}
	r.Database = int(db)
	if r.Prefix, err = str(o["key_prefix"], path+".key_prefix", "rl:"); err != nil {
		return r, err
	}
	if r.Prefix == "" {
		// Without a prefix the filter's keys mix with every other
		// application's, and ratelimitctl would list and delete those.
		return r, errAt(path+".key_prefix", "must not be empty: it keeps the filter's keys apart from other applications' keys in the same database")
	}
	if len(r.Prefix) > 64 || containsAny(r.Prefix, "{}") {
		return r, errAt(path+".key_prefix", "must be at most 64 bytes without { or }")
	}
	if r.ClusterMode, err = boolean(o["cluster_mode"], path+".cluster_mode", false); err != nil {
		return r, err
	}
	command, err := enum(o["command"], path+".command", "fcall", "fcall", "evalsha")
	if err != nil {
		return r, err
	}
	if command == "evalsha" {
		r.Command = algorithms.EvalSHA
	}
	if err := parseNodes(&r, o, path); err != nil {
		return r, err
	}
	if r.Transport == TransportRedisABI && !o["buffer_flush_timeout"].Exists() && !o["authority"].Exists() && !o["path"].Exists() {
		return r, nil // a plain redis_abi: nothing more to read or refuse
	}
	if err := parseRedisABI(&r, o, path); err != nil {
		return r, err
	}
	return r, parseWebdis(&r, o, path)
}

// parseWebdis reads the fields that only the webdis transport has.
func parseWebdis(r *RedisConfig, o map[string]jsonvalue.Value, path string) error {
	var err error
	if r.Transport != TransportWebdis {
		for _, f := range []string{"authority", "path"} {
			if o[f].Exists() {
				return errAt(path+"."+f, "only allowed with transport webdis")
			}
		}
		return nil
	}
	if o["database"].Exists() {
		return errAt(path+".database", "not allowed with transport webdis: set it in Webdis's configuration")
	}
	if r.Authority, err = str(o["authority"], path+".authority", r.Cluster); err != nil {
		return err
	}
	if r.Path, err = str(o["path"], path+".path", "/"); err != nil {
		return err
	}
	if !strings.HasPrefix(r.Path, "/") || !strings.HasSuffix(r.Path, "/") {
		return errAt(path+".path", "must start and end with /")
	}
	return nil
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}
