package image

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/redisrate/envoy-redis-ratelimit/deploy"
)

// Pin is what a WasmPlugin manifest says about its image.
type Pin struct {
	File   string // repository-relative
	URL    string // spec.url: oci://<repository>:<tag>
	Tag    string // the url's tag
	SHA256 string // spec.sha256: the hex of the image's manifest digest
}

// ReadPin reads the pin of the one WasmPlugin in file, under the repository
// root.
func ReadPin(root, file string) (Pin, error) {
	docs, err := deploy.ReadYAML(filepath.Join(root, file))
	if err != nil {
		return Pin{}, err
	}
	var found []Pin
	for _, d := range docs {
		if d.Kind != "WasmPlugin" {
			continue
		}
		var wp struct {
			Spec struct {
				URL    string `json:"url"`
				SHA256 string `json:"sha256"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(d.JSON, &wp); err != nil {
			return Pin{}, fmt.Errorf("%s: %w", file, err)
		}
		found = append(found, Pin{File: file, URL: wp.Spec.URL, SHA256: wp.Spec.SHA256})
	}
	if len(found) != 1 {
		return Pin{}, fmt.Errorf("%s: %d WasmPlugins, want 1", file, len(found))
	}
	p := found[0]
	ref, ok := strings.CutPrefix(p.URL, "oci://")
	if !ok {
		return Pin{}, fmt.Errorf("%s: spec.url %q: want oci://<repository>:<tag>", file, p.URL)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return Pin{}, fmt.Errorf("%s: spec.url %q: %w", file, p.URL, err)
	}
	p.Tag = tag.TagStr()
	return p, nil
}

// The line WritePin rewrites: spec.sha256, indented as in the manifests.
var pinLine = regexp.MustCompile(`(?m)^  sha256: *("?)[0-9a-f]*("?) *$`)

// WritePin sets the spec.sha256 line of file, under the repository root, to
// sha, leaving the rest of the file as it is. The file must have exactly one
// such line.
func WritePin(root, file, sha string) error {
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sha) {
		return fmt.Errorf("%s: %q is not a sha256 in hex", file, sha)
	}
	path := filepath.Join(root, file)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if n := len(pinLine.FindAllIndex(data, -1)); n != 1 {
		return fmt.Errorf("%s: %d lines `  sha256: <hex>`, want 1", file, n)
	}
	data = pinLine.ReplaceAllLiteral(data, []byte("  sha256: "+sha))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	if p, err := ReadPin(root, file); err != nil || p.SHA256 != sha {
		return fmt.Errorf("%s: after rewriting, spec.sha256 is %q (%v)", file, p.SHA256, err)
	}
	return nil
}

// CheckRelease checks, before a release is pushed, that every manifest of
// every module names tag (plus the module's suffix) in its url and pins the
// digest the module's image has (digests[i] is Modules[i]'s).
func CheckRelease(root, tag string, digests []string) error {
	if !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(tag) {
		return fmt.Errorf("release tag %q: want vMAJOR.MINOR.PATCH", tag)
	}
	if len(digests) != len(Modules) {
		return fmt.Errorf("%d digests for %d modules", len(digests), len(Modules))
	}
	var errs []string
	for i, m := range Modules {
		for _, f := range m.Manifests {
			p, err := ReadPin(root, f)
			if err != nil {
				return err
			}
			if p.Tag != tag+m.TagSuffix {
				errs = append(errs, fmt.Sprintf("%s: spec.url has the tag %s, but this release pushes %s%s", f, p.Tag, tag, m.TagSuffix))
			}
			if p.SHA256 != digests[i] {
				errs = append(errs, fmt.Sprintf("%s: spec.sha256 is %s, but the image of dist/%s is %s (make pin)", f, p.SHA256, m.Wasm, digests[i]))
			}
		}
	}
	if errs != nil {
		return fmt.Errorf("the manifests do not match this release:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}
