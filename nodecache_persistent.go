package zkrecipes

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// followPersistent keeps a NodeCache's copy on one persistent watch of
// the node (docs/design-caches.md): the watch is set first, then the
// node read, without a watch; every notification of a creation, data
// change or deletion costs one read (those that wait together, one), and
// no watch is set again. After every WatchReset (the watch set again on a
// new connection or session) the node is read again. A read that fails
// with the connection is done again after the reset that follows.
func (c *NodeCache) followPersistent(ctx context.Context, w *PersistentWatch, states <-chan StateChange) error {
	events := w.batches // every event waiting, at once (openCacheWatch)
	read, first := true, true
	var last nodeData
	var cs cacheSyncs // reported as Observer.CacheSynced (cacheobserve.go)
	for {
		if read && c.s.State().connected() {
			drainNotes(events) // the read below covers what they report
			cur, err := c.readNoWatch(ctx)
			switch {
			case err == nil:
				read = false
				c.reportRead(&cs, cur)
				if first || newerData(last, cur) {
					first, last = false, cur
					if err := c.onNode(cur); err != nil {
						return err
					}
				}
			case !lostConnection(err):
				return c.s.opError("getData", c.abs, err)
			}
		}
		select {
		case batch, ok := <-events:
			if !ok {
				return firstErr(w.Err(), ErrClosed)
			}
			for _, ev := range batch {
				if ev.Kind != WatchChildrenChanged {
					read = true
				}
				cs.resync = cs.resync || ev.Kind == WatchReset
			}
		case sc, ok := <-states:
			if !ok || sc.State == StateClosed {
				return ErrClosed
			}
			c.onState(sc)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readNoWatch reads the node without a watch: nil stat when it does not
// exist.
func (c *NodeCache) readNoWatch(ctx context.Context) (nodeData, error) {
	data, st, err := c.s.get(ctx, c.abs)
	if errors.Is(err, zk.ErrNoNode) {
		return nodeData{}, nil
	}
	return nodeData{data: data, stat: st}, err
}
