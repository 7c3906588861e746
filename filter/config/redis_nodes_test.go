package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRedisNodes(t *testing.T) {
	c, err := Parse(readFixture(t, "testdata/valid/cluster-nodes.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []RedisNode{
		{"redis-0.redis:6379", "outbound|7379||webdis-0.default.svc.cluster.local", "webdis-0"},
		{"10.0.0.2:6379", "webdis-1", "webdis-1"}, // authority defaults to cluster
		{"::1:7002", "webdis-2", "webdis-2"},
	}
	r := c.Redis
	if !reflect.DeepEqual(r.Nodes, want) || r.SlotMapRefresh != time.Minute || r.Cluster != "" || r.Authority != "" || !r.ClusterMode {
		t.Fatalf("redis: %+v", r)
	}

	cfg := func(redis string) string {
		return `{"redis":` + redis + `,"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]}`
	}
	c, err = Parse([]byte(cfg(`{"transport":"webdis","cluster_mode":true,"nodes":[{"address":"a:1","cluster":"w"}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.SlotMapRefresh != 30*time.Second || len(c.Redis.Nodes) != 1 || c.Redis.Path != "/" {
		t.Fatalf("defaults with nodes: %+v", c.Redis)
	}
	c, err = Parse([]byte(cfg(`{"transport":"webdis","cluster_mode":true,"cluster":"w"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.SlotMapRefresh != 0 || c.Redis.Nodes != nil {
		t.Fatalf("without nodes: %+v", c.Redis)
	}

	// Bounds of slot_map_refresh, and 64 nodes.
	for refresh, ok := range map[string]bool{`"1s"`: true, `"10m"`: true, `"999ms"`: false, `"10m1ms"`: false, `30`: false} {
		_, err := Parse([]byte(cfg(`{"transport":"webdis","cluster_mode":true,"nodes":[{"address":"a:1","cluster":"w"}],"slot_map_refresh":` + refresh + `}`)))
		if (err == nil) != ok {
			t.Errorf("slot_map_refresh %s: %v", refresh, err)
		}
	}
	var nodes []string
	for i := 0; i < 64; i++ {
		nodes = append(nodes, `{"address":"n`+itoa(i)+`:6379","cluster":"w`+itoa(i)+`"}`)
	}
	if _, err := Parse([]byte(cfg(`{"transport":"webdis","cluster_mode":true,"nodes":[` + strings.Join(nodes, ",") + `]}`))); err != nil {
		t.Errorf("64 nodes: %v", err)
	}
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func TestHostPort(t *testing.T) {
	for s, ok := range map[string]bool{
		"redis-0.redis:6379": true, "127.0.0.1:7000": true, "::1:6379": true, "node_b.test:1": true, "h:65535": true,
		"h": false, ":6379": false, "h:": false, "h:0": false, "h:65536": false, "h:+1": false, "h:01": false, "h:123456": false,
		"[::1]:6379": false, "h@1:2": false, "a,b:1": false, "h :1": false, "": false, strings.Repeat("h", 256) + ":1": false,
	} {
		if hostPort(s) != ok {
			t.Errorf("hostPort(%q) = %v", s, !ok)
		}
	}
}

// Equal compares every field of RedisConfig: one added later must be
// added to Equal too, or _rules_ entries would pass with different Redis.
func TestRedisEqualFields(t *testing.T) {
	base := RedisConfig{Nodes: []RedisNode{{"a:1", "w", "w"}}}
	v := reflect.ValueOf(&base).Elem()
	for i := 0; i < v.NumField(); i++ {
		o := base
		o.Nodes = []RedisNode{{"a:1", "w", "w"}}
		f := reflect.ValueOf(&o).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Uint8:
			f.SetUint(7)
		case reflect.Slice:
			o.Nodes = []RedisNode{{"a:1", "w", "x"}}
		default:
			t.Fatalf("field %s: kind %s not covered", v.Type().Field(i).Name, f.Kind())
		}
		if base.Equal(&o) || !base.Equal(&base) {
			t.Errorf("Equal misses field %s", v.Type().Field(i).Name)
		}
	}
}
