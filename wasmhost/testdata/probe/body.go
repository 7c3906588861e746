package main

import (
	"strings"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

// The response body and trailers callbacks: rewrite-body, and the
// x-probe-body modes (log, hold, reply) documented in main.go.

func (c *httpContext) OnHttpResponseBody(size int, eos bool) types.Action {
	if c.mode == "rewrite-body" && eos {
		proxywasm.ReplaceHttpResponseBody([]byte("rewritten by probe"))
	}
	if c.bodyMode == "" {
		return types.ActionContinue
	}
	body, err := proxywasm.GetHttpResponseBody(0, size)
	if err != nil && size > 0 {
		proxywasm.LogErrorf("reading the response body: %v", err)
	}
	proxywasm.LogInfof("probe response body id=%d size=%d eos=%v body=%q", c.id, size, eos, body)
	switch {
	case c.bodyMode == "reply":
		proxywasm.SendHttpResponse(500, nil, []byte("too late"), -1)
		return types.ActionPause
	case c.bodyMode != "hold" || c.hold == released:
		return types.ActionContinue
	case c.hold == holding && strings.Contains(string(body), "RELEASE"):
		c.hold = releasing
		hdrs := [][2]string{{":method", "GET"}, {":path", "/release"}, {":authority", "callout.local"}}
		if _, err := proxywasm.DispatchHttpCall(cfg.HTTPCluster, hdrs, nil, nil, 5000, func(int, int, int) {
			proxywasm.LogInfof("probe release id=%d", c.id)
			c.hold = released
			proxywasm.ResumeHttpResponse()
		}); err != nil {
			proxywasm.LogErrorf("release callout: %v", err)
		}
	}
	return types.ActionPause
}

const (
	holding = iota
	releasing
	released
)

func (c *httpContext) OnHttpResponseTrailers(n int) types.Action {
	if c.bodyMode != "" {
		proxywasm.LogInfof("probe response trailers id=%d n=%d", c.id, n)
	}
	return types.ActionContinue
}
