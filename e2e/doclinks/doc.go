// Package doclinks checks the repository's Markdown as GitHub renders it:
// every relative link and image must name a file or directory of the
// repository, and every #anchor a heading (by GitHub's slug) or an
// <a id>/<a name> of the file it points into. Links to other sites, and
// anything inside code, are not checked. Headings are ATX (# Title) ones,
// as everywhere in this repository.
//
// ExampleFiles checks the shell examples (```sh blocks, and the "$ " lines
// of ```console ones): every file they name must be in the repository,
// be written by the page's own examples, or be under dist/.
//
// Its tests run both checks on every Markdown file of the repository, in
// `make test`, and parse every SVG under docs/ as XML.
package doclinks
