// Package doclinks checks the repository's Markdown as GitHub renders it:
// every relative link and image must name a file or directory of the
// repository, and every #anchor a heading (by GitHub's slug) or an
// <a id>/<a name> of the file it points into. Links to other sites, and
// anything inside code, are not checked. Headings are ATX (# Title) ones,
// as everywhere in this repository.
//
// Its tests run the check on every Markdown file of the repository, in
// `make test`, and parse every SVG under docs/ as XML.
package doclinks
