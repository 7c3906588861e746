package clusterslot

// Aliases sets aliases[i] to the other form of addrs[i] that CLUSTER
// NODES text gives for the same node: its ip:port when addrs[i] is its
// hostname:port, and the reverse; "" when the text gives no other form. A
// node announcing a hostname is named by -MOVED and -ASK with one form
// only (cluster-preferred-endpoint-type), so the router matches both.
// Lines the text cannot be read as are skipped; bounded as ParseNodes.
// The aliases are substrings of text, or for a hostname a new string.
func Aliases(text string, addrs, aliases []string) {
	clear(aliases)
	if len(text) > maxText || len(addrs) > int(Unlisted) || len(aliases) < len(addrs) {
		return
	}
	for lines := 0; len(text) > 0 && lines < maxLines; lines++ {
		line := text
		if i := indexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		_, line, _ = cutByte(line, ' ') // the node id
		field, _, _ := cutByte(line, ' ')
		ep, ok := parseEndpoint(field)
		if !ok || ep.hostname == "" || ep.ipPort == "" || ep.ipPort[0] == ':' {
			continue
		}
		i := ep.match(addrs)
		if i == Unlisted {
			continue
		}
		other := ep.ipPort
		if addrs[i] == ep.ipPort {
			other = ep.hostname + ":" + ep.port
		}
		if other != addrs[i] {
			aliases[i] = other
		}
	}
}

// cutByte splits s around its first b.
func cutByte(s string, b byte) (before, after string, found bool) {
	if i := indexByte(s, b); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}
