package deploy

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// codeBlock is a fenced code block of a Markdown file.
type codeBlock struct {
	lang, body string
	line       int
	// before is the last non-blank line before the fence.
	before string
}

func codeBlocks(t *testing.T, path string) []codeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []codeBlock
	var cur *codeBlock
	var lines []string
	prev := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &codeBlock{lang: strings.TrimPrefix(trimmed, "```"), line: n, before: prev}
			lines = nil
		case cur != nil && trimmed == "```":
			cur.body = strings.Join(lines, "\n")
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, line)
		case trimmed != "":
			prev = trimmed
		}
	}
	if cur != nil {
		t.Fatalf("%s: unclosed code block at line %d", path, cur.line)
	}
	return blocks
}

// The guide's examples hold: blocks marked as copies of a file equal it,
// its redis objects parse (inside a minimal configuration), and its links
// lead to files that exist.
func TestREADMEExamples(t *testing.T) {
	const readme = "deploy/README.md"
	sameAs := regexp.MustCompile(`^<!-- same as (\S+) -->$`)
	copies, redis := 0, 0
	for _, b := range codeBlocks(t, repoPath(readme)) {
		if m := sameAs.FindStringSubmatch(b.before); m != nil {
			data, err := os.ReadFile(repoPath(m[1]))
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimRight(string(data), "\n") != b.body {
				t.Errorf("%s:%d: the block differs from %s", readme, b.line, m[1])
			}
			copies++
			continue
		}
		if b.lang == "json" && strings.HasPrefix(b.body, `"redis":`) {
			cfg := `{` + b.body + `,"rules":[{"name":"r","key":[{"source":"client_ip"}],` +
				`"limits":[{"algorithm":"sliding_log","limit":1,"window":"1s"}]}]}`
			parsePluginConfig(t, readme+":"+itoa(b.line), []byte(cfg))
			redis++
		}
	}
	if copies < 1 || redis < 2 {
		t.Errorf("%d copies of files and %d redis examples checked: the README lost its examples", copies, redis)
	}

	data, err := os.ReadFile(repoPath(readme))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\]\(([^)#\s]+)\)`).FindAllStringSubmatch(string(data), -1) {
		if strings.Contains(m[1], "://") {
			continue
		}
		if _, err := os.Stat(repoPath("deploy/" + m[1])); err != nil {
			t.Errorf("%s: link %s: %v", readme, m[1], err)
		}
	}
}
