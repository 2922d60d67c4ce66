package zkrecipes

// Grant marks: how a mutex waiter avoids listing the children again on
// every handoff.
//
// A waiter lists the children once and watches the node just ahead of it.
// On a path where every node is sequential, nodes created later sort
// behind it, so the nodes ahead of it can only go away. When the watched
// node goes, though, the waiter cannot tell whether the nodes further
// ahead went too (the watched node held the lock, so they had) or are
// still there (the watched node gave up or expired while it waited).
// Listing again settles it at a cost that grows with the queue (Curator
// and go-zookeeper list on every wake-up: O(n) bytes per handoff, O(n²) to
// drain a queue of n).
//
// So a holder that had to wait marks its node when it is granted: it sets
// the node's data again, unchanged, which bumps its data version. The
// watcher behind it gets a NodeDataChanged notification (or reads a
// version above 0 when it sets its watch) and knows the node holds, hence
// that every node ahead of it is gone for good. When the node is then
// deleted the waiter holds the lock without another request. A node that
// is deleted unmarked (cancelled, expired, or a peer that does not mark,
// such as Curator) makes the waiter list once, as before.
//
// The mark is sent without waiting for it; a delete of the node waits for
// its mark to be answered first (usually long done by then), so that the
// successor sees the mark before the deletion. One consequence for
// operators: never set data on a queued lock node; a data change is read
// as that node's grant.

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// markGranted bumps the data version of a node just granted after a wait.
func (s *Session) markGranted(path string, data []byte) {
	s.opsMu.RLock()
	defer s.opsMu.RUnlock()
	if s.isClosed() {
		return
	}
	done := make(chan struct{})
	s.marks.Store(path, done)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.marks.Delete(path)
			close(done)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := s.set(ctx, path, data, 0); err != nil && err != zk.ErrNoNode && err != zk.ErrBadVersion {
			s.cfg.log.Debug("zkrecipes: grant mark not set", "path", path, "err", err)
		}
	}()
}

// awaitMark waits until the grant mark of path, if one is in flight, has
// been answered, or ctx ends.
func (s *Session) awaitMark(ctx context.Context, path string) {
	if ch, ok := s.marks.Load(path); ok {
		select {
		case <-ch.(chan struct{}):
		case <-ctx.Done():
		}
	}
}
