package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Exit statuses: 0 done, 1 an error (the configuration, the rule, the key or
// Redis): nothing done, or, when stdout shows a change's result, done in
// part, stderr saying what was not; 2 a command line ratelimitctl cannot
// run.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a command line that cannot run, whatever the configuration
// and Redis hold: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// runner is one command: its own flags, a check of the command line alone
// (usage errors), and the work, whose result is printed as text or JSON.
type runner interface {
	flags(fs *flag.FlagSet)
	check(args []string) error
	run(ctx context.Context, s *session, args []string) (result, error)
}

// result is what a command did or found: JSON-encoded with --json, else
// written as aligned text.
type result interface {
	text(w *tabwriter.Writer)
}

// command describes a runner for the command line and its help.
type command struct {
	name     string // as typed: "show", "tier set"
	synopsis string // what follows the name
	summary  string // one line, for the list of commands
	help     string // the rest, for "ratelimitctl help <name>"
	new      func() runner
}

func commands() []command {
	return []command{
		{"show", "--rule R [--tier T] PART...", "a key's limits as the filter would decide them now; block, tier, override",
			"Runs the filter's own script at cost 0, so nothing is charged. The tier is the one\n" +
				"assigned in Redis (tier set), the one the key's part names, or, for tiers from a\n" +
				"header, --tier (default: the rule's default tier). A limit that responses charged\n" +
				"after the fact beyond its limit is in debt: its used exceeds its limit, its\n" +
				"remaining is negative, and a debt line says when it is back to 0. It only reads\n" +
				"(FCALL_RO of the library's peek), so it works on a replica and on a Redis full\n" +
				"under maxmemory.", func() runner { return &showCmd{} }},
		{"reset", "--rule R [--all] PART...", "delete a key's limit state, so its limits start afresh",
			"Deletes the state of every limit position of every tier. Keeps the key's block,\n" +
				"tier and override; --all deletes them too. Deletes work on a Redis full under\n" +
				"maxmemory; if the epoch cannot be bumped after them, reset says what it deleted,\n" +
				"how long proxies may keep denying, and exits 1.", func() runner { return &resetCmd{} }},
		{"block", "--rule R [--ttl D] PART...", "block a key: the filter denies all its requests",
			"Without --ttl the block never expires: it lasts until `ratelimitctl unblock`.\n" +
				"--ttl takes Go durations and days and weeks: 90s, 30m, 12h, 7d, 2w, 1d12h.", func() runner { return &blockCmd{} }},
		{"unblock", "--rule R PART...", "remove a key's block", "", func() runner { return &deleteCmd{what: "block"} }},
		{"tier set", "--rule R --tier T [--ttl D] PART...", "assign a key a tier (rules whose tiers come from Redis)",
			"Without --ttl the tier never expires: it stays until `ratelimitctl tier clear`.\n" +
				"--ttl takes Go durations and days and weeks: 90s, 30m, 12h, 7d, 2w, 1d12h.", func() runner { return &tierSetCmd{} }},
		{"tier clear", "--rule R PART...", "remove a key's tier: the rule's default tier applies", "",
			func() runner { return &deleteCmd{what: "tier"} }},
		{"override set", "--rule R --limits JSON [--ttl D] PART...", "give a key its own limits (rules with overrides)",
			"--limits is a JSON array of limits, as in the rule's \"limits\". Without --ttl the\n" +
				"override never expires: it stays until `ratelimitctl override clear`. --ttl takes\n" +
				"Go durations and days and weeks: 90s, 30m, 12h, 7d, 2w, 1d12h.", func() runner { return &overrideSetCmd{} }},
		{"override clear", "--rule R PART...", "remove a key's override", "", func() runner { return &deleteCmd{what: "override"} }},
		{"install", "", "load this build's Redis Functions library (on every master with --cluster)",
			"FUNCTION LOAD of the library the filter calls, named after its code's digest, so\n" +
				"it is done once per build, before its proxies start. A library of that name\n" +
				"holds the same code: if it is there, install says \"already installed\".\n" +
				"Needs no --config.", func() runner { return &installCmd{} }},
		{"libraries", "", "the rate-limit libraries loaded, marking the one this build calls",
			"FUNCTION LIST of the ratelimit_* libraries, on every master with --cluster, and\n" +
				"the servers missing each. Needs no --config.", func() runner { return &librariesCmd{} }},
		{"uninstall", "[--force] NAME", "delete an old build's library, once no proxy runs that build",
			"FUNCTION DELETE on the server, or on every master with --cluster. Refuses the\n" +
				"library this build calls unless --force. Needs no --config.", func() runner { return &uninstallCmd{} }},
		{"list", "[--rule R] [--cursor C] [--count N]", "the keys of a rule (of every rule without --rule), a page at a time",
			"SCANs (never KEYS) for the rule's keys and groups them by key. A page ends once it\n" +
				"holds at least --count keys; pass the cursor it prints to --cursor for the next\n" +
				"page, until the cursor is 0. With --cluster the cursor is <master>:<cursor>, the\n" +
				"masters taken in address order. A key whose Redis keys straddle two pages shows\n" +
				"in both, each time with what that page found.", func() runner { return &listCmd{} }},
	}
}

const intro = `ratelimitctl inspects and changes the rate-limit filter's state in Redis.

Usage: ratelimitctl COMMAND [flags] [PART...]

PART values are a key's values as a request carries them (an API key, a client
address...), one per part of the rule's key, in order; the filter's key
normalization applies. Pass "" for a part a request lacked under
on_missing_key: shared, and put -- before a PART that starts with -.
Every change bumps the epoch key, so every proxy drops its deny cache within
a second.
`

// run is the command line: args without the program name. It returns the
// exit status.
func run(args []string, stdout, stderr io.Writer) int {
	g := &globals{}
	top := flag.NewFlagSet("ratelimitctl", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	g.register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(stdout)
			return exitOK
		}
		return fail(stderr, flagError(err), "")
	}
	args = top.Args()
	if len(args) == 0 {
		writeUsage(stderr)
		return exitUsage
	}
	if args[0] == "help" {
		return help(args[1:], stdout, stderr)
	}
	cmd, args, err := lookup(args)
	if err != nil {
		return fail(stderr, err, "")
	}
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	r := cmd.new()
	r.flags(fs)
	parts, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		writeCommandHelp(stdout, cmd)
		return exitOK
	}
	if err != nil {
		return fail(stderr, flagError(err), cmd.name)
	}
	_, configFree := r.(interface{ noConfig() })
	if err := g.check(!configFree); err != nil {
		return fail(stderr, err, cmd.name)
	}
	if err := r.check(parts); err != nil {
		return fail(stderr, err, cmd.name)
	}
	ctx := context.Background()
	s, err := g.open(ctx)
	if err != nil {
		return fail(stderr, err, cmd.name)
	}
	defer s.close()
	res, err := r.run(ctx, s, parts)
	if p, ok := res.(partial); err != nil && (!ok || !p.done()) {
		return fail(stderr, err, cmd.name)
	}
	if perr := g.print(stdout, res); perr != nil {
		return fail(stderr, perr, cmd.name)
	}
	if err != nil { // done in part: stdout says what was done, stderr what was not
		return fail(stderr, err, cmd.name)
	}
	return exitOK
}

