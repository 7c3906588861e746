package deploy

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// With users-webdis.acl, default is Webdis's login with the filter's
// rights, and the append-only file is replayed as default (Redis 7.0,
// Valkey 8.0: redis/redis#14541), whose EXEC checks default's rights. The
// filter's writes, a function's MULTI ... EXEC, survive a restart with
// their expiry (the file holds PEXPIRE as PEXPIREAT, which the rights
// grant); an operator's plain command (a tier here) is not checked.
func TestShippedRedisConfWebdisUsers(t *testing.T) {
	t.Parallel()
	webdis := redistest.Options{Username: "default", Password: "webdis-pw"}
	s := startConfServer(t, renderUsers(t, "users-webdis.acl", filterUser.Password, operator.Password, webdis.Password)+
		"user ttl-reader on >"+confReader.Password+" resetchannels -@all +pttl +get +ping ~rl:*\n")
	op := s.client(operator)
	defer op.Close()
	if err := redistest.LoadLibrary(op); err != nil {
		t.Fatal(err)
	}
	funnel, _ := algorithms.NewFunnel(10, 10, time.Hour)
	charge := func() {
		c := s.client(webdis)
		defer c.Close()
		err := c.With(func(conn *redistest.Conn) error {
			_, err := conn.Decode(conn.RoundTrip(algorithms.AppendFCall(nil, []string{"rl:{w|u}:block"},
				[]algorithms.Check{{Key: "rl:{w|u}:0", Limit: funnel, Cost: 3}})))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	charge()
	if _, err := op.Do("SET", "rl:{w|u}:tier", "pro"); err != nil {
		t.Fatal(err)
	}
	ttl := func() (int64, string) {
		r := s.client(redistest.Options{Username: "ttl-reader", Password: confReader.Password})
		defer r.Close()
		pttl, err := r.Int("PTTL", "rl:{w|u}:0")
		if err != nil {
			t.Fatal(err)
		}
		tier, _ := r.Text("GET", "rl:{w|u}:tier")
		return pttl, tier
	}
	if pttl, tier := ttl(); pttl <= 0 || tier != "pro" {
		t.Fatalf("before the restart: PTTL %d, tier %q", pttl, tier)
	}
	s.stop()
	s.start()
	pttl, tier := ttl()
	if pttl <= 0 {
		t.Errorf("after a restart, the funnel's state has PTTL %d: want its expiry kept (PEXPIREAT granted)\n%s", pttl, s.log())
	}
	if tier != "pro" {
		t.Errorf("after a restart, the tier is %q: want the operator's pro kept", tier)
	}
	s.stop()
	if strings.Contains(s.log(), "AOF-loading-client") {
		t.Errorf("the append-only file was not replayed whole:\n%s", s.log())
	}
}
