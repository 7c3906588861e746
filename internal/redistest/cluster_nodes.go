package redistest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// nodeLine is one line of CLUSTER NODES.
type nodeLine struct {
	id, addr, hostname string // addr is "ip:port", without the bus port
	flags              []string
	master             string // the master's id for a replica, else "-"
	slots              [][2]int
}

func (n nodeLine) has(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// live says the node is not failed or unreachable, as its peer sees it.
func (n nodeLine) live() bool {
	return !n.has("fail") && !n.has("fail?") && !n.has("noaddr") && !n.has("handshake")
}

func (n nodeLine) owns(slot int) bool {
	for _, r := range n.slots {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// parseClusterNodes reads CLUSTER NODES: "<id> <ip:port@bus[,hostname]>
// <flags> <master> <ping> <pong> <epoch> <link> <slot>...". Slots being
// imported or migrated ("[5->-id]", "[5-<-id]") are left out.
func parseClusterNodes(text string) []nodeLine {
	var out []nodeLine
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := nodeLine{id: f[0], flags: strings.Split(f[2], ","), master: f[3]}
		ep, host, _ := strings.Cut(f[1], ",")
		n.addr, _, _ = strings.Cut(ep, "@")
		n.hostname = host
		for _, tok := range f[8:] {
			if strings.HasPrefix(tok, "[") {
				continue
			}
			lo, hi, ok := strings.Cut(tok, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				n.slots = append(n.slots, [2]int{a, b})
			}
		}
		out = append(out, n)
	}
	return out
}

// running says s's process has not exited (a Crash, or Stop).
func (s *Server) running() bool {
	if s.proc == nil {
		return false
	}
	select {
	case <-s.proc.Exited():
		return false
	default:
		return true
	}
}

// anyNode calls f with each running node in turn until one succeeds.
func (c *Cluster) anyNode(f func(*Server) error) error {
	var errs []error
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		err := f(s)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if errs == nil {
		return errors.New("redistest: no node of the cluster runs")
	}
	return errors.Join(errs...)
}

// view is CLUSTER NODES as the first running node that answers sees it.
func (c *Cluster) view() ([]nodeLine, error) {
	var text string
	err := c.anyNode(func(s *Server) (err error) {
		text, err = s.Client.Text("CLUSTER", "NODES")
		return err
	})
	return parseClusterNodes(text), err
}

// byID returns the node with cluster id id.
func (c *Cluster) byID(id string) (*Server, error) {
	for i, s := range c.Nodes {
		if c.ids[i] == id {
			return s, nil
		}
	}
	return nil, fmt.Errorf("redistest: node id %s is not a node of this cluster", id)
}