// partial is a result that may be printed beside an error: done says
// that the command did something before the error.
type partial interface{ done() bool }

// print writes res as JSON with --json, else as aligned text.
func (g *globals) print(w io.Writer, res result) error {
	if g.json {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	res.text(tw)
	return tw.Flush()
}

// fail writes err to stderr and returns its exit status; a usage error
// also says where the usage is.
func fail(stderr io.Writer, err error, cmd string) int {
	var ue *usageError
	if !errors.As(err, &ue) {
		fmt.Fprintf(stderr, "ratelimitctl: %v\n", err)
		return exitError
	}
	name := "ratelimitctl"
	if cmd != "" {
		name += " " + cmd
	}
	fmt.Fprintf(stderr, "%s: %v\nRun 'ratelimitctl help", name, err)
	if cmd != "" {
		fmt.Fprintf(stderr, " %s", cmd)
	}
	fmt.Fprintln(stderr, "' for usage.")
	return exitUsage
}

// flagError is an error of package flag, naming flags as the help does
// ("--ttl", not "-ttl").
func flagError(err error) error {
	return usagef("%s", strings.NewReplacer(": -", ": --", "flag -", "flag --").Replace(err.Error()))
}

// lookup finds the command args start with, and returns the arguments
// after its name.
func lookup(args []string) (command, []string, error) {
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return c, args[len(words):], nil
		}
	}
	if args[0] == "tier" || args[0] == "override" {
		return command{}, nil, usagef("%s needs a subcommand: %s set or %s clear", args[0], args[0], args[0])
	}
	return command{}, nil, usagef("unknown command %q", args[0])
}

// parseInterspersed parses flags anywhere among the arguments, and returns
// the others in order. After "--" every argument is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeUsage(stdout)
		return exitOK
	}
	cmd, rest, err := lookup(args)
	if err == nil && len(rest) > 0 {
		err = usagef("unknown command %q", strings.Join(args, " "))
	}
	if err != nil {
		return fail(stderr, err, "")
	}
	writeCommandHelp(stdout, cmd)
	return exitOK
}

func writeUsage(w io.Writer) {
	fmt.Fprint(w, intro, "\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, "\nFlags of every command:\n")
	writeFlags(w, func(fs *flag.FlagSet) { (&globals{}).register(fs) })
	fmt.Fprint(w, "\nRun 'ratelimitctl help COMMAND' for a command's flags.\n")
}

func writeCommandHelp(w io.Writer, c command) {
	fmt.Fprintf(w, "Usage: ratelimitctl %s %s\n\n%s.\n", c.name, c.synopsis, strings.ToUpper(c.summary[:1])+c.summary[1:])
	if c.help != "" {
		fmt.Fprintf(w, "%s\n", c.help)
	}
	fmt.Fprint(w, "\nFlags:\n")
	writeFlags(w, func(fs *flag.FlagSet) { c.new().flags(fs) })
	fmt.Fprint(w, "\nFlags of every command: see 'ratelimitctl help'.\n")
}

// writeFlags lists the flags register adds, as --name, aligned.
func writeFlags(w io.Writer, register func(*flag.FlagSet)) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	register(fs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(tw, "  --%s %s\t%s\n", f.Name, arg, usage)
	})
	tw.Flush()
}
