package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// oldLibrary stands for a previous build's library.
const oldLibrary = "ratelimit_000000000000"

func loadOld(t *testing.T, do func(args ...any) (any, error)) {
	t.Helper()
	src := "#!lua name=" + oldLibrary + "\nredis.register_function('" + oldLibrary + "_decide', function() return 1 end)\n"
	if _, err := do("FUNCTION", "LOAD", src); err != nil {
		t.Fatal(err)
	}
}

// install loads the library once; libraries lists the rate-limit
// libraries, marking this build's; uninstall deletes an old one and
// refuses this build's without --force.
func TestInstall(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	if _, err := s.Do("FUNCTION", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, s, redistest.Prefix(t), testRules)
	var in installed
	e.json(&in, "install")
	if in.Library != lua.Library.Name || len(in.Servers) != 1 || in.Servers[0] != (serverStatus{s.Addr, "installed"}) {
		t.Errorf("install: %+v", in)
	}
	// Without --config, and a second time.
	var out, errOut strings.Builder
	if code := run([]string{"--redis", s.Addr, "install"}, &out, &errOut); code != exitOK ||
		out.String() != s.Addr+"  "+lua.Library.Name+"  already installed\n" {
		t.Errorf("install again: exit %d, %q, %q", code, out.String(), errOut.String())
	}

	loadOld(t, s.Do)
	if _, err := s.Do("FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('other_f', function() return 1 end)\n"); err != nil {
		t.Fatal(err)
	}
	var libs libraries
	e.json(&libs, "libraries")
	if libs.Current != lua.Library.Name || len(libs.Libraries) != 2 {
		t.Fatalf("libraries: %+v; want the old one and this build's, not other", libs)
	}
	old, cur := libs.Libraries[0], libs.Libraries[1]
	if old.Name != oldLibrary || old.Current || !slices.Equal(old.Servers, []string{s.Addr}) {
		t.Errorf("the old library: %+v", old)
	}
	want := []string{lua.Library.Bump, lua.Library.Decide, lua.Library.Epoch, lua.Library.Peek, lua.Library.Settle}
	if cur.Name != lua.Library.Name || !cur.Current || !slices.Equal(cur.Functions, want) || len(cur.Missing) != 0 {
		t.Errorf("this build's library: %+v", cur)
	}
	if text := e.ok("libraries"); !strings.Contains(text, lua.Library.Name+"  yes") || !strings.Contains(text, oldLibrary+"  no") {
		t.Errorf("libraries:\n%s", text)
	}

	_, errOut2, code := e.ctl("uninstall", lua.Library.Name)
	if code != exitUsage || !strings.Contains(errOut2, "is the library this build of the filter calls") {
		t.Errorf("uninstall of this build's library: exit %d, %q", code, errOut2)
	}
	if _, _, code := e.ctl("uninstall", "other"); code != exitUsage {
		t.Errorf("uninstall of a library not ours: exit %d", code)
	}
	var un uninstalled
	e.json(&un, "uninstall", oldLibrary)
	if len(un.Servers) != 1 || un.Servers[0].Status != "deleted" {
		t.Errorf("uninstall: %+v", un)
	}
	if _, errOut, code := e.ctl("uninstall", oldLibrary); code != exitError || !strings.Contains(errOut, "no library "+oldLibrary) {
		t.Errorf("uninstall of a deleted library: exit %d, %q", code, errOut)
	}
	e.ok("uninstall", "--force", lua.Library.Name)
	e.json(&libs, "libraries")
	if len(libs.Libraries) != 1 || libs.Libraries[0].Name != lua.Library.Name || !slices.Equal(libs.Libraries[0].Missing, []string{s.Addr}) {
		t.Errorf("libraries after uninstall --force: %+v", libs)
	}
}

// On a Redis Cluster, install loads the library on every master, and
// libraries names those missing it.
func TestInstallCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	e := writeConfig(t, redistest.Prefix(t), testRules)
	e.conn = []string{"--cluster", "--redis", c.Nodes[1].Addr}
	for _, n := range c.Nodes[1:] {
		if _, err := n.Do("FUNCTION", "DELETE", lua.Library.Name); err != nil {
			t.Fatal(err)
		}
	}
	var libs libraries
	e.json(&libs, "libraries")
	if len(libs.Libraries) != 1 || len(libs.Libraries[0].Servers) != 1 || len(libs.Libraries[0].Missing) != 2 {
		t.Errorf("libraries with the library on one master of 3: %+v", libs)
	}
	var in installed
	e.json(&in, "install")
	statuses := map[string]string{}
	for _, s := range in.Servers {
		statuses[s.Addr] = s.Status
	}
	want := map[string]string{c.Nodes[0].Addr: "already installed", c.Nodes[1].Addr: "installed", c.Nodes[2].Addr: "installed"}
	if len(statuses) != 3 || !maps.Equal(statuses, want) {
		t.Errorf("install on the cluster: %+v; want %v", in.Servers, want)
	}
	for _, n := range c.Nodes {
		if v, err := n.Do("FUNCTION", "LIST", "LIBRARYNAME", lua.Library.Name); err != nil || !strings.Contains(fmt.Sprint(v), lua.Library.Name) {
			t.Errorf("master %s after install: FUNCTION LIST %v (%v)", n.Addr, v, err)
		}
	}
	var sh shown
	e.json(&sh, "show", "--rule", "api", "alice")
	if len(sh.Limits) != 2 {
		t.Errorf("show on the cluster: %+v", sh)
	}
	loadOld(t, c.Nodes[2].Do)
	var un uninstalled
	e.json(&un, "uninstall", oldLibrary)
	deleted := 0
	for _, s := range un.Servers {
		if s.Status == "deleted" {
			deleted++
		}
	}
	if len(un.Servers) != 3 || deleted != 1 {
		t.Errorf("uninstall of a library on one master of 3: %+v", un)
	}
}
