package zkrecipes

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// What the Session deletes when a caller gives up on a node: at once when it
// can, else in the background until the node is gone or its session ends.

// deleteEventually deletes path in the background, retrying through
// connection loss, until it is gone, the ZooKeeper session that owns it
// (owner) has ended, or the Session is closed (its own session, and with it
// the node, then ends too). An owner of 0 is a persistent node: it stays
// if the Session is closed first, which is logged. A keeper of the same
// path may call it off (claim).
func (s *Session) deleteEventually(path string, owner int64) {
	s.deleteEventuallyAs(path, owner, s.deferDelete(path))
}

// deleteEventuallyAs is deleteEventually under the registration dd.
func (s *Session) deleteEventuallyAs(path string, owner int64, dd *deferredDelete) {
	if !s.goBackground(0, func(ctx context.Context) {
		defer s.undefer(path, dd)
		bo := s.cfg.retry()
		for {
			gen, _, err := s.awaitConnected(ctx)
			if err != nil {
				s.warnLeftOnClose(path, owner)
				return
			}
			if !dd.begin() {
				return // called off by a keeper of the path
			}
			err = s.delete(ctx, path)
			dd.end()
			switch {
			case err == nil || err == zk.ErrNoNode:
				return
			case s.isClosed():
				s.warnLeftOnClose(path, owner)
				return
			case !isRetryable(err):
				if gen.id == owner || owner == 0 {
					s.cfg.log.Error("zkrecipes: cannot delete node; it stays (an ephemeral one until its session ends)", "path", path, "err", err)
				}
				return
			}
			s.cfg.log.Warn("zkrecipes: deleting node, will retry", "path", path, "err", err)
			if pace(ctx, bo) != nil {
				s.warnLeftOnClose(path, owner)
				return
			}
		}
	}) {
		s.undefer(path, dd)
	}
}

// warnLeftOnClose logs that deleteEventually gave up on a persistent node
// (owner 0) because the Session was closed: the node stays.
func (s *Session) warnLeftOnClose(path string, owner int64) {
	if owner == 0 && s.isClosed() {
		s.cfg.log.Warn("zkrecipes: session closed before a persistent node could be deleted; it stays", "path", s.rel(path))
	}
}

// deferredDelete is one delete of a node given up on (removeNode, a
// PersistentNode's Close, deleteEventually), which a keeper of the same
// path calls off: a PersistentNode started at the path a closed one has not
// yet deleted (discovery's Unregister then Register, or a Type change)
// must not see its node deleted behind it.
type deferredDelete struct {
	done     chan struct{} // closed when it has ended (undefer)
	mu       sync.Mutex
	off      bool          // called off: send no more deletes
	inflight chan struct{} // closed when the delete being sent has its reply
}

// begin reports whether the next delete may be sent, and marks it in
// flight.
func (d *deferredDelete) begin() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return false
	}
	d.inflight = make(chan struct{})
	return true
}

func (d *deferredDelete) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.inflight)
	d.inflight = nil
}

// deferDelete registers a delete of path, called off from the start while
// a keeper holds the path (claim).
func (s *Session) deferDelete(path string) *deferredDelete {
	s.deferredMu.Lock()
	defer s.deferredMu.Unlock()
	dd := &deferredDelete{done: make(chan struct{}), off: s.claims[path] > 0}
	if s.deferred == nil {
		s.deferred = map[string][]*deferredDelete{}
	}
	s.deferred[path] = append(s.deferred[path], dd)
	return dd
}

// undefer forgets a background delete once it has ended.
func (s *Session) undefer(path string, dd *deferredDelete) {
	s.deferredMu.Lock()
	defer s.deferredMu.Unlock()
	s.deferred[path] = slices.DeleteFunc(s.deferred[path], func(d *deferredDelete) bool { return d == dd })
	if len(s.deferred[path]) == 0 {
		delete(s.deferred, path)
	}
	close(dd.done)
}

// awaitDeletes waits (within ctx) for the background deletes of path to
// end, for a caller about to make a node there that nobody else may: a
// delete of a node given up on, retried after its reply was lost, would
// otherwise delete the new node behind it.
func (s *Session) awaitDeletes(ctx context.Context, path string) error {
	s.deferredMu.Lock()
	dds := slices.Clone(s.deferred[path])
	s.deferredMu.Unlock()
	for _, dd := range dds {
		select {
		case <-dd.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// claim holds path for a keeper about to make the node there, until
// release: it calls off the deletes of path registered so far, and those
// registered while it holds the path (a predecessor's Close, or the undo
// of its create), and waits (within ctx) for a delete already sent to have
// its reply, so that the keeper's requests come after it. left reports
// whether a predecessor was still at work (a delete, or another keeper
// holding the path): a node at path may then be one it left.
func (s *Session) claim(ctx context.Context, path string) (left bool, release func(), err error) {
	if err := ctx.Err(); err != nil {
		return false, nil, err // a keeper stopped before it began holds nothing
	}
	s.deferredMu.Lock()
	if s.claims == nil {
		s.claims = map[string]int{}
	}
	dds := slices.Clone(s.deferred[path])
	left = len(dds) > 0 || s.claims[path] > 0
	s.claims[path]++
	s.deferredMu.Unlock()
	release = func() {
		s.deferredMu.Lock()
		defer s.deferredMu.Unlock()
		if s.claims[path]--; s.claims[path] == 0 {
			delete(s.claims, path)
		}
	}
	for _, dd := range dds {
		dd.mu.Lock()
		dd.off = true
		ch := dd.inflight
		dd.mu.Unlock()
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			release()
			return true, nil, ctx.Err()
		}
	}
	return left, release, nil
}

// cleanupTimeout bounds the synchronous part of a clean-up.
const cleanupTimeout = 2 * time.Second

// removeNode deletes a node the caller gives up on, on a fresh, short,
// detached context, so that in the usual case the node is gone when the
// caller returns. If the connection is down or the delete fails for a
// reason that may pass, the delete goes on in the background.
func (s *Session) removeNode(n ownNode) {
	gen, _ := s.current()
	if gen != n.gen || !s.State().connected() {
		s.deleteEventually(n.path, n.gen.id)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if dd, _ := s.deleteFirst(ctx, n.path); dd != nil {
		s.deleteEventuallyAs(n.path, n.gen.id, dd)
	}
}

// deleteFirst sends one delete of path, registered before it is sent as
// the background delete it may become: a node made at the path meanwhile
// (awaitDeletes) comes after it, and a keeper's claim calls it off (then
// nothing is sent). It returns a nil registration when done: the node is
// gone, or the delete was called off. Else it returns the registration
// with the delete's error, for the caller to hand to deleteEventuallyAs or
// end with undefer.
func (s *Session) deleteFirst(ctx context.Context, path string) (*deferredDelete, error) {
	dd := s.deferDelete(path)
	if !dd.begin() {
		s.undefer(path, dd)
		return nil, nil
	}
	err := s.delete(ctx, path)
	dd.end()
	if err == nil || err == zk.ErrNoNode {
		s.undefer(path, dd)
		return nil, nil
	}
	return dd, err
}
