package localstate

// localTable holds the local limiter's key states, at most max of them,
// and picks which one a new key may push out: never one that still denies.
//
// Each state has a rank, and a min-heap over the ranks gives the next
// victim in O(log n), with no allocation once the table is full:
//
//   - a state that would admit its last request again ranks by the share
//     of its capacity used then (rankOfUse): a key a flood touched once
//     goes before one its client nearly spent. The share only falls as
//     time passes, so a stale rank errs on keeping a state.
//   - a state that denies its last request (cost c) ranks above every
//     such state, by when it admits c again (rankDenying + that time in
//     µs): it is never pushed out before then. When every state denies, a
//     new key is not held (add reports false) and is decided afresh.
//
// States back to full capacity (idle) are dropped at every tick.
type localTable struct {
	max     int
	entries []localState   // dense; a removal moves the last entry into the hole
	index   map[string]int // key -> entry
	heap    []int          // entry indices; rank(heap[i]) <= rank of its children
	// serial marks the states one call touched (pinned): the call's own
	// keys are not pushed out by its other keys.
	serial uint64
	aside  []int // scratch for add
}

// localState is one limit state the limiter's Model holds.
type localState struct {
	key string
	// idle is when the state stops mattering, in µs since the epoch: from
	// then on the limit is full again, as for a key Redis has expired.
	idle   int64
	rank   int64
	pos    int // index in heap
	serial uint64
}

// rankDenying is added to the rank of a state that denies its last
// request; every rankOfUse is below it.
const rankDenying = 1 << 62

// rankOfUse ranks a state with remaining of capacity left: the share used,
// in 2^-20ths. 0 of 10 used ranks 0; 9 of 10, 943718.
func rankOfUse(capacity, remaining int64) int64 {
	if capacity <= 0 || remaining >= capacity {
		return 0
	}
	used := capacity - max(remaining, 0)
	return int64(float64(used) / float64(capacity) * (1 << 20))
}

// deniesAt reports whether a state of rank still denies at now (µs).
func deniesAt(rank, now int64) bool { return rank >= rankDenying && rank-rankDenying > now }

func newLocalTable(max int) *localTable {
	return &localTable{max: max, index: map[string]int{}}
}

func (t *localTable) len() int { return len(t.entries) }

// pin starts a call: the states it touches from now on are pinned.
func (t *localTable) pin() { t.serial++ }

// update sets entry i's rank, and its idle to at least idle.
func (t *localTable) update(i int, rank, idle int64) {
	st := &t.entries[i]
	st.rank, st.idle, st.serial = rank, max(st.idle, idle), t.serial
	t.fix(st.pos)
}

// add holds a new key. When the table is full it first pushes out the
// lowest-ranked state that no longer denies at now and the current call
// did not touch; it reports that state, if any, and whether key is held.
func (t *localTable) add(key string, rank, idle, now int64) (victim localState, pushed, ok bool) {
	if len(t.entries) >= t.max {
		if victim, pushed = t.victim(now); !pushed {
			return localState{}, false, false
		}
	}
	i := len(t.entries)
	t.entries = append(t.entries, localState{key: key, idle: idle, rank: rank, pos: len(t.heap), serial: t.serial})
	t.index[key] = i
	t.heap = append(t.heap, i)
	t.up(len(t.heap) - 1)
	return victim, pushed, true
}

// victim removes and returns the lowest-ranked unpinned state, unless it
// still denies at now. The pinned states set aside are at most the keys of
// one call.
func (t *localTable) victim(now int64) (localState, bool) {
	t.aside = t.aside[:0]
	var st localState
	found := false
	for len(t.heap) > 0 {
		i := t.heap[0]
		if t.entries[i].serial == t.serial {
			t.aside = append(t.aside, i)
			t.popTop()
			continue
		}
		if !deniesAt(t.entries[i].rank, now) {
			st, found = t.entries[i], true
		}
		break
	}
	for _, i := range t.aside {
		t.entries[i].pos = len(t.heap)
		t.heap = append(t.heap, i)
		t.up(len(t.heap) - 1)
	}
	if found {
		t.remove(t.index[st.key])
	}
	return st, found
}

// remove drops entry i.
func (t *localTable) remove(i int) {
	st := t.entries[i]
	delete(t.index, st.key)
	last := len(t.heap) - 1
	if st.pos != last {
		t.swap(st.pos, last)
		t.heap = t.heap[:last]
		t.fix(st.pos)
	} else {
		t.heap = t.heap[:last]
	}
	end := len(t.entries) - 1
	if i != end {
		moved := t.entries[end]
		t.entries[i] = moved
		t.index[moved.key] = i
		t.heap[moved.pos] = i
	}
	t.entries[end] = localState{}
	t.entries = t.entries[:end]
}

// popTop takes the heap's root off the heap, keeping its entry.
func (t *localTable) popTop() {
	last := len(t.heap) - 1
	t.swap(0, last)
	t.heap = t.heap[:last]
	if last > 0 {
		t.down(0)
	}
}

func (t *localTable) less(a, b int) bool {
	return t.entries[t.heap[a]].rank < t.entries[t.heap[b]].rank
}

func (t *localTable) swap(a, b int) {
	t.heap[a], t.heap[b] = t.heap[b], t.heap[a]
	t.entries[t.heap[a]].pos, t.entries[t.heap[b]].pos = a, b
}

func (t *localTable) fix(j int) {
	if !t.down(j) {
		t.up(j)
	}
}

func (t *localTable) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !t.less(j, p) {
			return
		}
		t.swap(j, p)
		j = p
	}
}

// down sifts j down and reports whether it moved.
func (t *localTable) down(j int) bool {
	start, n := j, len(t.heap)
	for {
		c := 2*j + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && t.less(r, c) {
			c = r
		}
		if !t.less(c, j) {
			break
		}
		t.swap(j, c)
		j = c
	}
	return j > start
}
