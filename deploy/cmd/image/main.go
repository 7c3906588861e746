// Command image writes the OCI image of each filter module that `make build`
// put in dist/: an OCI image layout, dist/image/<name>/, and the same as a tar
// file, dist/image/<name>.tar (deploy/README.md, "Images"). `make image` runs
// it.
//
//	go run ./deploy/cmd/image                 write the images, print their digests
//	go run ./deploy/cmd/image -pin            also set spec.sha256 in the manifests (make pin)
//	go run ./deploy/cmd/image -push ghcr.io/owner/name -tag v1.2.3
//	                                          also push them as :v1.2.3 and :v1.2.3-higress,
//	                                          after checking that the manifests name these
//	                                          tags and pin these digests; prints each
//	                                          pushed image as name@sha256:... on stdout
//
// Pushing logs in as docker login and cosign do (~/.docker/config.json).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/redisrate/envoy-redis-ratelimit/deploy/image"
	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
)

func main() {
	root := flag.String("root", ".", "the repository root, where the manifests are")
	pin := flag.Bool("pin", false, "set spec.sha256 in deploy/'s WasmPlugin manifests to the images' digests")
	push := flag.String("push", "", "push the images to this repository (`registry/owner/name`)")
	tag := flag.String("tag", "", "with -push: the release's tag, vMAJOR.MINOR.PATCH")
	flag.Parse()
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if err := run(*root, *pin, *push, *tag, os.Stdout, os.Stderr, auth); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run writes the images and, as asked, pins and pushes them; stdout gets
// the pushed images by digest, stderr what was done.
func run(root string, pin bool, push, tag string, stdout, stderr io.Writer, opts ...remote.Option) error {
	if (push == "") != (tag == "") {
		return fmt.Errorf("-push and -tag go together")
	}
	distDir, err := dist.Dir()
	if err != nil {
		return err
	}
	var imgs []v1.Image
	var digests []string
	for _, m := range image.Modules {
		img, sha, err := write(distDir, m)
		if err != nil {
			return err
		}
		imgs, digests = append(imgs, img), append(digests, sha)
		fmt.Fprintf(stderr, "dist/image/%s: sha256:%s (dist/%s)\n", m.Name, sha, m.Wasm)
		if pin {
			for _, f := range m.Manifests {
				if err := image.WritePin(root, f, sha); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "%s: sha256 %s\n", f, sha)
			}
		}
	}
	if push == "" {
		return nil
	}
	if err := image.CheckRelease(root, tag, digests); err != nil {
		return err
	}
	for i, m := range image.Modules {
		ref, err := image.Push(imgs[i], push, tag+m.TagSuffix, opts...)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, ref)
	}
	return nil
}

// write builds m's image from dist/, writes its layout and archive, and
// returns the image as read back from the layout, with its digest.
func write(distDir string, m image.Module) (v1.Image, string, error) {
	wasm, err := dist.Read(m.Wasm)
	if err != nil {
		return nil, "", err
	}
	img, err := image.New(wasm)
	if err != nil {
		return nil, "", fmt.Errorf("dist/%s: %w", m.Wasm, err)
	}
	dir := filepath.Join(distDir, "image", m.Name)
	if err := image.WriteLayout(dir, img); err != nil {
		return nil, "", err
	}
	var archive bytes.Buffer
	if err := image.WriteArchive(dir, &archive); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(dir+".tar", archive.Bytes(), 0o644); err != nil {
		return nil, "", err
	}
	onDisk, err := image.ReadLayout(dir)
	if err != nil {
		return nil, "", err
	}
	sha, err := image.Digest(onDisk)
	if err != nil {
		return nil, "", err
	}
	if want, _ := image.Digest(img); sha != want {
		return nil, "", fmt.Errorf("%s: the layout's image is sha256:%s, the built one sha256:%s", dir, sha, want)
	}
	return onDisk, sha, nil
}
