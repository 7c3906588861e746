package redistest

import (
	"context"
	"errors"
	"fmt"
)

// migration is a slot BeginMigration started.
type migration struct{ src, dst *Server }

// Masters returns the cluster's live masters, in the order of Nodes (not flagged fail or fail?),
// as a running node's CLUSTER NODES lists them now: roles change on
// failover, and peers learn of a change by gossip.
func (c *Cluster) Masters() ([]*Server, error) {
	view, err := c.view()
	if err != nil {
		return nil, err
	}
	var out []*Server
	for i, s := range c.Nodes { // in the order of Nodes
		for _, n := range view {
			if n.id == c.ids[i] && n.has("master") && n.live() {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// ReplicaOf returns a live replica of master m, as a running node sees it.
func (c *Cluster) ReplicaOf(m *Server) (*Server, error) {
	id, err := c.NodeID(m)
	if err != nil {
		return nil, err
	}
	view, err := c.view()
	if err != nil {
		return nil, err
	}
	for _, n := range view {
		if n.has("slave") && n.master == id && n.live() {
			return c.byID(n.id)
		}
	}
	return nil, fmt.Errorf("redistest: master %s has no live replica", m.Addr)
}

// OwnerOf returns the master that owns slot now, as a running node sees it.
func (c *Cluster) OwnerOf(slot int) (*Server, error) {
	view, err := c.view()
	if err != nil {
		return nil, err
	}
	for _, n := range view {
		if n.has("master") && n.owns(slot) {
			return c.byID(n.id)
		}
	}
	return nil, fmt.Errorf("redistest: no master owns slot %d", slot)
}

// BeginMigration starts moving slot from src to dst: CLUSTER SETSLOT
// IMPORTING on dst, then MIGRATING on src (redis-cli's order). From then
// until FinishMigration, src answers -ASK for a command whose keys it
// lacks and -TRYAGAIN for one with some of them, and dst -MOVED (back to
// src) without ASKING.
func (c *Cluster) BeginMigration(slot int, src, dst *Server) error {
	srcID, err := c.NodeID(src)
	if err != nil {
		return err
	}
	dstID, err := c.NodeID(dst)
	if err != nil {
		return err
	}
	if _, err := dst.Do("CLUSTER", "SETSLOT", slot, "IMPORTING", srcID); err != nil {
		return fmt.Errorf("redistest: %s: SETSLOT %d IMPORTING: %w", dst.Addr, slot, err)
	}
	if _, err := src.Do("CLUSTER", "SETSLOT", slot, "MIGRATING", dstID); err != nil {
		return fmt.Errorf("redistest: %s: SETSLOT %d MIGRATING: %w", src.Addr, slot, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.migrations == nil {
		c.migrations = map[int]migration{}
	}
	c.migrations[slot] = migration{src, dst}
	return nil
}

func (c *Cluster) migrationOf(slot int) (migration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.migrations[slot]
	if !ok {
		return m, fmt.Errorf("redistest: slot %d is not migrating (BeginMigration)", slot)
	}
	return m, nil
}

// MoveKeys moves up to batch keys of slot from its migration source to
// its target (CLUSTER GETKEYSINSLOT, then one MIGRATE … KEYS, as the
// admin user), and returns how many it moved: 0 once none are left.
func (c *Cluster) MoveKeys(slot, batch int) (moved int, err error) {
	m, err := c.migrationOf(slot)
	if err != nil {
		return 0, err
	}
	keys, err := m.src.Client.Strings("CLUSTER", "GETKEYSINSLOT", slot, batch)
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	args := []any{"MIGRATE", "127.0.0.1", portOf(m.dst.Addr), "", 0, 30000}
	switch {
	case c.admin.Username != "":
		args = append(args, "AUTH2", c.admin.Username, c.admin.Password)
	case c.admin.Password != "":
		args = append(args, "AUTH", c.admin.Password)
	}
	args = append(args, "KEYS")
	for _, k := range keys {
		args = append(args, k)
	}
	if _, err := m.src.Do(args...); err != nil {
		return 0, fmt.Errorf("redistest: slot %d: MIGRATE %d keys from %s to %s: %w", slot, len(keys), m.src.Addr, m.dst.Addr, err)
	}
	return len(keys), nil
}

// FinishMigration assigns slot to its migration target, CLUSTER SETSLOT
// … NODE on the target, the source, then the other live masters (as
// redis-cli does), and waits until every running node's CLUSTER NODES
// says the target owns it. The source must hold no key of the slot left
// (MoveKeys until 0).
func (c *Cluster) FinishMigration(slot int) error {
	m, err := c.migrationOf(slot)
	if err != nil {
		return err
	}
	if n, err := m.src.Client.Int("CLUSTER", "COUNTKEYSINSLOT", slot); err != nil || n > 0 {
		return errors.Join(err, fmt.Errorf("redistest: slot %d: %s still holds %d keys (MoveKeys)", slot, m.src.Addr, n))
	}
	dstID, _ := c.NodeID(m.dst)
	order := []*Server{m.dst, m.src}
	masters, err := c.Masters()
	if err != nil {
		return err
	}
	for _, s := range masters {
		if s != m.dst && s != m.src {
			order = append(order, s)
		}
	}
	for _, s := range order {
		if _, err := s.Do("CLUSTER", "SETSLOT", slot, "NODE", dstID); err != nil {
			return fmt.Errorf("redistest: %s: SETSLOT %d NODE %s: %w", s.Addr, slot, dstID, err)
		}
	}
	c.mu.Lock()
	delete(c.migrations, slot)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if err := c.waitSeen(ctx, dstID, func(n nodeLine) bool { return n.owns(slot) }); err != nil {
		return fmt.Errorf("redistest: slot %d on its new owner: %w", slot, err)
	}
	return nil
}
