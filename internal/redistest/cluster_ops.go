package redistest

// Masters returns the cluster's live masters, as a live node's CLUSTER
// NODES lists them now (roles change on failover).
func (c *Cluster) Masters() ([]*Server, error) { return nil, errNotYet }

// ReplicaOf returns a live replica of master m.
func (c *Cluster) ReplicaOf(m *Server) (*Server, error) { return nil, errNotYet }

// OwnerOf returns the master that owns slot now.
func (c *Cluster) OwnerOf(slot int) (*Server, error) { return nil, errNotYet }

// BeginMigration starts moving slot from src to dst: CLUSTER SETSLOT
// IMPORTING on dst, then MIGRATING on src.
func (c *Cluster) BeginMigration(slot int, src, dst *Server) error { return errNotYet }

// MoveKeys moves up to batch keys of slot from its migration source to
// its target (CLUSTER GETKEYSINSLOT, then MIGRATE … KEYS), and returns how
// many it moved: 0 once none are left.
func (c *Cluster) MoveKeys(slot, batch int) (moved int, err error) { return 0, errNotYet }

// FinishMigration assigns slot to its migration target: CLUSTER SETSLOT
// … NODE on the target, the source, then the other masters.
func (c *Cluster) FinishMigration(slot int) error { return errNotYet }
