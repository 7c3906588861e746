// Package lua holds the rate limiter's Lua code, as Redis runs it: a Redis
// Functions library (Redis 7+) that an operator loads once, and the same
// code as one script for EVALSHA where a path cannot carry FCALL. Package
// algorithms builds the calls and parses the replies.
package lua

import (
	_ "embed" // the code, as strings
	"strings"
	"sync"
)

// The code, in order: what every entry point shares (args.lua) and what
// each key is (roles.lua); the algorithms; settle.lua and epoch.lua, entry
// points; the limits of a decide call (limits.lua, choice.lua,
// throttle.lua, lease.lua); decide.lua, the decide entry point; and
// peek.lua, the read-only one. Each file defines locals that later files
// use (functions, and a few tables and constants), and runs nothing:
// Library registers the entry points, Script dispatches to them. Each is
// a string of its own, not an embed.FS, whose file system (embed, io/fs)
// took 27 KB of the module.
var parts = [...]*string{&argsLua, &rolesLua, &funnelLua, &slidingLogLua, &slidingCounterLua,
	&calendarLua, &concurrencyLua, &settleLua, &epochLua, &limitsLua, &choiceLua, &throttleLua, &leaseLua,
	&shortLua, &decideLua, &peekLua}

//go:embed args.lua
var argsLua string

//go:embed roles.lua
var rolesLua string

//go:embed funnel.lua
var funnelLua string

//go:embed sliding_log.lua
var slidingLogLua string

//go:embed sliding_counter.lua
var slidingCounterLua string

//go:embed calendar.lua
var calendarLua string

//go:embed concurrency.lua
var concurrencyLua string

//go:embed settle.lua
var settleLua string

//go:embed epoch.lua
var epochLua string

//go:embed limits.lua
var limitsLua string

//go:embed choice.lua
var choiceLua string

//go:embed throttle.lua
var throttleLua string

//go:embed lease.lua
var leaseLua string

//go:embed short.lua
var shortLua string

//go:embed decide.lua
var decideLua string

//go:embed peek.lua
var peekLua string

// Library is the Functions library: one function per operation, defined
// at load, so a call pays nothing to define them. Its name carries a
// digest of its code, so two builds of the filter with different code run
// side by side during a rolling upgrade, each calling its own functions.
var Library = Lib{Name: libraryName, Decide: libraryName + "_decide", Settle: libraryName + "_settle",
	Epoch: libraryName + "_epoch", Peek: libraryName + "_peek", Bump: libraryName + "_bump"}

// libraryName is Library's name. Library's fields are constants, laid out
// at build time: no code at every VM's start.
const libraryName = "ratelimit_" + libraryDigest

// Script is the same code as one Lua script: its first argument picks the
// operation ('s' settles, 'e' reads the epoch, else it decides).
var Script = Src{SHA: scriptSHA}

// Lib is a library and the names of its functions.
type Lib struct {
	Name string // "ratelimit_<12 hex digits of the code's SHA-1>"
	// Decide, Settle, Epoch and Peek are "<Name>_decide" and so on. Peek
	// decides, or settles, as Decide and Settle do, but refuses a call
	// that charges anything, and writes nothing: it is flagged no-writes.
	Decide, Settle, Epoch, Peek string
	// Bump increments the epoch key, as ratelimitctl does after a change,
	// even on a Redis full under maxmemory (flagged allow-oom).
	Bump string
}

// Src is a script and its SHA-1, as EVALSHA names it.
type Src struct {
	SHA string
}

// Source is the library's code, for FUNCTION LOAD. It and Src.Source are
// built at first use: a filter calling FCALL never needs them, and a VM
// would otherwise build them at start-up.
func (Lib) Source() string {
	librarySource.once.Do(func() { librarySource.s = buildLibrary() })
	return librarySource.s
}

// Source is the script's code, for EVAL.
func (Src) Source() string {
	scriptSource.once.Do(func() { scriptSource.s = code() + scriptTail })
	return scriptSource.s
}

func code() string {
	var b strings.Builder
	for _, src := range parts {
		b.WriteString(*src)
		b.WriteByte('\n')
	}
	return b.String()
}

// The code's digests are constants (digests.go, which TestDigests checks
// and rewrites with -update), not computed at VM start: SHA-1 over the
// code took a noticeable part of a VM's start-up in V8, where the first
// VM compiles each function as it first runs.

// librarySource and scriptSource are the sources, built on first use
// (sync.OnceValue would run code at every VM's start).
var librarySource, scriptSource struct {
	once sync.Once
	s    string
}

func buildLibrary() string {
	l := Library
	return "#!lua name=" + l.Name + "\n" + code() +
		"redis.register_function{function_name='" + l.Decide + "', callback=function(keys, args) return decide(keys, args, false) end}\n" +
		"redis.register_function{function_name='" + l.Peek + "', callback=peek, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='" + l.Settle + "', callback=settle}\n" +
		"redis.register_function{function_name='" + l.Epoch + "', callback=epoch, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='" + l.Bump + "', callback=bump, flags={'allow-oom'}}\n"
}

// scriptTail closes Script: it dispatches on its first argument.
const scriptTail = `if ARGV[1] == 'e' then return epoch(KEYS, ARGV) end
if ARGV[1] == 's' then return settle(KEYS, ARGV) end
return decide(KEYS, ARGV, false)
`
