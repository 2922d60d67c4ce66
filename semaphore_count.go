package zkrecipes

// The shared count that sets a semaphore's maximum (WithSharedCount), in
// the format of Curator's SharedCount.

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"
)

// countCache keeps the last value read from a shared count node with its
// pending data watch, so that successive acquisitions do not pile up
// watches on a node that rarely changes. Acquisitions through one
// Semaphore wait on it one at a time (they hold the semaphore's mutex).
type countCache struct {
	path string // absolute
	seed int32

	mu  sync.Mutex
	val int32
	w   <-chan zk.Event
	gen *generation
}

// maximum returns the number of leases the semaphore admits now, and a
// channel that fires when that may change (nil for a fixed maximum).
func (sem *Semaphore) maximum(ctx context.Context, node ownNode) (int, <-chan zk.Event, error) {
	if sem.count == nil {
		return sem.max, nil, nil
	}
	c := sem.count
	c.mu.Lock()
	if c.w != nil && c.gen == node.gen && !c.gen.fired() {
		select {
		case <-c.w: // changed since: read again
			c.w = nil
		default:
			v, w := c.val, c.w
			c.mu.Unlock()
			return int(v), w, nil
		}
	}
	c.mu.Unlock()
	for {
		data, _, w, err := sem.s.getW(ctx, c.path)
		if err == zk.ErrNoNode {
			err = sem.seedCount(ctx)
			if err == nil {
				continue
			}
		}
		if err != nil {
			if err = sem.s.classify(ctx, node, c.path, err); err != nil {
				return 0, nil, err
			}
			continue
		}
		v, err := decodeCount(sem.cfg.countPath, data)
		if err != nil {
			return 0, nil, err
		}
		c.mu.Lock()
		c.val, c.w, c.gen = v, w, node.gen
		c.mu.Unlock()
		return int(v), w, nil
	}
}

// drop forgets the cached count whose watch w has fired.
func (c *countCache) drop(w <-chan zk.Event) {
	c.mu.Lock()
	if c.w == w {
		c.w = nil
	}
	c.mu.Unlock()
}

// seedCount creates the shared count node with the seed value, as a
// SharedCount does.
func (sem *Semaphore) seedCount(ctx context.Context) error {
	return sem.s.createSeeded(ctx, sem.count.path, encodeCount(sem.count.seed))
}
