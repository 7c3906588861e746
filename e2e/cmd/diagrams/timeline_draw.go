package main

import (
	"fmt"
	"strconv"
)

// timeline is what reserveSettle found, to draw.
type timeline struct {
	pts           []float64 // (seconds, remaining) pairs; a jump is two at one time
	jumps         []jump
	notes         []string // one per numbered badge, in order
	tC, retry     float64  // C's denial and its Retry-After
	tDebt, tClear float64  // when the debt is made, and when it is paid
	need          float64  // what C reserves
	start, end    float64  // the seconds drawn
}

// The plot's frame, in pixels, and its range of remaining tokens.
const (
	px0, px1       = 90.0, 920.0
	pyTop, pyBot   = 104.0, 404.0
	vLow, vHigh    = -400.0, 1000.0
	legendTop      = 468.0
	legendLine     = 20.0
	timelineWidth  = 960
	timelineHeight = 668
)

func drawTimeline(tl timeline) []byte {
	x := func(t float64) float64 { return px0 + (t-tl.start)/(tl.end-tl.start)*(px1-px0) }
	y := func(v float64) float64 { return pyBot - (v-vLow)/(vHigh-vLow)*(pyBot-pyTop) }
	c := newCanvas(timelineWidth, timelineHeight, "Reserve, then settle: a token limit in debt")
	c.text(20, 26, ink, `font-size="15" font-weight="bold"`, "Reserve, then settle: a token limit goes into debt, and later requests wait it out")
	c.text(20, 48, soft, "", "One API key under a funnel (GCRA) of 1,000 tokens draining 1,000 a minute (16.7 a second). Each request reserves 500 at")
	c.text(20, 64, soft, "", "its decision; when its response ends, a settle charges what it used. Every number below comes from the script's Go model.")

	// Axes and grid.
	for v := vLow; v <= vHigh; v += 200 {
		col, width := grid, 1.0
		if v == 0 {
			col, width = "#9e9e9e", 1.5
		}
		c.line(px0, y(v), px1, y(v), col, width, "")
		c.text(px0-6, y(v)+4, soft, `text-anchor="end"`, num(int64(v)))
	}
	for t := 0.0; t <= tl.end; t += 6 {
		c.line(x(t), pyBot, x(t), pyBot+5, soft, 1, "")
		c.text(x(t), pyBot+18, soft, `text-anchor="middle"`, secs(t))
	}
	c.text((px0+px1)/2, pyBot+36, soft, `text-anchor="middle"`, "time, on Redis's clock")
	c.raw(fmt.Sprintf(`<text transform="translate(32 %.1f) rotate(-90)" text-anchor="middle" fill="%s">tokens remaining</text>`, (pyTop+pyBot)/2, soft))
	c.line(px0, y(vHigh), px1, y(vHigh), neutral, 1.5, "6 4")
	c.text(px1, y(vHigh)-6, soft, `text-anchor="end"`, "capacity 1,000")

	// The debt, shaded below 0.
	debt := []float64{x(tl.tDebt), y(0)}
	for i := 0; i+1 < len(tl.pts); i += 2 {
		if t, v := tl.pts[i], tl.pts[i+1]; t >= tl.tDebt && t <= tl.tClear && v < 0 {
			debt = append(debt, x(t), y(v))
		}
	}
	debt = append(debt, x(tl.tClear), y(0))
	c.polyline(debt, "none", pink, 0)
	c.text(x(tl.tDebt)+4, y(-310), red, `font-weight="bold"`, "in debt: every request is denied")

	// What C waits for: 500 free, told by its Retry-After.
	c.line(x(tl.tC), y(tl.need), x(tl.tC+tl.retry), y(tl.need), red, 1, "2 3")
	c.text(x(tl.tC)+4, y(tl.need)-6, red, "", "C needs 500 free")
	c.arrow(x(tl.tC), y(800), x(tl.tC+tl.retry)-2, y(800), red, "6 4")
	c.text((x(tl.tC)+x(tl.tC+tl.retry))/2, y(800)-8, red, `text-anchor="middle" font-weight="bold"`, "Retry-After: "+strconv.FormatFloat(tl.retry, 'f', -1, 64)+" s")

	// The remaining, broken at each jump, and the jumps as arrows.
	var seg []float64
	for i := 0; i+1 < len(tl.pts); i += 2 {
		if i > 0 && tl.pts[i] == tl.pts[i-2] && len(seg) > 0 {
			c.polyline(seg, blue, "none", 2.5)
			seg = nil
		}
		seg = append(seg, x(tl.pts[i]), y(tl.pts[i+1]))
	}
	c.polyline(seg, blue, "none", 2.5)
	jumpColour := map[jumpKind]string{reserved: blue, refunded: green, charged: red}
	for _, j := range tl.jumps {
		col := jumpColour[j.kind]
		c.arrow(x(j.t), y(j.from), x(j.t), y(j.to), col, "3 2")
		// a reservation's label on the left, a settle's on the right
		label, lx, anchor := num(int64(j.to-j.from)), x(j.t)-6, "end"
		if j.to > j.from {
			label = "+" + label
		}
		if j.kind != reserved {
			lx, anchor = x(j.t)+6, "start"
		}
		c.text(lx, (y(j.from)+y(j.to))/2+4, col, `font-weight="bold" text-anchor="`+anchor+`"`, label)
	}

	// Numbered badges on the plot, and their notes below.
	at := func(v float64) float64 {
		for i := 0; i+1 < len(tl.pts); i += 2 {
			if tl.pts[i] >= v {
				return tl.pts[i+1]
			}
		}
		return 0
	}
	type badge struct {
		x, y float64
		col  string
	}
	var badges []badge
	for i, j := range tl.jumps {
		if i == 4 {
			badges = append(badges, badge{x(tl.tC), y(at(tl.tC)), red}, badge{x(tl.tClear), y(0), ink})
		}
		badges = append(badges, badge{x(j.t), y(max(j.from, j.to)) - 14, jumpColour[j.kind]})
	}
	for i, b := range badges {
		c.badge(b.x, b.y, i+1, b.col)
		c.badge(30, legendTop+float64(i)*legendLine-4, i+1, b.col)
		c.text(46, legendTop+float64(i)*legendLine, ink, "", tl.notes[i])
	}
	foot := legendTop + float64(len(badges))*legendLine + 10
	c.text(20, foot, soft, "", "A request that only checks (reserve 0) is admitted again once the debt is paid and one token fits. A sliding log or")
	c.text(20, foot+16, soft, "", "counter settles the same way; there a debt ends as the window slides past the request charged.")
	return c.bytes()
}
