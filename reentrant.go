package zkrecipes

import "sync"

// holders is the per-goroutine bookkeeping of a reentrant lock: the hold
// each goroutine was granted, so that it acquires again without any
// ZooKeeper call. The zero value is ready to use.
type holders struct {
	mu sync.Mutex
	m  map[int64]*hold // by goroutine id
}

// reenter hands goroutine gid one more lease on the hold it has, if that
// hold has not ended.
func (r *holders) reenter(gid int64) (*Lease, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.m[gid]; h != nil {
		return h.lease()
	}
	return nil, false
}

// live returns the hold of goroutine gid if it has not ended, or nil.
func (r *holders) live(gid int64) *hold {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.m[gid]; h != nil && !h.sig.fired() {
		return h
	}
	return nil
}

// grant runs acquire, which is handed the function its hold calls when it
// ends, and records the new hold as goroutine gid's.
func (r *holders) grant(gid int64, acquire func(onEnd func()) (*hold, error)) (*Lease, error) {
	var h *hold
	onEnd := func() {
		r.mu.Lock()
		if r.m[gid] == h {
			delete(r.m, gid)
		}
		r.mu.Unlock()
	}
	nh, err := acquire(onEnd)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h = nh
	if r.m == nil {
		r.m = map[int64]*hold{}
	}
	r.m[gid] = h
	return &Lease{h: h}, nil
}
