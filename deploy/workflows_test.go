package deploy

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type workflow struct {
	Jobs map[string]struct {
		Steps []struct {
			Uses string `json:"uses"`
			Run  string `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

func readWorkflow(t *testing.T, rel string) workflow {
	t.Helper()
	d, err := ReadYAMLOne(repoPath(rel))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := json.Unmarshal(d.JSON, &w); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return w
}

func (w workflow) runs(job string) string {
	var all []string
	for _, s := range w.Jobs[job].Steps {
		all = append(all, s.Run)
	}
	return strings.Join(all, "\n")
}

// The CI workflow runs .ci/run; the compose workflow starts each profile
// after make build and runs smoke.sh against the port compose publishes for
// that proxy.
func TestWorkflows(t *testing.T) {
	if ci := readWorkflow(t, ".github/workflows/ci.yml"); !strings.Contains(ci.runs("test"), ".ci/run") {
		t.Error("ci.yml: the test job does not run .ci/run")
	}
	w := readWorkflow(t, ".github/workflows/compose.yml")
	c := readCompose(t)
	for _, p := range []struct{ profile, service string }{{"envoy", "envoy"}, {"higress", "higress"}} {
		runs := w.runs(p.profile)
		if !strings.Contains(runs, "make build") || !strings.Contains(runs, "--profile "+p.profile+" up -d --wait") ||
			!strings.Contains(runs, "--profile "+p.profile+" down") {
			t.Errorf("compose.yml, job %s: want make build, then --profile %[1]s up -d --wait, and down", p.profile)
		}
		m := regexp.MustCompile(`smoke\.sh http://localhost:(\d+)`).FindStringSubmatch(runs)
		if m == nil || !slices.Contains(c.service(t, p.service).Ports, m[1]+":8080") {
			t.Errorf("compose.yml, job %s: smoke.sh runs against %v; service %s publishes %v", p.profile, m, p.service, c.service(t, p.service).Ports)
		}
	}
}
