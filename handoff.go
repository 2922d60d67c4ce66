package zkrecipes

// The handoff: how a mutex waiter takes the lock on a notification alone,
// without listing the children again on every handoff (the fast handoff
// and its marked release).
//
// A waiter lists the children once and watches the node just ahead of it.
// On a path where every node is sequential, nodes created later sort
// behind it, so the nodes ahead of it can only go away. When the watched
// node goes, though, the waiter cannot tell from a plain deletion whether
// the nodes further ahead went too (the watched node held the lock, so
// they had) or are still there (the watched node gave up, or its session
// expired, while it waited). Listing again settles it, at a cost that
// grows with the queue: Curator and go-zookeeper list on every wake-up,
// O(n) bytes per handoff and O(n²) to drain a queue of n.
//
// So a holder that had to wait releases with one transaction that first
// sets its node's data (to nothing) and then deletes it. (A holder that
// never waited needs no mark: no node was ahead of it when it listed, so
// none is in the listing of any waiter behind it either.) A waiter that
// has other nodes cached ahead of the one it watches sets two watches on
// it: one on its data and one on its deletion (a children watch, which a
// data change does not consume). The marked release fires both, data
// change first, in one transaction, so the waiter knows on the
// notifications alone that the node went in its holder's release: every
// node ahead had gone already, and it holds the lock without another
// request, while the release costs the server one write, as a plain delete
// does.
//
// A data change may also be someone else's (Curator's Revoker and this
// package's Revoke write "__REVOKE__" into the node they revoke, and a
// holder that ignores it keeps the lock). So only a deletion whose
// notification is delivered together with the data change's is taken as
// the release. On a data change alone the waiter reads the node: found
// still there, the change was no release and the wait goes on; found gone,
// or deleted later, the deletion is a plain one and the waiter lists the
// children once. The marked release's two notifications are often, not
// always, delivered together; when they are not, the waiter lists, as it
// would without the mark. A node deleted otherwise (cancelled, expired,
// deleted by an operator, or a peer such as Curator that deletes plainly)
// fires NodeDeleted alone, and the waiter lists once, as Curator always
// does. Waiters of other libraries see the data change as any change to
// the node they watch and look again (Curator's LeaderLatch does not,
// which is why the latch layout never marks).
//
// The one sequence this cannot tell from a release: another client's data
// change and deletion of a waiting node whose notifications reach the
// waiter together, as when both are sent in one transaction or pipelined
// without waiting for the first reply. No recipe of this package or of
// Curator does that; turn the fast handoff off (WithFastHandoff(false))
// where another client might.

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"
)

// releaseMarked deletes a held node in one transaction that first sets its
// data. It returns zk.ErrNoNode when the node is already gone.
func (s *Session) releaseMarked(ctx context.Context, path string) error {
	res, err := s.multi(ctx, path,
		&zk.SetDataRequest{Path: path, Data: nil, Version: -1},
		&zk.DeleteRequest{Path: path, Version: -1})
	if err != nil && len(res) > 0 && res[0].Error == zk.ErrNoNode {
		err = zk.ErrNoNode
	}
	if err == nil || err == zk.ErrNoNode {
		s.disown(path)
	}
	return err
}

// next is where a fast-handoff waiter stands once the node it watched is
// gone, or relist to list the children again.
func (q *queue) next(nodes []queueNode, watch int, own string, fast, marked bool) (rest []queueNode, relist bool) {
	switch {
	case !fast:
		return nodes, true
	case marked:
		// The watched node was released by its holder (see
		// releaseMarked): every node ahead of it was gone already, for
		// good.
		return nodes[watch+1:], false
	}
	nodes = append(nodes[:watch:watch], nodes[watch+1:]...)
	// Nodes still cached ahead of ours were not seen to go (the deleted
	// node was cancelled or expired while it waited, or never marked its
	// grant): one listing settles where the queue stands.
	held, _ := q.pred(nodes, indexOf(nodes, own))
	return nodes, !held
}

// markRequests is the number of requests watchMarked sends.
const markRequests = 2

// released is the verdict of a marked watch: done when the target is gone
// (marked when in its holder's marked release); fail with the failure to
// classify; neither when the watch must be set again.
type released struct {
	marked, done, fail bool
	err                error
}

// watchMarked watches target twice, its data and its deletion (a children
// watch, which a data change does not consume), in one round trip, so that
// a marked release is taken on its notifications alone. The verdict comes
// from a goroutine the Session waits for in Close.
func (s *Session) watchMarked(ctx context.Context, target string) (targetWatch, error) {
	dc := s.getWAsync(target)
	del, derr := await(ctx, s.watchDeletionAsync(target))
	d, err := await(ctx, dc)
	if err = firstErr(derr, err); err != nil {
		return targetWatch{stop: func() {}}, err
	}
	out, stop := make(chan released, 1), make(chan struct{})
	if !s.spawn(func() { out <- s.awaitMarked(target, d.w, del.w, stop) }) {
		return targetWatch{stop: func() {}}, ErrClosed
	}
	return targetWatch{marked: out, stop: sync.OnceFunc(func() { close(stop) })}, nil
}

// awaitMarked waits on target's two watches for its verdict. Only a
// deletion delivered together with a data change (both notifications
// queued when the first is taken: one transaction, the marked release) is
// taken as marked. A data change on its own may be someone else's (a
// revocation request, say): target is read, which sets the data watch
// again, and a deletion that comes after it is taken as a plain one, after
// which the waiter lists the children. So a revocation followed by the
// revoked node's deletion can never pass for a release.
func (s *Session) awaitMarked(target string, dataW, delW <-chan zk.Event, stop <-chan struct{}) released {
	var verify <-chan reply[watched] // the read sent after a data change on its own
	for {
		select {
		case ev := <-delW:
			return onMarkedDeletion(ev, dataW)
		case ev := <-dataW:
			dataW = nil
			switch ev.Type {
			case zk.EventNodeDeleted:
				return released{done: true}
			case zk.EventNodeDataChanged:
				select {
				case dv := <-delW:
					if dv.Type != zk.EventNodeDeleted {
						return released{fail: true, err: dv.Err}
					}
					return released{marked: true, done: true} // the same transaction
				default:
				}
				verify = s.getWAsync(target)
			case zk.EventNotWatching:
				return released{fail: true, err: ev.Err}
			default:
				return released{}
			}
		case r := <-verify:
			verify = nil
			switch {
			case r.err == zk.ErrNoNode:
				return released{done: true}
			case r.err != nil:
				return released{fail: true, err: r.err}
			}
			dataW = r.v.w // still there: the change was no release
		case <-stop:
			return released{}
		case <-s.closedCh:
			return released{fail: true, err: ErrClosed}
		}
	}
}

// onMarkedDeletion is the verdict on the deletion watch's event: marked
// when a data change of the same transaction is queued beside it.
func onMarkedDeletion(ev zk.Event, dataW <-chan zk.Event) released {
	if ev.Type != zk.EventNodeDeleted {
		return released{fail: true, err: ev.Err}
	}
	select {
	case dv := <-dataW:
		return released{marked: dv.Type == zk.EventNodeDataChanged, done: true}
	default:
		return released{done: true}
	}
}
