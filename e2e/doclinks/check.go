package doclinks

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Broken is one link that does not resolve.
type Broken struct {
	File   string // relative to the repository, with slashes
	Line   int
	Target string // as written
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

// Files lists the repository's files, relative to root with slashes:
// those git tracks or would track (untracked but not ignored), and that
// exist.
func Files(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	var files []string
	for _, f := range strings.Split(string(bytes.TrimSuffix(out, []byte{0})), "\x00") {
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// Check reads every Markdown file among files (paths relative to root,
// with slashes, as Files gives them) and returns each relative link whose
// file is not among files (or a directory holding one), or whose anchor
// the Markdown file it names lacks.
func Check(root string, files []string) ([]Broken, error) {
	exists := map[string]bool{".": true}
	for _, f := range files {
		for d := f; d != "." && !exists[d]; d = path.Dir(d) {
			exists[d] = true
		}
	}
	pages := map[string]*page{}
	for _, f := range files {
		if !strings.EqualFold(path.Ext(f), ".md") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		pages[f] = parse(string(src))
	}
	var broken []Broken
	for _, f := range files {
		p := pages[f]
		if p == nil {
			continue
		}
		for _, l := range p.links {
			if reason := resolve(f, l.target, exists, pages); reason != "" {
				broken = append(broken, Broken{File: f, Line: l.line, Target: l.target, Reason: reason})
			}
		}
		for _, u := range p.used {
			if !p.defined[u.target] {
				broken = append(broken, Broken{File: f, Line: u.line, Target: "[" + u.target + "]", Reason: "no such link reference definition"})
			}
		}
	}
	return broken, nil
}

// resolve says why target, written in file from, does not resolve, or "".
func resolve(from, target string, exists map[string]bool, pages map[string]*page) string {
	if target == "" || scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	file, _, _ = strings.Cut(file, "?")
	to := from
	if file != "" {
		p, err := url.PathUnescape(file)
		if err != nil {
			return "bad percent-encoding"
		}
		if strings.HasPrefix(p, "/") {
			to = path.Clean(strings.TrimLeft(p, "/"))
		} else {
			to = path.Join(path.Dir(from), p)
		}
		if to == ".." || strings.HasPrefix(to, "../") {
			return "outside the repository"
		}
		if !exists[to] {
			return "no such file or directory"
		}
	}
	if anchor == "" {
		return ""
	}
	page := pages[to]
	if page == nil {
		return "" // a directory, or a file GitHub anchors by line
	}
	a, err := url.PathUnescape(anchor)
	if err != nil {
		return "bad percent-encoding"
	}
	if !page.anchors[a] {
		return fmt.Sprintf("no heading or <a id> %q in %s", a, to)
	}
	return ""
}
