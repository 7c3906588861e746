package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
)

// libraryPrefix starts the name of every build's library.
const libraryPrefix = "ratelimit_"

// installCmd is "install": FUNCTION LOAD of this build's library on the
// server, or on every master of a cluster. No REPLACE: a library of the
// same name holds the same code, so "already exists" means done.
type installCmd struct{}

func (*installCmd) noConfig() {}

func (c *installCmd) flags(*flag.FlagSet) {}

func (c *installCmd) check(args []string) error { return noParts("install", args) }

// installed is install's result, one line per server.
type installed struct {
	Library string         `json:"library"`
	Servers []serverStatus `json:"servers"`
}

// serverStatus is what a command found or did on one server.
type serverStatus struct {
	Addr   string `json:"addr"`
	Status string `json:"status"` // "installed", "already installed", "deleted", "absent"
}

func (c *installCmd) run(ctx context.Context, s *session, _ []string) (result, error) {
	r := &installed{Library: lua.Library.Name}
	err := s.eachNode(ctx, func(ctx context.Context, n node) error {
		status := "installed"
		if err := n.client.FunctionLoad(ctx, lua.Library.Source()).Err(); err != nil {
			if !strings.Contains(err.Error(), "already exists") {
				return fmt.Errorf("FUNCTION LOAD %s on %s: %w", lua.Library.Name, n.addr, err)
			}
			status = "already installed"
		}
		r.Servers = append(r.Servers, serverStatus{n.addr, status})
		return nil
	})
	return r, err
}

// done: with --cluster, what install did on the masters it reached is
// printed beside the error of those it did not.
func (r *installed) done() bool { return len(r.Servers) > 0 }

func (r *installed) text(w *tabwriter.Writer) {
	for _, s := range r.Servers {
		fmt.Fprintf(w, "%s\t%s\t%s\n", s.Addr, r.Library, s.Status)
	}
}

// librariesCmd is "libraries": the ratelimit_* libraries on the server or
// on each master, marking the one this build calls.
type librariesCmd struct{}

func (*librariesCmd) noConfig() {}

func (c *librariesCmd) flags(*flag.FlagSet) {}

func (c *librariesCmd) check(args []string) error { return noParts("libraries", args) }

// libraries is the libraries command's result.
type libraries struct {
	Current   string    `json:"current"` // the library this build calls
	Libraries []library `json:"libraries"`
}

// library is one library name and where it is loaded.
type library struct {
	Name      string   `json:"name"`
	Current   bool     `json:"current"`
	Functions []string `json:"functions"`
	Servers   []string `json:"servers"`
	// Missing are the servers (masters) without it.
	Missing []string `json:"missing,omitempty"`
}

func (c *librariesCmd) run(ctx context.Context, s *session, _ []string) (result, error) {
	byName := map[string]*library{}
	var addrs []string
	err := s.eachNode(ctx, func(ctx context.Context, n node) error {
		addrs = append(addrs, n.addr)
		libs, err := n.client.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: libraryPrefix + "*"}).Result()
		if err != nil {
			return fmt.Errorf("FUNCTION LIST on %s: %w", n.addr, err)
		}
		for _, l := range libs {
			lib := byName[l.Name]
			if lib == nil {
				lib = &library{Name: l.Name, Current: l.Name == lua.Library.Name}
				for _, f := range l.Functions {
					lib.Functions = append(lib.Functions, f.Name)
				}
				slices.Sort(lib.Functions)
				byName[l.Name] = lib
			}
			lib.Servers = append(lib.Servers, n.addr)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if byName[lua.Library.Name] == nil {
		byName[lua.Library.Name] = &library{Name: lua.Library.Name, Current: true, Functions: []string{}, Servers: []string{}}
	}
	r := &libraries{Current: lua.Library.Name}
	for _, l := range byName {
		for _, a := range addrs {
			if !slices.Contains(l.Servers, a) {
				l.Missing = append(l.Missing, a)
			}
		}
		r.Libraries = append(r.Libraries, *l)
	}
	slices.SortFunc(r.Libraries, func(a, b library) int { return strings.Compare(a.Name, b.Name) })
	return r, nil
}

func (r *libraries) text(w *tabwriter.Writer) {
	fmt.Fprintf(w, "LIBRARY\tCALLED BY THIS BUILD\tLOADED ON\tMISSING ON\n")
	for _, l := range r.Libraries {
		current := "no"
		if l.Current {
			current = "yes"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", l.Name, current, orDash(strings.Join(l.Servers, ",")), orDash(strings.Join(l.Missing, ",")))
	}
}

// uninstallCmd is "uninstall": FUNCTION DELETE of an old build's library,
// once no proxy calls it.
type uninstallCmd struct{ force bool }

func (*uninstallCmd) noConfig() {}

func (c *uninstallCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.force, "force", false, "delete the library this build calls too (its proxies then fail every call)")
}

func (c *uninstallCmd) check(args []string) error {
	if len(args) != 1 {
		return usagef("uninstall takes one library name (see ratelimitctl libraries), not %d arguments", len(args))
	}
	if !strings.HasPrefix(args[0], libraryPrefix) {
		return usagef("%q is not a rate-limit library: their names start with %s", args[0], libraryPrefix)
	}
	if args[0] == lua.Library.Name && !c.force {
		return usagef("%s is the library this build of the filter calls: proxies running it would fail every call; add --force to delete it anyway", args[0])
	}
	return nil
}

// uninstalled is uninstall's result, one line per server.
type uninstalled struct {
	Library string         `json:"library"`
	Servers []serverStatus `json:"servers"`
}

func (c *uninstallCmd) run(ctx context.Context, s *session, args []string) (result, error) {
	r := &uninstalled{Library: args[0]}
	found := false
	err := s.eachNode(ctx, func(ctx context.Context, n node) error {
		status := "deleted"
		if err := n.client.FunctionDelete(ctx, args[0]).Err(); err != nil {
			if !strings.Contains(err.Error(), "Library not found") {
				return fmt.Errorf("FUNCTION DELETE %s on %s: %w", args[0], n.addr, err)
			}
			status = "absent"
		} else {
			found = true
		}
		r.Servers = append(r.Servers, serverStatus{n.addr, status})
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("no library %s on %s (see ratelimitctl libraries)", args[0], s.addrs())
	}
	return r, err
}

func (r *uninstalled) done() bool { return len(r.Servers) > 0 }

func (r *uninstalled) text(w *tabwriter.Writer) {
	for _, s := range r.Servers {
		fmt.Fprintf(w, "%s\t%s\t%s\n", s.Addr, r.Library, s.Status)
	}
}

// eachNode runs f on the single server, or on every master in address
// order, one at a time.
func (s *session) eachNode(ctx context.Context, f func(context.Context, node) error) error {
	ns, err := s.nodes(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range ns {
		errs = append(errs, f(ctx, n))
	}
	return errors.Join(errs...)
}

// addrs names the servers the session reaches, for messages.
func (s *session) addrs() string {
	if s.single != nil {
		return s.single.Options().Addr
	}
	return "the cluster's masters"
}

func noParts(cmd string, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, not %q", cmd, args[0])
	}
	return nil
}
