package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The install Job runs code fetched at run time with the operator's
// password, so what it trusts is pinned as far as a tag allows: the Go the
// release is built with (release.yml), no toolchain download, and, with
// COMMIT set, no commit but that one.
func TestIstioClusterInstallJobPins(t *testing.T) {
	var job jobSpec
	decodeObject(t, findDoc(t, istioClusterDocs(t), "Job", "ratelimitctl-install"), &job)
	c := job.Template.Spec.Containers[0]
	m := regexp.MustCompile(`go-version: (\S+)`).FindStringSubmatch(readRepoFile(t, ".github/workflows/release.yml"))
	if m == nil || c.Image != "golang:"+m[1] {
		t.Errorf("Job image %q, want golang at the release's Go (release.yml: %v)", c.Image, m)
	}
	vars := map[string]string{}
	for _, e := range c.Env {
		vars[e.Name] = e.Value
	}
	if vars["GOTOOLCHAIN"] != "local" {
		t.Errorf("Job GOTOOLCHAIN %q, want local: go would fetch the toolchain a go.mod names", vars["GOTOOLCHAIN"])
	}
	if _, ok := vars["COMMIT"]; !ok {
		t.Fatal("Job: no COMMIT to pin the tag's commit")
	}
	// The guard between the clone and go run, run in a repository of one
	// commit: it passes with COMMIT empty or that commit, and stops else.
	script := strings.Join(c.Command, " ")
	_, guard, _ := strings.Cut(script, "cd src && ")
	guard, _, ok := strings.Cut(guard, " && go run ")
	if !ok || !strings.Contains(guard, "$COMMIT") {
		t.Fatalf("Job command %q: no COMMIT check before go run", script)
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "release")
	head := git("rev-parse", "HEAD")
	for _, tc := range []struct {
		commit string
		ok     bool
	}{{"", true}, {head, true}, {strings.Repeat("0", len(head)), false}} {
		sh := exec.Command("sh", "-c", guard)
		sh.Dir, sh.Env = dir, append(os.Environ(), "COMMIT="+tc.commit, "VERSION=v0.1.0")
		out, err := sh.CombinedOutput()
		if (err == nil) != tc.ok {
			t.Errorf("guard with COMMIT=%q: %v %s, want ok %v", tc.commit, err, out, tc.ok)
		}
	}
}
