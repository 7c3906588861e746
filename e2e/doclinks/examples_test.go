package doclinks

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// Every file a shell example of the repository's Markdown names is in the
// repository, or written by the page's examples, or built into dist/.
func TestExampleFilesExist(t *testing.T) {
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	broken, err := ExampleFiles(root, files)
	if err != nil {
		t.Fatal(err)
	}
	// Names that stand for the reader's own files, page by page.
	theirs := map[string][]string{
		"docs/operating.md": {"plugin.json"},              // the plugin's configuration, whatever it is
		"deploy/README.md":  {"SHA256SUMS.sigstore.json"}, // from the release, downloaded just above
	}
	for _, b := range broken {
		if !slices.Contains(theirs[b.File], b.Target) {
			t.Error(b)
		}
	}
}

// The check finds a missing file in sh and console examples, and passes
// files the page writes, dist/, absolute paths and here-documents.
func TestExampleFilesReportsMissing(t *testing.T) {
	dir := t.TempDir()
	page := "# P\n\n```sh\ncat > mine.json <<'EOF'\n{\"x\": \"inside.json\"}\nEOF\n" + // 3-6
		"webdis webdis.json &   # missing.json in a comment\n" + // 7
		"dist/wasmhost -config mine.json -envoy envoy.yaml -wasm dist/x.wasm -http-cluster w=there.yaml\n" + // 8
		"cat /tmp/abs.json\n```\n\n```console\n$ tool --config gone.yaml\noutput.json\n```\n\n" + // 9-14
		"```yaml\nfile: not-a-command.json\n```\n"
	files := []string{"README.md", "envoy.yaml"}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", page)
	write("envoy.yaml", "")
	broken, err := ExampleFiles(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.File+":"+strconv.Itoa(b.Line)+" "+b.Target)
	}
	want := []string{"README.md:7 webdis.json", "README.md:8 there.yaml", "README.md:13 gone.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
}
