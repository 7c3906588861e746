package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The files whose compose commands a reader copies.
var composeDocs = []string{"README.md", "deploy/README.md", composeFile}

// composeLine is a documented compose command: "docker compose" or
// "docker-compose" at the start of a line (of a comment too) and its
// arguments.
var composeLine = regexp.MustCompile(`(?m)^[#\t ]*(?:docker compose|docker-compose)[\t ]+(.+)$`)

// composeImpl is one compose implementation on this machine: how to run
// it, and what its help says it takes.
type composeImpl struct {
	name  string
	base  []string
	helps map[string]string // by the arguments before --help
}

// composeImpls are the implementations installed: docker-compose (.ci/deps
// installs Debian's, 1.29 on Debian 12), and the docker compose plugin (v2)
// where there is one. docker-compose is required.
func composeImpls(t *testing.T) []composeImpl {
	t.Helper()
	p, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose is not installed (apt-get install docker-compose); .ci/deps installs it")
	}
	out, err := exec.Command(p, "version", "--short").Output()
	if err != nil {
		t.Fatalf("docker-compose version: %v", err)
	}
	impls := []composeImpl{{"docker-compose " + strings.TrimSpace(string(out)), []string{p}, map[string]string{}}}
	if exec.Command("docker", "compose", "version").Run() == nil {
		impls = append(impls, composeImpl{"docker compose (plugin)", []string{"docker", "compose"}, map[string]string{}})
	}
	return impls
}

// options reads the options a help text lists, each with whether it takes
// a value: "-f, --file FILE" (docker-compose 1.x) or "-f, --file
// stringArray" (2.x).
func options(help string) map[string]bool {
	opts := map[string]bool{}
	for _, line := range strings.Split(help, "\n") {
		spec := strings.TrimSpace(line)
		if !strings.HasPrefix(spec, "-") {
			continue
		}
		if i := strings.Index(spec, "  "); i > 0 {
			spec = spec[:i]
		}
		var names []string
		value := false
		for _, part := range strings.Split(spec, ", ") {
			f := strings.Fields(part)
			if len(f) == 0 || !strings.HasPrefix(f[0], "-") {
				continue
			}
			names = append(names, f[0])
			value = value || len(f) > 1
		}
		for _, n := range names {
			opts[n] = value
		}
	}
	return opts
}

// commands reads the commands a help text lists under "Commands:".
func commands(help string) []string {
	var cmds []string
	_, list, _ := strings.Cut(help, "Commands:")
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(line, "  ") {
			cmds = append(cmds, f[0])
		} else if len(cmds) > 0 && strings.TrimSpace(line) == "" {
			break
		}
	}
	return cmds
}

func (c composeImpl) help(t *testing.T, args ...string) string {
	t.Helper()
	key := strings.Join(args, " ")
	if h, ok := c.helps[key]; ok {
		return h
	}
	cmd := exec.Command(c.base[0], append(append(slices.Clone(c.base[1:]), args...), "--help")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	c.helps[key] = string(out)
	return string(out)
}

// check reports what in args (a documented command, without "docker
// compose") this implementation would refuse: an unknown option or
// command, or a compose file that is not there.
func (c composeImpl) check(t *testing.T, args []string) []string {
	t.Helper()
	top := c.help(t)
	global, cmds := options(top), commands(top)
	var bad []string
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		name, _, inline := strings.Cut(args[i], "=")
		value, ok := global[name]
		switch {
		case !ok:
			bad = append(bad, "option "+name)
		case value && !inline && i+1 < len(args):
			if name == "-f" || name == "--file" {
				if _, err := os.Stat(repoPath(args[i+1])); err != nil {
					bad = append(bad, "compose file "+args[i+1])
				}
			}
			i++
		}
	}
	if i == len(args) || !slices.Contains(cmds, args[i]) {
		return append(bad, "no command among "+strings.Join(args[i:], " "))
	}
	sub := options(c.help(t, args[i]))
	for _, a := range args[i+1:] {
		if name, _, _ := strings.Cut(a, "="); strings.HasPrefix(a, "-") {
			if _, ok := sub[name]; !ok {
				bad = append(bad, args[i]+" option "+name)
			}
		}
	}
	return bad
}

// Every compose command the docs give runs with docker-compose 1.x and with
// the docker compose plugin alike: its options, command and compose file
// are known to each implementation installed (no --wait, which only 2.x
// has: smoke.sh waits for the proxy instead). The compose file itself is
// checked by TestComposeConfigValid.
func TestComposeDocumentedCommands(t *testing.T) {
	impls := composeImpls(t)
	n := 0
	for _, doc := range composeDocs {
		data, err := os.ReadFile(repoPath(doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range composeLine.FindAllStringSubmatch(string(data), -1) {
			n++
			args := strings.Fields(m[1])
			for _, c := range impls {
				if bad := c.check(t, args); len(bad) > 0 {
					t.Errorf("%s: %q: %s refuses %s", doc, strings.TrimSpace(m[0]), c.name, strings.Join(bad, ", "))
				}
			}
		}
	}
	if n < 6 {
		t.Errorf("found %d compose commands in %v; the demo's up, smoke and down for two profiles are more", n, composeDocs)
	}
	for _, c := range impls {
		t.Logf("checked %d commands with %s", n, c.name)
	}
}

// The checker refuses what docker-compose 1.x does not take.
func TestComposeCommandCheckRefuses(t *testing.T) {
	c := composeImpls(t)[0]
	for _, args := range [][]string{
		{"-f", composeFile, "--profile", "envoy", "up", "-d", "--wait"},
		{"-f", composeFile, "--profile", "envoy", "launch"},
		{"-f", "deploy/compose/none.yaml", "up", "-d"},
		{"--bogus", "up"},
	} {
		if bad := c.check(t, args); len(bad) == 0 {
			t.Errorf("%v: accepted", args)
		}
	}
	if bad := c.check(t, []string{"-f", composeFile, "--profile", "envoy", "down", "--volumes"}); len(bad) > 0 {
		t.Errorf("down --volumes: refused %v", bad)
	}
}
