// Package image writes the filter's modules as OCI images that the Wasm
// image fetchers of Istio, Envoy Gateway and Higress all load, and pushes
// them to a registry. `make image` (deploy/cmd/image) is its command;
// deploy/README.md, "Images", says why the images have the shape they have.
//
// An image is the "compat" variant of the Wasm image specification
// (solo-io/wasm, spec/spec-compat.md): an OCI image manifest whose one layer,
// application/vnd.oci.image.layer.v1.tar+gzip, holds plugin.wasm. Every
// timestamp is the Unix epoch and nothing else varies, so the same module
// always gives the same image digest, which the manifests in deploy/ pin.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WasmFile is the name the fetchers look for in the layer (they compare the
// base name of each tar entry with it).
const WasmFile = "plugin.wasm"

// VariantAnnotation marks the manifest as the compat variant; the
// specification makes it optional, and no fetcher reads it.
const VariantAnnotation = "module.wasm.image/variant"

// Platform is what the image's config says it runs on: the GOOS and GOARCH
// the modules are built for.
var Platform = v1.Platform{OS: "wasip1", Architecture: "wasm"}

// Epoch is every timestamp in an image: the layer's file, the config's
// created, the history entry. SOURCE_DATE_EPOCH is deliberately not read:
// the digest must depend on the module alone, or the pins would depend on
// who built it.
var Epoch = time.Unix(0, 0).UTC()

// Module is one filter module and the files that pin its image.
type Module struct {
	Wasm      string   // in dist/: "ratelimit.wasm"
	Name      string   // in dist/image/: "ratelimit" (layout) and "ratelimit.tar"
	TagSuffix string   // after the release's tag: "" gives v1.2.3, "-higress" v1.2.3-higress
	Manifests []string // repository-relative files whose spec.sha256 pins the image
}

// Modules are the two modules `make build` writes.
var Modules = []Module{
	{Wasm: "ratelimit.wasm", Name: "ratelimit", Manifests: []string{"deploy/istio/wasmplugin.yaml", "deploy/istio/cluster/wasmplugin.yaml"}},
	{Wasm: "ratelimit-higress.wasm", Name: "ratelimit-higress", TagSuffix: "-higress",
		Manifests: []string{"deploy/higress/wasmplugin.yaml", "deploy/higress/wasmplugin-matchrules.yaml"}},
}

// New returns the image of a module. It fails on bytes that are not a Wasm
// binary, which Istio's agent would refuse after pulling.
func New(wasm []byte) (v1.Image, error) {
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return nil, fmt.Errorf("image: the module does not start with the Wasm magic \\0asm")
	}
	var tarred bytes.Buffer
	tw := tar.NewWriter(&tarred)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     WasmFile,
		Mode:     0o644,
		Size:     int64(len(wasm)),
		ModTime:  Epoch,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if _, err := tw.Write(wasm); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarred.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression),
		tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "make image: " + WasmFile},
	})
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = Platform.OS, Platform.Architecture
	cfg.Created = v1.Time{Time: Epoch}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	return mutate.Annotations(img, map[string]string{VariantAnnotation: "compat"}).(v1.Image), nil
}

// Digest is the hex of an image's manifest digest: what a WasmPlugin's
// sha256 holds for an oci:// url.
func Digest(img v1.Image) (string, error) {
	h, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("image: digest: %w", err)
	}
	if h.Algorithm != "sha256" {
		return "", fmt.Errorf("image: digest %s is not sha256", h)
	}
	return h.Hex, nil
}
