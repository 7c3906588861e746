package image

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// WriteLayout writes img as an OCI image layout in dir (oci-layout,
// index.json naming the one image, blobs/sha256/...), replacing whatever dir
// held.
func WriteLayout(dir string, img v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image: %s: %w", dir, err)
	}
	if err := p.AppendImage(img); err != nil {
		return fmt.Errorf("image: %s: %w", dir, err)
	}
	return nil
}

// ReadLayout returns the one image of the layout in dir.
func ReadLayout(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("image: %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image: %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("image: %s: index.json names %d manifests, want 1", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("image: %s: %w", dir, err)
	}
	return img, nil
}

// WriteArchive writes the layout in dir as a tar file (an "oci-archive":
// skopeo's oci-archive:, podman load and docker load read it). Entries come
// in lexical order with the Epoch as their time and fixed modes and owners,
// so the same layout always gives the same bytes.
func WriteArchive(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: Epoch, Format: tar.FormatUSTAR}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, 0o755, hdr.Name+"/"
			return tw.WriteHeader(hdr)
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(data))
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		default:
			return fmt.Errorf("%s is neither a file nor a folder", path)
		}
	})
	if err != nil {
		return fmt.Errorf("image: archiving %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("image: archiving %s: %w", dir, err)
	}
	return nil
}

// Push uploads img to repo (e.g. "ghcr.io/owner/name") under tag and returns
// the reference by digest, repo@sha256:<hex>, which is what to sign.
func Push(img v1.Image, repo, tag string, opts ...remote.Option) (string, error) {
	ref, err := name.NewTag(repo+":"+tag, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("image: %w", err)
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		return "", fmt.Errorf("image: pushing %s: %w", ref, err)
	}
	h, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("image: %w", err)
	}
	return ref.Context().Digest(h.String()).String(), nil
}
