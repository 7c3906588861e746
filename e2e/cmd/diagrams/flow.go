package main

import "fmt"

// requestFlow draws the path of one request as a sequence diagram: the
// decision at the request, then the response and its settle.
func requestFlow() []byte {
	const w, h = 960, 880
	c := newCanvas(w, h, "One request through the filter")
	c.text(20, 26, ink, `font-size="15" font-weight="bold"`, "One request through the filter: one script call decides, one more settles a cost known at the response")

	// The participants and their lifelines.
	type part struct {
		x, w   float64
		name   string
		detail string
	}
	const client, proxy, transport, redis, upstream = 70, 290, 540, 730, 885
	parts := []part{
		{client, 100, "Client", ""},
		{proxy, 170, "Proxy + the filter", "Envoy, Istio or Higress"},
		{transport, 212, "Redis callout (Higress)", "or HTTP to Webdis (Envoy, Istio)"},
		{redis, 130, "Redis 7+", "Functions library"},
		{upstream, 100, "Upstream", ""},
	}
	for _, p := range parts {
		c.line(p.x, 96, p.x, h-16, neutral, 1, "4 4")
	}
	for _, p := range parts {
		c.box(p.x-p.w/2, 46, p.w, 50, "#fafafa", neutral, "")
		if p.detail == "" {
			c.lines(p.x, 76, 0, "middle", true, p.name)
		} else {
			c.lines(p.x, 66, 17, "middle", true, p.name, p.detail)
		}
	}
	note := func(x, y, w float64, fill, stroke, dash string, ls ...string) {
		c.box(x, y, w, float64(len(ls))*16+10, fill, stroke, dash)
		c.lines(x+10, y+18, 16, "start", true, ls...)
	}
	label := func(x, y float64, col, s string) { c.text(x, y, col, "", s) }

	// The request, and what the filter does before any call.
	c.arrow(client, 136, proxy-2, 136, blue, "")
	label(client+14, 130, ink, "request headers")
	note(proxy+8, 150, 330, "#e3f2fd", blue, "",
		"The filter, in the worker's VM:",
		"1. match the rules (path, method, headers…)",
		"2. build each rule's key (client IP, header, JWT…)",
		"3. deny cache: a key Redis denied is answered 429",
		"    here until its Retry-After, with no call")

	// The one call, through the transport.
	through := func(y float64) {
		c.raw(fmt.Sprintf(`<circle cx="%d" cy="%.1f" r="4" fill="%s"/>`, transport, y, purple))
	}
	c.arrow(proxy, 278, redis-2, 278, purple, "")
	through(278)
	label(proxy+10, 272, ink, "4. ONE call: FCALL decide, every limit of every matching rule")
	label(proxy+10, 294, soft, "through the proxy's Redis callout (Higress build), or an HTTP")
	label(proxy+10, 309, soft, "callout to Webdis (stock build: Envoy, Istio)")
	note(redis-120, 318, 326, "#fbe9e7", "#d84315", "",
		"Redis decides every limit atomically:",
		"all or nothing, so a denied request is",
		"charged nothing; the clock is Redis TIME,",
		"one clock for every proxy")
	c.arrow(redis, 408, proxy+2, 408, purple, "6 4")
	through(408)
	label(proxy+10, 402, ink, "5. reply: per limit allowed, remaining, retry after")
	note(proxy+8, 418, 330, "#fff8e1", amber, "5 4",
		"Redis error, timeout, or the breaker open:",
		"failure_mode decides: allow, deny (failure_status),",
		"or local (each VM enforces its share of each limit)")

	// The decision.
	const top, split, bottom = 492.0, 560.0, 864.0
	c.box(14, top, w-28, bottom-top, "none", ink, "")
	c.raw(`<path d="M14,492 h56 v14 l-8,8 h-48 z" fill="#f5f5f5" stroke="#222" stroke-width="1.5"/>`)
	c.text(24, 508, ink, `font-weight="bold"`, "alt")
	c.text(80, 508, red, `font-weight="bold"`, "[denied]")
	c.arrow(proxy, 538, client+2, 538, red, "")
	c.text(client+14, 532, red, `font-weight="bold"`, "429 at once")
	c.text(client+14, 553, soft, "", "Retry-After, RateLimit headers")
	label(proxy+10, 542, soft, "the upstream never sees it; nothing was charged")
	c.line(14, split, w-14, split, ink, 1, "6 4")
	c.text(24, split+18, green, `font-weight="bold"`, "[admitted]")

	c.arrow(proxy, 600, upstream-2, 600, blue, "")
	label(proxy+10, 594, ink, "6. the request goes on")
	c.arrow(upstream, 640, proxy+2, 640, green, "")
	label(proxy+10, 634, ink, "7. response: a JSON body, or an event stream (SSE)")
	c.arrow(proxy, 680, client+2, 680, green, "")
	c.text(client+14, 674, ink, "", "8. + RateLimit headers")
	c.text(client+14, 695, soft, "", "the body passes as it comes")
	note(proxy+8, 688, 330, "#e8f5e9", green, "",
		"A response_cost rule (LLM tokens):",
		"its usage is read from the JSON body, or from",
		"each SSE event as it passes, never holding it")
	c.arrow(proxy, 776, redis-2, 776, purple, "")
	through(776)
	label(proxy+10, 770, ink, "9. at the response's end: FCALL settle")
	note(redis-120, 786, 326, "#fbe9e7", "#d84315", "",
		"Redis refunds or charges the difference",
		"(used − reserved); a settle never denies,",
		"so a key can end in debt (reserve-settle.svg)")
	return c.bytes()
}
