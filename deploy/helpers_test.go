package deploy

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/schema"
)

// root is the repository root, seen from this package's directory.
const root = ".."

func repoPath(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

func readYAML(t *testing.T, rel string) []Document {
	t.Helper()
	docs, err := ReadYAML(repoPath(rel))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// findDoc returns the one document of the given kind and name.
func findDoc(t *testing.T, docs []Document, kind, name string) Document {
	t.Helper()
	var found []Document
	for _, d := range docs {
		if d.Kind == kind && d.Name == name {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d documents of kind %s named %q, want 1", len(found), kind, name)
	}
	return found[0]
}

// parsePluginConfig parses an embedded plugin configuration as the filter
// does at plugin start, and checks that the JSON Schema accepts it too.
func parsePluginConfig(t *testing.T, where string, js []byte) *config.Config {
	t.Helper()
	cfg, err := config.Parse(js)
	if err != nil {
		t.Fatalf("%s: the filter refuses its configuration: %v\n%s", where, err, js)
	}
	if err := schema.Validate(js); err != nil {
		t.Fatalf("%s: schema/config.schema.json refuses the configuration: %v", where, err)
	}
	return cfg
}

func itoa(n int) string { return strconv.Itoa(n) }
