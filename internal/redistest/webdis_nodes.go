package redistest

import (
	"net"
	"strconv"
	"testing"
)

// StartWebdisPerNode starts one Webdis (the system's, 0.1.9 here) per
// node of c, replicas included, each with redis_host/port of its node and
// redis_auth [user, pass], or pass alone when user is "". Webdis 0.1.9
// knows only the password form, which logs in as the default user: it
// ignores the array, and its commands then get -NOAUTH (seen here), so
// with 0.1.9 pass user "". Each takes basic auth WebdisUser:WebdisPassword
// and enables only the commands in enabled (Webdis matches each by
// prefix, and ignores subcommands); nil enables every command without
// basic auth. It returns node Addr -> Webdis "host:port"; each Webdis is
// stopped at cleanup, and a node's crash makes its Webdis answer 503.
func StartWebdisPerNode(t testing.TB, c *Cluster, user, pass string, enabled []string) map[string]string {
	t.Helper()
	out := make(map[string]string, len(c.Nodes))
	for _, s := range c.Nodes {
		host, port, _ := net.SplitHostPort(s.Addr)
		p, _ := strconv.Atoi(port)
		wc := WebdisConfig(host, p, "")
		switch {
		case user != "":
			wc["redis_auth"] = []string{user, pass}
		case pass != "":
			wc["redis_auth"] = pass
		}
		if enabled == nil {
			delete(wc, "acl")
		} else {
			wc["acl"] = []any{
				map[string]any{"disabled": []string{"*"}},
				map[string]any{"http_basic_auth": WebdisUser + ":" + WebdisPassword, "enabled": enabled},
			}
		}
		out[s.Addr] = RunWebdis(t, wc)
	}
	return out
}
