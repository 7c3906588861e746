package deploy

import (
	"encoding/json"
	"maps"
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

// The release workflow, as deploy/README.md ("Images") describes it: on a
// tag v*, make test with a read-only token, then, in a job that needs it,
// make image, the push (which checks the manifests' tags and pins), cosign
// keyless signatures of each pushed digest, and the release files with
// SHA256SUMS. Permissions are none by default and the least per job;
// actions are pinned by commit; no ${{ }} is expanded inside a script.
func TestReleaseWorkflow(t *testing.T) {
	const file = ".github/workflows/release.yml"
	d, err := ReadYAMLOne(repoPath(file))
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		Uses string         `json:"uses"`
		Run  string         `json:"run"`
		With map[string]any `json:"with"`
	}
	var w struct {
		On          map[string]map[string][]string `json:"on"`
		Permissions *map[string]string             `json:"permissions"`
		Jobs        map[string]struct {
			Needs       any               `json:"needs"`
			Permissions map[string]string `json:"permissions"`
			Steps       []step            `json:"steps"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(d.JSON, &w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(w.On) != 1 || !slices.Equal(w.On["push"]["tags"], []string{"v*"}) || len(w.On["push"]) != 1 {
		t.Errorf("%s: on: %v, want only push of tags v*", file, w.On)
	}
	if w.Permissions == nil || len(*w.Permissions) != 0 {
		t.Errorf("%s: want workflow-level permissions: {}", file)
	}
	wantPerms := map[string]map[string]string{
		"test":    {"contents": "read"},
		"publish": {"contents": "write", "packages": "write", "id-token": "write"},
	}
	if len(w.Jobs) != len(wantPerms) {
		t.Errorf("%s: jobs %v, want test and publish", file, slices.Sorted(maps.Keys(w.Jobs)))
	}
	for job, want := range wantPerms {
		if got := w.Jobs[job].Permissions; !maps.Equal(got, want) {
			t.Errorf("%s, job %s: permissions %v, want %v", file, job, got, want)
		}
	}
	if n := w.Jobs["publish"].Needs; n != "test" && !slices.Equal(asStrings(n), []string{"test"}) {
		t.Errorf("%s: publish needs %v, want test: nothing is published before make test passes", file, n)
	}

	// find returns the index of the first step of job whose run matches re.
	find := func(job, re string) int {
		for i, s := range w.Jobs[job].Steps {
			if regexp.MustCompile(re).MatchString(s.Run) {
				return i
			}
		}
		t.Errorf("%s, job %s: no step runs %s", file, job, re)
		return -1
	}
	find("test", `(?m)^make test$`)
	build := find("publish", `(?m)^make image$`)
	push := find("publish", `(?m)^go run \./deploy/cmd/image -push "ghcr\.io/\$\{GITHUB_REPOSITORY,,\}" -tag "\$GITHUB_REF_NAME" > "\$RUNNER_TEMP/pushed"$`)
	sign := find("publish", `(?m)^while read -r ref; do cosign sign --yes "\$ref"; done < "\$RUNNER_TEMP/pushed"$`)
	sums := find("publish", `(?m)^sha256sum ratelimit\.wasm ratelimit-higress\.wasm .*> SHA256SUMS$`)
	blob := find("publish", `(?m)^cosign sign-blob --yes --bundle SHA256SUMS\.sigstore\.json SHA256SUMS$`)
	release := find("publish", `(?m)^gh release create "\$GITHUB_REF_NAME" `)
	if !(build < push && push < sign && sign <= sums && sums <= blob && blob < release) {
		t.Errorf("%s: steps make image %d, push %d, sign %d, SHA256SUMS %d, sign-blob %d, release %d: want that order", file, build, push, sign, sums, blob, release)
	}
	if release >= 0 {
		run := w.Jobs["publish"].Steps[release].Run
		for _, asset := range []string{"ratelimit.wasm", "ratelimit-higress.wasm", "SHA256SUMS", "SHA256SUMS.sigstore.json"} {
			if !regexp.MustCompile(`\s` + regexp.QuoteMeta(asset) + `(\s|$)`).MatchString(run) {
				t.Errorf("%s: the release does not attach %s", file, asset)
			}
		}
	}

	goVersions := map[string]bool{}
	for job, j := range w.Jobs {
		for _, s := range j.Steps {
			if strings.Contains(s.Run, "${{") {
				t.Errorf("%s, job %s: a script expands ${{ }}; pass it through env instead:\n%s", file, job, s.Run)
			}
			if s.Uses == "" {
				continue
			}
			if !regexp.MustCompile(`^[\w.-]+/[\w.-]+@[0-9a-f]{40}$`).MatchString(s.Uses) {
				t.Errorf("%s, job %s: %s is not pinned by commit", file, job, s.Uses)
			}
			switch {
			case strings.HasPrefix(s.Uses, "actions/checkout@"):
				if s.With["persist-credentials"] != false {
					t.Errorf("%s, job %s: checkout keeps the token in .git/config; want persist-credentials: false", file, job)
				}
			case strings.HasPrefix(s.Uses, "actions/setup-go@"):
				v, _ := s.With["go-version"].(string)
				goVersions[v] = true
				if !regexp.MustCompile(`^1\.\d+\.\d+$`).MatchString(v) || s.With["cache"] != false {
					t.Errorf("%s, job %s: setup-go with %v: want an exact go-version (the pins' Go) and cache: false", file, job, s.With)
				}
			}
		}
	}
	if len(goVersions) != 1 {
		t.Errorf("%s: the jobs set up Go %v, want one version", file, slices.Sorted(maps.Keys(goVersions)))
	}
	if !slices.ContainsFunc(w.Jobs["publish"].Steps, func(s step) bool { return strings.HasPrefix(s.Uses, "sigstore/cosign-installer@") }) {
		t.Errorf("%s: the publish job does not install cosign (sigstore/cosign-installer)", file)
	}
}

func asStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
