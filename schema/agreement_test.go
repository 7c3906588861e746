package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/deploy"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

var (
	flagConfigs = flag.Int("schema.configs", 5000, "how many configurations TestGeneratedConfigsAgree generates")
	flagSeed    = flag.Uint64("schema.seed", 1, "the seed of TestGeneratedConfigsAgree's generator")
)

// verdict is how the parser and the schema judged one configuration.
type verdict struct {
	parserErr, schemaErr error
	exception            *exception // the disagreement is this known exception
}

func (v verdict) agree() bool { return (v.parserErr == nil) == (v.schemaErr == nil) }

// outcome is "accepted", "rejected", "exception <name>" or "DISAGREEMENT".
func (v verdict) outcome() string {
	switch {
	case v.agree() && v.parserErr == nil:
		return "accepted"
	case v.agree():
		return "rejected"
	case v.exception != nil:
		return "exception " + v.exception.name
	}
	return "DISAGREEMENT"
}

func (v verdict) String() string {
	return fmt.Sprintf("%s (parser: %v; schema: %v)", v.outcome(), v.parserErr, oneLine(v.schemaErr))
}

func oneLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// judge runs both on a configuration and explains a disagreement by a named
// exception if one applies.
func judge(raw []byte) verdict {
	_, perr := config.Parse(raw)
	v := verdict{parserErr: perr, schemaErr: Validate(raw)}
	if v.agree() {
		return v
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&doc) // the schema side decoded it, so it is JSON
	for i := range exceptions {
		if e := &exceptions[i]; e.explains(raw, doc, perr) {
			v.exception = e
			return v
		}
	}
	return v
}

func fixtures(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "filter", "config", "testdata", dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in filter/config/testdata/%s: %v", dir, err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[dir+"/"+filepath.Base(f)] = data
	}
	return out
}

func TestSchemaCompiles(t *testing.T) {
	if _, err := Compile(); err != nil {
		t.Fatal(err)
	}
}

// Every valid fixture, and every plugin configuration of the deployment
// files, passes the schema.
func TestSchemaAcceptsValidConfigs(t *testing.T) {
	for name, data := range fixtures(t, "valid") {
		if err := Validate(data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	cfgs, err := deploy.PluginConfigs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		if err := Validate(c.JSON); err != nil {
			t.Errorf("%s, %s: %v", c.File, c.Where, err)
		}
	}
	t.Logf("%d deployment plugin configurations pass", len(cfgs))
}

// For every fixture, the parser accepts exactly when the schema does, except
// for the named exceptions.
func TestFixturesAgree(t *testing.T) {
	n := map[string]int{}
	for _, dir := range []string{"valid", "invalid"} {
		for name, data := range fixtures(t, dir) {
			v := judge(data)
			n[v.outcome()]++
			switch {
			case dir == "valid" && v.outcome() != "accepted":
				t.Errorf("%s: %v", name, v)
			case v.outcome() == "DISAGREEMENT":
				t.Errorf("%s: %v", name, v)
			case v.exception != nil:
				t.Logf("%s: %s", name, v.outcome())
			}
		}
	}
	t.Logf("fixtures: %v", n)
}

// A few thousand configurations generated from the valid fixtures and the
// deployment files: the parser accepts exactly when the schema does, except
// for the named exceptions.
func TestGeneratedConfigsAgree(t *testing.T) {
	var seeds []any
	add := func(name string, data []byte) {
		tree, err := parseTree(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		seeds = append(seeds, tree)
	}
	for _, name := range slices.Sorted(maps.Keys(fixtures(t, "valid"))) {
		add(name, fixtures(t, "valid")[name])
	}
	cfgs, err := deploy.PluginConfigs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfgs {
		add(c.File, c.JSON)
	}

	g := &generator{rng: rand.New(rand.NewPCG(*flagSeed, 0x5eed))}
	var accepted, rejected, disagreements int
	excs, ops := map[string]int{}, map[string]int{}
	for i := 0; i < *flagConfigs; i++ {
		tree := cloneTree(seeds[g.rng.IntN(len(seeds))])
		applied := g.mutate(tree)
		for _, op := range applied {
			ops[op]++
		}
		raw := encodeTree(tree)
		v := judge(raw)
		switch {
		case v.exception != nil:
			excs[v.exception.name]++
		case !v.agree():
			if disagreements++; disagreements <= 10 {
				t.Errorf("config %d (mutations %v): %v\n%s", i, applied, v, raw)
			}
		case v.parserErr == nil:
			accepted++
		default:
			rejected++
		}
	}
	t.Logf("generated %d (seed %d): accepted %d, rejected %d, named exceptions %d %v, disagreements %d",
		*flagConfigs, *flagSeed, accepted, rejected, sum(excs), excs, disagreements)
	t.Logf("mutations applied: %v", ops)
	// The generator must keep producing both outcomes, or the test proves
	// little.
	if accepted < *flagConfigs/10 || rejected < *flagConfigs/3 {
		t.Errorf("accepted %d, rejected %d of %d: the generator has drifted", accepted, rejected, *flagConfigs)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Each named exception is a real disagreement, shown by its example, and
// none applies to the valid fixtures.
func TestExceptionsAreReal(t *testing.T) {
	for _, e := range exceptions {
		t.Run(e.name, func(t *testing.T) {
			raw := []byte(e.example)
			_, perr := config.Parse(raw)
			serr := Validate(raw)
			if e.parserAccepts != (perr == nil) || e.parserAccepts == (serr == nil) {
				t.Fatalf("not a disagreement of this direction: parser %v, schema %v", perr, oneLine(serr))
			}
			if v := judge(raw); v.exception == nil || v.exception.name != e.name {
				t.Fatalf("judged %v", v)
			}
			t.Logf("parser: %v; schema: %s. Why: %s", perr, oneLine(serr), e.why)
		})
	}
	for name, data := range fixtures(t, "valid") {
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		for _, e := range exceptions {
			if e.applies(data, doc) {
				t.Errorf("exception %s applies to the valid fixture %s", e.name, name)
			}
		}
	}
}

// The tree codec the generator uses writes back what it reads, repeated
// keys and number spellings included.
func TestTreeRoundTrip(t *testing.T) {
	in := `{"a":1,"a":[1.0,-0,2e3,"x\u00e9",true,null,{}],"b":{"c":[]}}`
	tree, err := parseTree([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if out := string(encodeTree(cloneTree(tree))); out != `{"a":1,"a":[1.0,-0,2e3,"xé",true,null,{}],"b":{"c":[]}}` {
		t.Fatalf("got %s", out)
	}
	if !hasDuplicateKey([]byte(in)) || hasDuplicateKey([]byte(`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`)) {
		t.Fatal("hasDuplicateKey")
	}
	if !hasIntegralDecimal([]byte(`[1, 2.0]`)) || hasIntegralDecimal([]byte(`[1, 2.5, -0]`)) {
		t.Fatal("hasIntegralDecimal")
	}
}
