package doclinks

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
)

// Every SVG under docs/ is well-formed XML whose root is an <svg> element:
// a broken picture fails `make test`, not a reader's browser.
func TestPicturesAreXML(t *testing.T) {
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	var svgs []string
	for _, f := range files {
		if path.Dir(f) == "docs" && path.Ext(f) == ".svg" {
			svgs = append(svgs, f)
		}
	}
	for _, want := range []string{"docs/burst.svg", "docs/request-flow.svg", "docs/reserve-settle.svg"} {
		if !slices.Contains(svgs, want) {
			t.Errorf("%s is missing", want)
		}
	}
	for _, f := range svgs {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkSVG(src); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The check fails on what it should.
func TestCheckSVGRefusesBrokenFiles(t *testing.T) {
	for _, bad := range []string{
		`<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>`,
		`<svg xmlns="http://www.w3.org/2000/svg"><text>a & b</text></svg>`,
		`<html></html>`,
		``,
	} {
		if checkSVG([]byte(bad)) == nil {
			t.Errorf("%q passed", bad)
		}
	}
	if err := checkSVG([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>a &amp; b</text></svg>`)); err != nil {
		t.Error(err)
	}
}

// checkSVG reads every token of src and demands an <svg> root in the SVG
// namespace.
func checkSVG(src []byte) error {
	d := xml.NewDecoder(bytes.NewReader(src))
	var root *xml.StartElement
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if s, ok := tok.(xml.StartElement); ok && root == nil {
			root = &s
		}
	}
	if root == nil {
		return errors.New("no element")
	}
	if root.Name.Local != "svg" || root.Name.Space != "http://www.w3.org/2000/svg" {
		return errors.New("the root is not an SVG <svg> element")
	}
	return nil
}
