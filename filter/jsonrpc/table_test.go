package jsonrpc

import (
	"strings"
	"testing"
)

func TestTableLookup(t *testing.T) {
	getLogs := &Formula{Param: "params.0.toBlock", Minus: "params.0.fromBlock", Base: 60, Per: 1, Every: 100, Min: 60, Max: 600}
	table := Table{Names: map[string]Entry{
		"eth_chainId": {Units: 0},
		"eth_call":    {Units: 26},
		"eth_get*":    {Units: 20},
		"eth_getB*":   {Units: 15},
		"eth_getLogs": {Formula: getLogs},
		"debug_*":     {Units: 900},
	}, Refuse: true}
	table.Seal()
	if table.Dearest != 900 {
		t.Errorf("Dearest = %d; want 900", table.Dearest)
	}
	const logs = `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x1000","toBlock":"0x19c4"}]}`
	for _, c := range []struct {
		name, call string
		units      int64
		refused    bool
	}{
		{"eth_chainId", ``, 0, false},
		{"eth_call", ``, 26, false},
		{"eth_getBalance", ``, 15, false},
		{"eth_getCode", ``, 20, false},
		{"eth_get*", ``, 20, false},
		{"eth_getLogs", logs, 85, false},
		{"eth_getLogs", `{"params":[{"fromBlock":"0x1000","toBlock":"latest"}]}`, 600, false},
		{"debug_traceCall", ``, 900, false},
		{"eth_sendRawTransaction", ``, 0, true},
		{"", ``, 0, true},
		{"eth_get" + strings.Repeat("x", MaxNameLen), ``, 0, true},
	} {
		units, refused := table.Cost(c.name, c.call)
		if units != c.units || refused != c.refused {
			t.Errorf("Cost(%q) = %d, %v; want %d, %v", c.name, units, refused, c.units, c.refused)
		}
	}

	all := Table{Names: map[string]Entry{"*": {Units: 3}, "ping": {Units: 0}}, Default: 7}
	all.Seal()
	for name, want := range map[string]int64{"ping": 0, "tools/call": 3, "": 3} {
		if units, refused := all.Cost(name, ""); units != want || refused {
			t.Errorf("with *: Cost(%q) = %d, %v; want %d", name, units, refused, want)
		}
	}
	def := Table{Names: map[string]Entry{"a": {Units: 2}}, Default: 5}
	def.Seal()
	if units, refused := def.Cost("b", ""); units != 5 || refused || def.Dearest != 5 {
		t.Errorf("default: Cost(b) = %d, %v, Dearest %d; want 5, false, 5", units, refused, def.Dearest)
	}
}

func TestTableCostAllocatesNothing(t *testing.T) {
	table := Table{Names: map[string]Entry{
		"eth_getLogs": {Formula: &Formula{Param: "params.0.toBlock", Minus: "params.0.fromBlock", Base: 60, Per: 1, Every: 100, Min: 60, Max: 600}},
		"eth_get*":    {Units: 20},
	}, Default: 1}
	table.Seal()
	const logs = `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x1000","toBlock":"0x19c4"}]}`
	var units int64
	if n := testing.AllocsPerRun(100, func() { units, _ = table.Cost("eth_getLogs", logs) }); n != 0 || units != 85 {
		t.Fatalf("Cost: %v allocations, %d units; want 0, 85", n, units)
	}
	if n := testing.AllocsPerRun(100, func() { units, _ = table.Cost("eth_getCode", logs) }); n != 0 || units != 20 {
		t.Fatalf("Cost: %v allocations, %d units; want 0, 20", n, units)
	}
}
