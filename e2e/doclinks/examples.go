package doclinks

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// fileArg is a word that names a file of a kind the examples pass around.
var fileArg = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_./-]*\.(json|yaml|yml|wasm|conf|acl|sh|toml)$`)

// writes are the shell forms that create the file after them.
var writes = regexp.MustCompile(`(?:>>?|\btee|\bmkdir -p|-o)\s+['"]?([A-Za-z0-9_./-]+)`)

// ExampleFiles returns each file that a shell example of the Markdown
// among files names and that the repository lacks. Examples run at the
// repository's root: a ```sh block's lines, and a ```console block's
// "$ " lines. A file the page's examples write (cat > f, tee f, -o f),
// anything under dist/ (make build writes it), absolute paths and
// here-document bodies are not checked.
func ExampleFiles(root string, files []string) ([]Broken, error) {
	exists := map[string]bool{}
	for _, f := range files {
		exists[f] = true
	}
	var broken []Broken
	for _, f := range files {
		if !strings.EqualFold(path.Ext(f), ".md") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		cmds := exampleCommands(string(src))
		written := map[string]bool{}
		for _, c := range cmds {
			for _, m := range writes.FindAllStringSubmatch(c.text, -1) {
				written[path.Clean(m[1])] = true
			}
		}
		for _, c := range cmds {
			for _, w := range strings.Fields(c.text) {
				if w == "#" || strings.HasPrefix(w, "#") {
					break
				}
				w = strings.Trim(w, `'"();,`)
				if i := strings.LastIndexByte(w, '='); i >= 0 {
					w = w[i+1:]
				}
				if !fileArg.MatchString(w) {
					continue
				}
				p := path.Clean(w)
				if written[p] || strings.HasPrefix(p, "dist/") || exists[p] {
					continue
				}
				broken = append(broken, Broken{File: f, Line: c.line, Target: w, Reason: "an example names a file the repository lacks"})
			}
		}
	}
	return broken, nil
}

type exampleCommand struct {
	text string
	line int
}

// exampleCommands are the shell lines of src's sh and console blocks,
// without here-document bodies.
func exampleCommands(src string) []exampleCommand {
	var out []exampleCommand
	lang, heredoc := "", ""
	inFence := false
	for i, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !inFence && strings.HasPrefix(trimmed, "```"):
			inFence, lang = true, strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			continue
		case inFence && trimmed == "```":
			inFence, heredoc = false, ""
			continue
		case !inFence:
			continue
		case heredoc != "":
			if trimmed == heredoc {
				heredoc = ""
			}
			continue
		}
		text := line
		switch lang {
		case "sh", "bash", "shell":
		case "console":
			var ok bool
			if text, ok = strings.CutPrefix(line, "$ "); !ok {
				continue
			}
		default:
			continue
		}
		if _, tag, ok := strings.Cut(text, "<<"); ok {
			heredoc = strings.Trim(strings.Fields(strings.TrimPrefix(tag, "-") + " x")[0], `'"`)
		}
		out = append(out, exampleCommand{text: text, line: i + 1})
	}
	return out
}
