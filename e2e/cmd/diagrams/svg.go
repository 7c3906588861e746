package main

import (
	"fmt"
	"html"
	"strings"
)

// Colours, as docs/burst.svg uses them.
const (
	ink     = "#222"
	soft    = "#555"
	grid    = "#e0e0e0"
	blue    = "#1565c0"
	green   = "#2e7d32"
	red     = "#c62828"
	pink    = "#ef9a9a"
	purple  = "#5e35b1"
	amber   = "#f9a825"
	neutral = "#757575"
)

// canvas writes one SVG: a white background (readable in dark mode too),
// sans-serif text, and an arrowhead marker per colour.
type canvas struct {
	b strings.Builder
}

func newCanvas(w, h int, title string) *canvas {
	c := &canvas{}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&c.b, "<title>%s</title>\n<defs>\n", html.EscapeString(title))
	for _, col := range []string{ink, blue, green, red, purple, neutral} {
		fmt.Fprintf(&c.b, `<marker id="%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`+"\n", markerID(col), col)
	}
	c.b.WriteString("</defs>\n")
	c.raw(`<rect width="100%" height="100%" fill="white"/>`)
	return c
}

func markerID(col string) string { return "arrow-" + strings.TrimPrefix(col, "#") }

func (c *canvas) raw(s string) { c.b.WriteString(s + "\n") }

func (c *canvas) bytes() []byte { return []byte(c.b.String() + "</svg>\n") }

// text writes one line; attrs is extra attributes, such as
// `text-anchor="middle" font-weight="bold"`.
func (c *canvas) text(x, y float64, fill, attrs, s string) {
	if attrs != "" {
		attrs = " " + attrs
	}
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" fill="%s"%s>%s</text>`+"\n", x, y, fill, attrs, html.EscapeString(s))
}

// lines writes lines of text from y down, lh apart, the first in bold when
// bold is set.
func (c *canvas) lines(x, y, lh float64, anchor string, bold bool, ls ...string) {
	for i, l := range ls {
		attrs := `text-anchor="` + anchor + `"`
		fill := soft
		if i == 0 && bold {
			attrs += ` font-weight="bold"`
			fill = ink
		}
		c.text(x, y+float64(i)*lh, fill, attrs, l)
	}
}

// box draws a rounded rectangle; dash is a stroke-dasharray or "".
func (c *canvas) box(x, y, w, h float64, fill, stroke, dash string) {
	extra := ""
	if dash != "" {
		extra = ` stroke-dasharray="` + dash + `"`
	}
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6" fill="%s" stroke="%s" stroke-width="1.5"%s/>`+"\n", x, y, w, h, fill, stroke, extra)
}

// line draws a segment; dash is a stroke-dasharray or "".
func (c *canvas) line(x1, y1, x2, y2 float64, col string, width float64, dash string) {
	extra := ""
	if dash != "" {
		extra = ` stroke-dasharray="` + dash + `"`
	}
	fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`+"\n", x1, y1, x2, y2, col, width, extra)
}

// arrow draws a segment ending in an arrowhead of its colour.
func (c *canvas) arrow(x1, y1, x2, y2 float64, col, dash string) {
	extra := ""
	if dash != "" {
		extra = ` stroke-dasharray="` + dash + `"`
	}
	fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s marker-end="url(#%s)"/>`+"\n", x1, y1, x2, y2, col, extra, markerID(col))
}

// polyline draws the points (x0, y0, x1, y1, ...) joined, filled with fill
// ("none" for a line).
func (c *canvas) polyline(pts []float64, stroke, fill string, width float64) {
	var b strings.Builder
	for i := 0; i+1 < len(pts); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", pts[i], pts[i+1])
	}
	fmt.Fprintf(&c.b, `<polyline points="%s" fill="%s" stroke="%s" stroke-width="%g" stroke-linejoin="round"/>`+"\n", b.String(), fill, stroke, width)
}

// badge draws a numbered circle.
func (c *canvas) badge(x, y float64, n int, col string) {
	fmt.Fprintf(&c.b, `<circle cx="%.1f" cy="%.1f" r="9" fill="%s" stroke="white" stroke-width="1.5"/>`+"\n", x, y, col)
	c.text(x, y+4, "white", `text-anchor="middle" font-size="11" font-weight="bold"`, fmt.Sprint(n))
}
