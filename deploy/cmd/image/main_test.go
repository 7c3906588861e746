package main

import (
	"bytes"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/redisrate/envoy-redis-ratelimit/deploy/image"
	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
)

// The command as the release workflow runs it, in a copy of the repository's
// manifests and dist/: -pin sets the manifests to the images' digests, and
// -push then pushes both images under the manifests' tags, printing each by
// digest, one per line, for cosign. A tag the manifests do not name pushes
// nothing.
func TestPinAndPush(t *testing.T) {
	distDir, root := t.TempDir(), t.TempDir()
	for _, m := range image.Modules {
		wasm, err := dist.Read(m.Wasm)
		if err == nil {
			err = os.WriteFile(filepath.Join(distDir, m.Wasm), wasm, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m.Manifests {
			data, err := os.ReadFile(filepath.Join("../../..", f))
			if err == nil {
				err = os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(root, f), data, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv("RATELIMIT_DIST", distDir)
	pin, err := image.ReadPin(root, image.Modules[0].Manifests[0])
	if err != nil {
		t.Fatal(err)
	}
	tag := pin.Tag
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/owner/envoy-redis-ratelimit"

	var out bytes.Buffer
	if err := run(root, false, repo, "v9.9.9", &out, io.Discard); err == nil || !strings.Contains(err.Error(), "v9.9.9") {
		t.Errorf("-push -tag v9.9.9: %v, want the manifests' tags refused", err)
	}
	if tags, err := remote.List(mustRepo(t, repo)); err == nil && len(tags) > 0 {
		t.Errorf("a refused release pushed %v", tags)
	}

	if err := run(root, true, repo, tag, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(image.Modules) {
		t.Fatalf("stdout: %q, want one line per module", out.String())
	}
	for i, m := range image.Modules {
		p, err := image.ReadPin(root, m.Manifests[0])
		if err != nil {
			t.Fatal(err)
		}
		if want := repo + "@sha256:" + p.SHA256; lines[i] != want {
			t.Errorf("stdout line %d: %s, want %s", i, lines[i], want)
		}
		desc, err := remote.Get(mustTag(t, repo+":"+tag+m.TagSuffix))
		if err != nil {
			t.Fatal(err)
		}
		if desc.Digest.Hex != p.SHA256 {
			t.Errorf("%s:%s%s is sha256:%s, the manifests pin %s", repo, tag, m.TagSuffix, desc.Digest.Hex, p.SHA256)
		}
		for _, f := range []string{filepath.Join(distDir, "image", m.Name, "index.json"), filepath.Join(distDir, "image", m.Name+".tar")} {
			if _, err := os.Stat(f); err != nil {
				t.Error(err)
			}
		}
	}
}

func mustRepo(t *testing.T, s string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	r, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
