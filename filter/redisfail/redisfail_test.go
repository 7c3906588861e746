package redisfail

import (
	"strings"
	"testing"
)

// Webdis's own 503 has no body: it cannot reach Redis behind it (checked
// with webdis 0.1.9 in front of a closed port). The proxy's own 5xx on the
// way has one, quoted; another 5xx with no body, and a 4xx, is the status
// alone.
func TestWebdisFailure(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{503, "", "webdis answered HTTP 503: webdis cannot reach Redis behind it"},
		{503, "upstream connect error or disconnect/reset before headers. reset reason: connection failure",
			`webdis answered HTTP 503: "upstream connect error or disconnect/reset before headers. reset reason: connect"`},
		{503, "no healthy upstream\n", `webdis answered HTTP 503: "no healthy upstream"`},
		{504, "upstream request timeout", `webdis answered HTTP 504: "upstream request timeout"`},
		{500, "a\x00b\xffc\"", `webdis answered HTTP 500: "a?b?c\""`},
		{500, "", "webdis answered HTTP 500"},
		{502, " \n", "webdis answered HTTP 502"},
		{403, "", "webdis answered HTTP 403"},
		{404, "not found", "webdis answered HTTP 404"},
	} {
		if got := WebdisFailure(tc.status, []byte(tc.body)).Error(); got != tc.want {
			t.Errorf("%d %q: %q, want %q", tc.status, tc.body, got, tc.want)
		}
	}
	d := Describe(WebdisFailure(503, nil))
	if want := "unreachable (webdis answered HTTP 503: webdis cannot reach Redis behind it): check that Redis runs"; !strings.HasPrefix(d, want) {
		t.Errorf("Describe: %q, want it to start %q", d, want)
	}
	if d := Describe(WebdisFailure(500, nil)); d != "unreachable (webdis answered HTTP 500)" {
		t.Errorf("Describe of a 500 with no body: %q; only a 503 says Redis is behind", d)
	}
	if d := Describe(WebdisFailure(503, []byte("no healthy upstream"))); d != `unreachable (webdis answered HTTP 503: "no healthy upstream")` {
		t.Errorf("Describe of the proxy's 503: %q", d)
	}
}

// Whatever the body, the message is bounded and printable.
func FuzzWebdisFailure(f *testing.F) {
	f.Add(503, []byte(""))
	f.Add(503, []byte("no healthy upstream"))
	f.Add(500, []byte("\x00\xff\n\"\\"))
	f.Add(403, []byte("x"))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		msg := WebdisFailure(status, body).Error()
		if len(msg) > 64+4*maxBody {
			t.Fatalf("%d bytes: %q", len(msg), msg)
		}
		for _, c := range []byte(msg) {
			if c < ' ' || c > '~' {
				t.Fatalf("unprintable byte in %q", msg)
			}
		}
	})
}

// A Redis Cluster slot that could not serve a call, and the node a call
// went to, as the health line says them.
func TestDescribeSlotErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&SlotError{Slot: 15891, Kind: SlotMigrating, Reply: "TRYAGAIN Multiple keys request during rehashing of slot"},
			"held a migrating slot's call past redis.timeout (slot 15891 is migrating (TRYAGAIN Multiple keys request during rehashing of slot)): migrate slots in small batches"},
		{&SlotError{Slot: -1, Kind: SlotMigrating, Reply: "TRYAGAIN x"}, "held a migrating slot's call past redis.timeout (the slot is migrating (TRYAGAIN x))"},
		{&SlotError{Slot: 7, Kind: SlotDown, Reply: "CLUSTERDOWN Hash slot not served"},
			"is down (slot 7: the cluster is down (CLUSTERDOWN Hash slot not served)): the cluster lost a master"},
		{&SlotError{Slot: 7, Kind: SlotRedirects, Reply: "MOVED 7 10.0.0.2:6379"}, "kept redirecting the call (slot 7 still redirected after 3 moves (MOVED 7 10.0.0.2:6379))"},
		{&SlotError{Slot: 7, Kind: SlotUnlisted, Reply: "10.9.9.9:6379"},
			"has a node the filter does not know (slot 7 is served by node 10.9.9.9:6379, not in redis.nodes): add it to redis.nodes"},
		{&NodeError{Node: "10.0.0.1:6379 through webdis-0", Err: WebdisFailure(503, nil)},
			"unreachable (node 10.0.0.1:6379 through webdis-0: webdis answered HTTP 503: webdis cannot reach Redis behind it): check that Redis runs"},
	} {
		if got := Describe(tc.err); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v:\n %q, want it to start\n %q", tc.err, got, tc.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"TRYAGAIN ok":            "TRYAGAIN ok",
		"a\nb\x00c\xff":          "a?b?c?",
		strings.Repeat("x", 100): strings.Repeat("x", 80),
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
