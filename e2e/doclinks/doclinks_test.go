package doclinks

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository, from this package's directory.
const root = "../.."

// Every relative link and anchor of the repository's Markdown resolves.
func TestRepositoryLinks(t *testing.T) {
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "README.md") || !slices.Contains(files, "docs/STYLE.md") {
		t.Fatalf("the file list lacks README.md or docs/STYLE.md: %d files", len(files))
	}
	broken, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// The README's headings and relative links are read: the check cannot
// pass by reading nothing.
func TestTheReadmeIsRead(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	p := parse(string(src))
	if len(p.anchors) < 10 || len(p.links) < 10 {
		t.Errorf("README.md: %d anchors and %d links read, want at least 10 of each", len(p.anchors), len(p.links))
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Higress's Redis client":                                "higresss-redis-client",
		"Costs known at the response (LLM tokens)":              "costs-known-at-the-response-llm-tokens",
		"`wasmhost` flags":                                      "wasmhost-flags",
		"Running an Envoy file: -envoy":                         "running-an-envoy-file--envoy",
		"Request bodies: allow_on_headers_stop_iteration":       "request-bodies-allow_on_headers_stop_iteration",
		"Near the limit: `ratelimit.rule.<name>.near_limit`":    "near-the-limit-ratelimitrulenamenear_limit",
		"Faults (`e2e/faults_test.go`, `faults_redis_test.go`)": "faults-e2efaults_testgo-faults_redis_testgo",
		"`ratelimitctl show`: used, remaining and debt":         "ratelimitctl-show-used-remaining-and-debt",
		"V8, the engine Envoy runs us in":                       "v8-the-engine-envoy-runs-us-in",
		"Leases for hot keys (issue 14)":                        "leases-for-hot-keys-issue-14",
		"The same burst, 5× the limit — per algorithm":          "the-same-burst-5-the-limit--per-algorithm",
		"Ünïcode Straße":                                        "ünïcode-straße",
		"See [the deploy guide](deploy/README.md) *now*":        "see-the-deploy-guide-now",
		"An _emphasised_ word, a \\_literal\\_ one":             "an-emphasised-word-a-_literal_-one",
		"<a id=\"x\"></a>Tagged":                                "tagged",
	} {
		if got := Slug(headingText(heading)); got != want {
			t.Errorf("%q: slug %q, want %q", heading, got, want)
		}
	}
}

// Headings repeated get -1, -2; fenced code holds no heading; closing
// hashes and explicit ids count as GitHub counts them.
func TestAnchors(t *testing.T) {
	p := parse("# Intro\n\n## Setup ##\n\n```sh\n# Not a heading\n```\n\n## Setup\n\n### Setup\n\n" +
		"#Not a heading either\n\n<a id=\"custom\"></a>\n<a name='other'>x</a>\n")
	var got []string
	for a := range p.anchors {
		got = append(got, a)
	}
	slices.Sort(got)
	want := []string{"custom", "intro", "other", "setup", "setup-1", "setup-2"}
	if !slices.Equal(got, want) {
		t.Errorf("anchors %v, want %v", got, want)
	}
}

// The check reports a missing file, a missing anchor (here and in
// another file), a link out of the repository, and an undefined
// reference, each at its line; it reads no link inside code.
func TestCheckReportsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/guide.md", "# Guide\n\n## Higress's Redis client\n\nBack to [the top](../README.md#top).\n")
	write("docs/pic.svg", "<svg/>")
	write("README.md", strings.Join([]string{
		"# Top", // 1
		"",
		"Good: [guide](docs/guide.md), [anchor](docs/guide.md#higresss-redis-client),", // 3
		"[here](#top), [dir](docs/), ![pic](docs/pic.svg \"title\"), [site](https://example.com/x.md),",
		"[mail](mailto:a@b.c), [ref][guide], [Guide][], <img src=\"docs/pic.svg\">.",
		"",
		"Broken: [gone](docs/gone.md) and", // 7
		"[no anchor](docs/guide.md#higress-redis-client), [here](#nowhere),",
		"![pic](docs/missing.svg), [out](../outside.md), [undefined][nope],",
		"<img src=\"missing.png\">.", // 10
		"",
		"Code: `[x](not-checked.md)` and ``a `[y](z.md)` b``, and a span `across",
		"lines [x](not-checked.md)`.",
		"",
		"```md",
		"[in a fence](not-checked.md)",
		"```",
		"",
		"[guide]: docs/guide.md",
		"[Guide]: docs/guide.md",
		"[broken def]: docs/nothing.md", // 21
	}, "\n"))
	files := []string{"README.md", "docs/guide.md", "docs/pic.svg"}
	broken, err := Check(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.File+":"+strconv.Itoa(b.Line)+" "+b.Target)
	}
	want := []string{
		"README.md:7 docs/gone.md",
		"README.md:8 docs/guide.md#higress-redis-client",
		"README.md:8 #nowhere",
		"README.md:9 docs/missing.svg",
		"README.md:9 ../outside.md",
		"README.md:10 missing.png",
		"README.md:21 docs/nothing.md",
		"README.md:9 [nope]",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("broken:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
