package algorithms

import (
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// During a rolling upgrade the proxies of the old build and of the new one
// decide on the same keys at once. The old build here is 13bdab3, the last
// that ran the code as one EVALSHA script; its script is in testdata. With
// mixOldBuild set, every conn sends about half the library's calls through
// that script instead (EVAL, with the same arguments), and the property
// tests must still agree with the Model exactly, call by call: neither
// build may read or write the state in a way the other does not.
var mixOldBuild struct {
	sync.Mutex
	on   bool
	seed uint64
}

// oldBuild rewrites a conn's calls.
type oldBuild struct {
	source string
	rng    *rand.Rand
	sent   int // calls the old script ran
}

var oldScript = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("testdata/script-13bdab3.lua")
	return string(b), err
})

func newOldBuild(t testing.TB) *oldBuild {
	mixOldBuild.Lock()
	defer mixOldBuild.Unlock()
	if !mixOldBuild.on {
		return nil
	}
	src, err := oldScript()
	if err != nil {
		t.Fatal(err)
	}
	mixOldBuild.seed++
	o := &oldBuild{source: src, rng: rand.New(rand.NewPCG(mixOldBuild.seed, 3))}
	t.Cleanup(func() {
		if o.sent == 0 {
			t.Error("no call went through the old build's script")
		}
	})
	return o
}

// send sends cmd, or, for the old build, the same call as EVAL of its
// script. The library's settle and decide take the arguments the old
// script took.
func (c *conn) send(cmd []byte) ([]byte, error) {
	if c.old == nil || c.old.rng.IntN(2) == 0 {
		return c.c.RoundTrip(cmd)
	}
	v, _, err := redisproto.Decode(cmd)
	if err != nil {
		return nil, err
	}
	elems, _ := v.Array()
	args := make([]string, len(elems))
	for i := range elems {
		args[i], _ = elems[i].Text()
	}
	if len(args) < 2 || args[0] != "FCALL" || !strings.HasPrefix(args[1], Library.Name+"_") {
		return c.c.RoundTrip(cmd)
	}
	c.old.sent++
	args[0], args[1] = "EVAL", c.old.source
	return c.c.RoundTrip(redisproto.AppendCommand(nil, args...))
}

// TestOldAndNewBuildsShareState runs the property tests with calls of the
// old build's script and of the library interleaved on the same keys.
func TestOldAndNewBuildsShareState(t *testing.T) {
	mixOldBuild.Lock()
	mixOldBuild.on = true
	mixOldBuild.Unlock()
	t.Cleanup(func() { // after the parallel subtests
		mixOldBuild.Lock()
		mixOldBuild.on = false
		mixOldBuild.Unlock()
	})
	t.Run("plain", TestScriptMatchesModel)
	t.Run("settles", TestScriptMatchesModelWithSettles)
	t.Run("choices", TestScriptMatchesModelWithChoices)
	t.Run("leases", TestScriptMatchesModelWithLeases)
	t.Run("throttles", TestScriptMatchesModelWithThrottles)
}
