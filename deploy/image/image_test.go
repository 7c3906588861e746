package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/redisrate/envoy-redis-ratelimit/deploy"
	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
)

// root is the repository root, seen from this package's directory.
const root = "../.."

func distModule(t *testing.T, m Module) []byte {
	t.Helper()
	wasm, err := dist.Read(m.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

func digestOf(t *testing.T, wasm []byte) string {
	t.Helper()
	img, err := New(wasm)
	if err != nil {
		t.Fatal(err)
	}
	sha, err := Digest(img)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// The image depends on the module alone: built twice it has one digest, a
// module one byte longer gives another, and bytes that are not Wasm are
// refused. Its manifest has the compat variant's shape.
func TestNew(t *testing.T) {
	wasm := distModule(t, Modules[0])
	a, b := digestOf(t, wasm), digestOf(t, bytes.Clone(wasm))
	if a != b {
		t.Errorf("one module, two digests: %s and %s", a, b)
	}
	if c := digestOf(t, append(bytes.Clone(wasm), 0)); c == a {
		t.Errorf("two modules, one digest %s", a)
	}
	if _, err := New([]byte("#!/bin/sh\n")); err == nil || !strings.Contains(err.Error(), "Wasm magic") {
		t.Errorf("New(a shell script) = %v, want the Wasm magic error", err)
	}

	img, err := New(wasm)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer || m.Annotations[VariantAnnotation] != "compat" {
		t.Errorf("manifest: want an OCI manifest with an OCI config, one tar+gzip layer and the compat annotation; got %+v", m)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "wasip1" || cfg.Architecture != "wasm" || !cfg.Created.Time.Equal(Epoch) {
		t.Errorf("config: os %q, architecture %q, created %v; want wasip1, wasm, %v", cfg.OS, cfg.Architecture, cfg.Created, Epoch)
	}
}

// The layout and its archive hold the image with its digest, and the
// archive's bytes are the same each time it is written.
func TestLayoutAndArchive(t *testing.T) {
	img, err := New(distModule(t, Modules[1]))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Digest(img)
	dir := filepath.Join(t.TempDir(), "ratelimit-higress")
	if err := WriteLayout(dir, img); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := WriteArchive(dir, &a); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(dir, img); err != nil { // a second time, over the first
		t.Fatal(err)
	}
	if err := WriteArchive(dir, &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("one layout, two different archives")
	}

	// Unpack the archive and read it back as a layout.
	out := t.TempDir()
	tr := tar.NewReader(&a)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(out, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			err = os.MkdirAll(p, 0o755)
		} else {
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, data, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{dir, out} {
		got, err := ReadLayout(d)
		if err != nil {
			t.Fatal(err)
		}
		if sha, _ := Digest(got); sha != want {
			t.Errorf("%s: image sha256:%s, want sha256:%s", d, sha, want)
		}
	}
}

// releaseGo is the Go version the release workflow builds with.
func releaseGo(t *testing.T) string {
	t.Helper()
	d, err := deploy.ReadYAMLOne(filepath.Join(root, ".github/workflows/release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string `json:"uses"`
				With struct {
					GoVersion any `json:"go-version"`
				} `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(d.JSON, &w); err != nil {
		t.Fatal(err)
	}
	for _, s := range w.Jobs["publish"].Steps {
		if strings.HasPrefix(s.Uses, "actions/setup-go@") {
			if v, ok := s.With.GoVersion.(string); ok {
				return "go" + v
			}
			t.Fatalf("release.yml: setup-go's go-version %v is not a string", s.With.GoVersion)
		}
	}
	t.Fatal("release.yml: the publish job has no actions/setup-go step")
	return ""
}

// Every manifest pins the digest of its module's image as make build wrote
// it, so that a release's images are the ones the manifests name.
func TestManifestsPinTheBuild(t *testing.T) {
	if want := releaseGo(t); runtime.Version() != want {
		t.Skipf("dist/ was built by %s (this Go, which make test runs), the pins by the release's %s; "+
			"each Go release compiles other bytes, so there is nothing to compare", runtime.Version(), want)
	}
	for _, m := range Modules {
		sha := digestOf(t, distModule(t, m))
		for _, f := range m.Manifests {
			p, err := ReadPin(root, f)
			if err != nil {
				t.Fatal(err)
			}
			if p.SHA256 != sha {
				t.Errorf("%s: sha256 %s, but the image of dist/%s is %s: run `make pin`, and commit the change", f, p.SHA256, m.Wasm, sha)
			}
			if !strings.HasSuffix(p.Tag, m.TagSuffix) || (m.TagSuffix == "" && strings.Contains(p.Tag, "-")) {
				t.Errorf("%s: url %s: want a tag vX.Y.Z%s for dist/%s", f, p.URL, m.TagSuffix, m.Wasm)
			}
		}
	}
}

// WritePin changes the sha256 line and nothing else; CheckRelease refuses
// a tag or a digest the manifests do not name.
func TestPinAndCheckRelease(t *testing.T) {
	tmp := t.TempDir()
	var digests []string
	for _, m := range Modules {
		for _, f := range m.Manifests {
			data, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		digests = append(digests, strings.Repeat(string("ab"[len(digests)]), 64))
	}
	for i, m := range Modules {
		for _, f := range m.Manifests {
			before, _ := os.ReadFile(filepath.Join(tmp, f))
			if err := WritePin(tmp, f, digests[i]); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(filepath.Join(tmp, f))
			if b, a := strings.Split(string(before), "\n"), strings.Split(string(after), "\n"); len(a) != len(b) || diffLines(a, b) != 1 {
				t.Errorf("%s: WritePin changed %d lines, want 1", f, diffLines(a, b))
			}
		}
	}
	tag := strings.TrimSuffix(mustPin(t, tmp, Modules[0].Manifests[0]).Tag, Modules[0].TagSuffix)
	if err := CheckRelease(tmp, tag, digests); err != nil {
		t.Errorf("CheckRelease(%s, the pinned digests): %v", tag, err)
	}
	if err := CheckRelease(tmp, "v9.9.9", digests); err == nil || !strings.Contains(err.Error(), "v9.9.9-higress") {
		t.Errorf("CheckRelease(v9.9.9): %v, want the manifests' tags refused", err)
	}
	if err := CheckRelease(tmp, tag, []string{digests[1], digests[0]}); err == nil || !strings.Contains(err.Error(), "make pin") {
		t.Errorf("CheckRelease(other digests): %v, want the pins refused", err)
	}
	if err := CheckRelease(tmp, tag+"-rc1", digests); err == nil {
		t.Errorf("CheckRelease(%s-rc1) = nil, want a refusal", tag)
	}
	if err := WritePin(tmp, Modules[0].Manifests[0], "not-hex"); err == nil {
		t.Error("WritePin(not-hex) = nil, want an error")
	}
}

func mustPin(t *testing.T, root, f string) Pin {
	t.Helper()
	p, err := ReadPin(root, f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func diffLines(a, b []string) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}
