package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
)

// maxWasm bounds what fetchLikeIstio reads, as Istio's agent does
// (features.MaxWasmBinarySizeBytes, 256 MiB by default).
const maxWasm = 256 << 20

// fetchLikeIstio pulls a Wasm module from an oci:// url the way the image
// fetcher of Istio's agent does (istio/istio pkg/wasm/imagefetcher.go,
// PrepareFetch; Envoy Gateway's internal/wasm/imagefetcher.go and Higress's
// Istio fork have the same rules): resolve the reference to one image
// manifest, take its digest (what sha256 is checked against), then read
// the module from the last layer, which must be gzip-compressed tar with
// the Docker media type under a Docker manifest and the OCI one otherwise,
// as the first tar entry whose base name is plugin.wasm. The third format,
// the "oci" variant (exactly two layers, one of them a raw module of type
// application/vnd.module.wasm.content.layer.v1+wasm), is left out: the
// images here do not use it, and the test must prove they need nothing
// else.
func fetchLikeIstio(url string) (wasm []byte, digest string, err error) {
	ref, err := name.ParseReference(strings.TrimPrefix(url, "oci://"))
	if err != nil {
		return nil, "", err
	}
	desc, err := remote.Get(ref)
	if err != nil {
		return nil, "", fmt.Errorf("could not fetch manifest: %w", err)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, "", fmt.Errorf("could not fetch image: %w", err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, "", err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, "", err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, "", err
	}
	if len(layers) == 0 {
		return nil, d.Hex, errors.New("number of layers must be greater than zero")
	}
	last := layers[len(layers)-1]
	want := types.OCILayer
	if m.MediaType == types.DockerManifestSchema2 {
		want = types.DockerLayer
	}
	if mt, err := last.MediaType(); err != nil || mt != want {
		return nil, d.Hex, fmt.Errorf("invalid media type %s (expect %s)", mt, want)
	}
	rc, err := last.Compressed()
	if err != nil {
		return nil, d.Hex, err
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return nil, d.Hex, fmt.Errorf("failed to parse layer as tar.gz: %w", err)
	}
	tr := tar.NewReader(io.LimitReader(zr, maxWasm))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, d.Hex, fmt.Errorf("%s not found in the archive", WasmFile)
		}
		if err != nil {
			return nil, d.Hex, err
		}
		if path.Base(h.Name) == WasmFile {
			if h.Size > maxWasm {
				return nil, d.Hex, fmt.Errorf("%s: %d bytes", WasmFile, h.Size)
			}
			wasm := make([]byte, h.Size)
			if _, err := io.ReadFull(tr, wasm); err != nil {
				return nil, d.Hex, err
			}
			return wasm, d.Hex, nil
		}
	}
}

// registryHost serves an in-process registry (go-containerregistry's
// pkg/registry) for the test, and returns its host:port.
func registryHost(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Each module's image, pushed as the release workflow pushes it, comes
// back through Istio's fetch logic as the module in dist/, byte for byte,
// with the digest its manifests pin.
func TestFetchLikeIstio(t *testing.T) {
	host := registryHost(t)
	for _, m := range Modules {
		t.Run(m.Name, func(t *testing.T) {
			wasm, err := dist.Read(m.Wasm)
			if err != nil {
				t.Fatal(err)
			}
			img, err := New(wasm)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Push(img, host+"/redisrate/envoy-redis-ratelimit", "v0.1.0"+m.TagSuffix)
			if err != nil {
				t.Fatal(err)
			}
			sha, _ := Digest(img)
			if want := host + "/redisrate/envoy-redis-ratelimit@sha256:" + sha; ref != want {
				t.Errorf("Push returned %s, want %s", ref, want)
			}
			for _, url := range []string{"oci://" + host + "/redisrate/envoy-redis-ratelimit:v0.1.0" + m.TagSuffix, "oci://" + ref} {
				got, digest, err := fetchLikeIstio(url)
				if err != nil {
					t.Fatalf("%s: %v", url, err)
				}
				if !bytes.Equal(got, wasm) {
					t.Errorf("%s: fetched %d bytes, which differ from dist/%s (%d bytes)", url, len(got), m.Wasm, len(wasm))
				}
				if digest != sha {
					t.Errorf("%s: the registry serves digest %s, the built image is %s", url, digest, sha)
				}
			}
		})
	}
}

// The fetch logic refuses images it would refuse in Istio, so the test
// above proves the format, not a lenient reader: a last layer that is not
// gzip, a module in a layer that is not the last, a file of another name.
func TestFetchLikeIstioRefuses(t *testing.T) {
	host := registryHost(t)
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	plain := tarOf(t, map[string][]byte{WasmFile: wasm})
	for _, c := range []struct {
		name   string
		layers []v1.Layer
		want   string
	}{
		{"uncompressed-tar", []v1.Layer{static.NewLayer(plain, types.OCIUncompressedLayer)}, "invalid media type"},
		{"raw-module-layer", []v1.Layer{static.NewLayer(wasm, "application/vnd.module.wasm.content.layer.v1+wasm")}, "invalid media type"},
		{"module-not-last", []v1.Layer{gzLayer(t, map[string][]byte{WasmFile: wasm}), gzLayer(t, map[string][]byte{"README.md": []byte("x")})}, "not found"},
		{"other-name", []v1.Layer{gzLayer(t, map[string][]byte{"ratelimit.wasm": wasm})}, "not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), c.layers...)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Push(img, host+"/refused", c.name)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := fetchLikeIstio("oci://" + ref); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("fetch: %v, want an error with %q", err, c.want)
			}
		})
	}
}

func tarOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, data := range files { // one file per map in the cases above
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzLayer(t *testing.T, files map[string][]byte) v1.Layer {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(tarOf(t, files)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return static.NewLayer(b.Bytes(), types.OCILayer)
}
