package jsonrpc

import "testing"

func TestFormula(t *testing.T) {
	getLogs := Formula{Param: "params.0.toBlock", Minus: "params.0.fromBlock", Base: 60, Per: 1, Every: 100, Min: 60, Max: 600}
	page := Formula{Param: "params.arguments.limit", Base: 0, Per: 1, Every: 10, Min: 1, Max: 10}
	for _, c := range []struct {
		f     *Formula
		call  string
		units int64
	}{
		{&getLogs, `{"params":[{"fromBlock":1000,"toBlock":3500}]}`, 85}, // 2,500 blocks
		{&getLogs, `{"params":[{"fromBlock":"0x3e8","toBlock":"0xdac"}]}`, 85},
		{&getLogs, `{"params":[{"fromBlock":"0x3e8","toBlock":"0xdad"}]}`, 86}, // 2,501: ceil
		{&getLogs, `{"params":[{"fromBlock":"0x3e8","toBlock":"latest"}]}`, 600},
		{&getLogs, `{"params":[{"fromBlock":"0x3e8"}]}`, 600},                      // absent
		{&getLogs, `{"params":[{"toBlock":"0x3e8"}]}`, 600},                        // minus absent
		{&getLogs, `{"params":[{"fromBlock":10,"toBlock":5}]}`, 600},               // negative
		{&getLogs, `{"params":[{"fromBlock":1,"toBlock":1}]}`, 60},                 // zero width
		{&getLogs, `{"params":[{"fromBlock":0,"toBlock":1000000}]}`, 600},          // above max
		{&getLogs, `{"params":[{"fromBlock":0,"toBlock":1.5}]}`, 600},              // fractional
		{&getLogs, `{"params":[{"fromBlock":0,"toBlock":1e3}]}`, 600},              // exponent
		{&getLogs, `{"params":[{"fromBlock":0,"toBlock":-1}]}`, 600},               // negative value
		{&getLogs, `{"params":[{"fromBlock":0,"toBlock":9007199254740993}]}`, 600}, // past 2^53
		{&getLogs, `{"params":[{"fromBlock":0,"toBlock":"0x"}]}`, 600},
		{&getLogs, `{"params":[{"fromBlock":0,"toBlock":"0xg"}]}`, 600},
		{&getLogs, `{"params":[{"fromBlock":0,"toBlock":"1000"}]}`, 600}, // a decimal string
		{&getLogs, `{"params":[{"fromBlock":0,"ToBlock":1000}]}`, 600},   // a case variant
		{&getLogs, `{"params":[{"fromBlock":"0x0000000000000000000a","toBlock":"0x6e"}]}`, 61},
		{&page, `{"params":{"name":"search","arguments":{"limit":25}}}`, 3},
		{&page, `{"params":{"name":"search","arguments":{"limit":0}}}`, 1},
		{&page, `{"params":{"name":"search","arguments":{"limit":500}}}`, 10},
		{&page, `{"params":{"name":"search","arguments":{}}}`, 10},
	} {
		if got := c.f.Units(c.call); got != c.units {
			t.Errorf("Units(%s) = %d; want %d", c.call, got, c.units)
		}
	}
}

func TestFormulaBounds(t *testing.T) {
	top := Formula{Param: "p", Base: MaxValue, Per: MaxPer, Every: 1, Min: 0, Max: MaxValue}
	if top.Check() != "" {
		t.Fatalf("Check(%+v) = %q", top, top.Check())
	}
	if got := top.Apply(MaxValue, true); got != MaxValue {
		t.Errorf("Apply(2^53) = %d; want %d", got, int64(MaxValue))
	}
	low := Formula{Param: "p", Base: 0, Per: MaxPer, Every: 1, Min: 0, Max: MaxValue}
	if got := low.Apply(1<<33, true); got != 1<<53 {
		t.Errorf("Apply(2^33) = %d; want 2^53", got)
	}
	if got := low.Apply(1<<33+1, true); got != MaxValue {
		t.Errorf("Apply(2^33+1) = %d; want the max", got)
	}
	for _, c := range []struct {
		f     Formula
		field string
	}{
		{Formula{Base: 1, Every: 1, Max: 1}, "param"},
		{Formula{Param: "p", Base: -1, Every: 1, Max: 1}, "base"},
		{Formula{Param: "p", Per: MaxPer + 1, Every: 1, Max: 1}, "per"},
		{Formula{Param: "p", Every: 0, Max: 1}, "every"},
		{Formula{Param: "p", Every: 1, Min: -1, Max: 1}, "min"},
		{Formula{Param: "p", Every: 1, Min: 2, Max: 1}, "max"},
		{Formula{Param: "p", Every: 1, Max: MaxValue + 1}, "max"},
	} {
		if got := c.f.Check(); got != c.field {
			t.Errorf("Check(%+v) = %q; want %q", c.f, got, c.field)
		}
	}
}

func TestQuantity(t *testing.T) {
	for raw, want := range map[string]int64{
		`0`: 0, `42`: 42, `9007199254740992`: 1 << 53, `"0x0"`: 0, `"0xff"`: 255, `"0xFF"`: 255,
		`"0x20000000000000"`: 1 << 53,
	} {
		if v, ok := Quantity(raw); !ok || v != want {
			t.Errorf("Quantity(%s) = %d, %v; want %d", raw, v, ok, want)
		}
	}
	for _, raw := range []string{``, `-1`, `1.0`, `1e2`, `9007199254740993`, `"0x20000000000001"`, `"0x"`, `"0X1"`, `"1"`, `"latest"`, `null`, `true`, `"0x1`, `NaN`, `"0x1\u0030"`} {
		if v, ok := Quantity(raw); ok {
			t.Errorf("Quantity(%s) = %d; want none", raw, v)
		}
	}
}
