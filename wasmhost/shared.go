package wasmhost

import "sync"

// sharedData is the key-value store behind proxy_get_shared_data and
// proxy_set_shared_data, shared by all VMs of a Host. Every write gets a new
// non-zero CAS value; a write with a non-zero CAS that does not match the
// stored one fails with CasMismatch, as in proxy-wasm-cpp-host.
type sharedData struct {
	mu      sync.Mutex
	entries map[string]sharedEntry
	cas     uint32
}

type sharedEntry struct {
	value []byte
	cas   uint32
}

func (d *sharedData) get(key string) ([]byte, uint32, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[key]
	return e.value, e.cas, ok
}

func (d *sharedData) set(key string, value []byte, cas uint32) uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.entries == nil {
		d.entries = map[string]sharedEntry{}
	}
	if e, ok := d.entries[key]; ok && cas != 0 && cas != e.cas {
		return statusCasMismatch
	}
	d.cas++
	if d.cas == 0 {
		d.cas++
	}
	d.entries[key] = sharedEntry{value: append([]byte(nil), value...), cas: d.cas}
	return statusOK
}

// sharedQueues implements the shared queue ABI simply: a queue is named by
// (vm_id, name), the last VM that registers it owns it and is notified with
// proxy_on_queue_ready when an item is enqueued.
type sharedQueues struct {
	mu     sync.Mutex
	byName map[[2]string]uint32
	queues map[uint32]*sharedQueue
	nextID uint32
}

type sharedQueue struct {
	owner *vm
	items [][]byte
}

func (q *sharedQueues) register(vmID, name string, owner *vm) uint32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.byName == nil {
		q.byName = map[[2]string]uint32{}
		q.queues = map[uint32]*sharedQueue{}
	}
	key := [2]string{vmID, name}
	if id, ok := q.byName[key]; ok {
		// As in proxy-wasm-cpp-host (SharedQueue::registerQueue), the
		// last VM to register a queue is the one notified.
		q.queues[id].owner = owner
		return id
	}
	q.nextID++
	q.byName[key] = q.nextID
	q.queues[q.nextID] = &sharedQueue{owner: owner}
	return q.nextID
}

func (q *sharedQueues) resolve(vmID, name string) (uint32, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	id, ok := q.byName[[2]string{vmID, name}]
	return id, ok
}

// enqueue appends an item and returns the VM to notify.
func (q *sharedQueues) enqueue(id uint32, item []byte) (*vm, uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	sq, ok := q.queues[id]
	if !ok {
		return nil, statusNotFound
	}
	sq.items = append(sq.items, append([]byte(nil), item...))
	return sq.owner, statusOK
}

func (q *sharedQueues) dequeue(id uint32) ([]byte, uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	sq, ok := q.queues[id]
	if !ok {
		return nil, statusNotFound
	}
	if len(sq.items) == 0 {
		return nil, statusEmpty
	}
	item := sq.items[0]
	sq.items = sq.items[1:]
	return item, statusOK
}
