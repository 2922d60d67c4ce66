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
// does. A waiter with nothing cached ahead of the node it watches sets
// only the deletion watch: it needs nothing else, and a data watch would
// fire on the mark and cost it a read.
//
// A data change may also be someone else's (Curator's Revoker writes
// "__REVOKE__" into the node it revokes, and a holder that ignores it
// keeps the lock). So on a data change not followed at once by the
// deletion, the waiter reads the node: found still there, the change was
// not a release, and the wait goes on; found gone, or deleted before that
// read is answered, it is taken as the release. A node deleted otherwise
// (cancelled, expired, deleted by an operator, or a peer such as Curator
// that deletes plainly) fires NodeDeleted alone, and the waiter lists
// once, as Curator always does. Waiters of other libraries see the data
// change as any change to the node they watch and look again (Curator's
// LeaderLatch does not, which is why the latch layout never marks).
//
// The one sequence this cannot tell from a release: a foreign data change
// on a waiting node followed by that node's deletion within markGrace and
// a round trip (a revocation request, then its contender giving up). So
// Revoke refuses waiting nodes, and, for operators and Curator's Revoker:
// never set data on a queued lock node. Turn the fast handoff off
// (WithFastHandoff(false)) where that cannot be promised. (Telling the two
// notifications of one transaction from two transactions without a timer
// would close this for good: see docs/design-locks.md, "The marked release".)

import (
	"context"
	"sync"
	"time"

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

// markGrace is how long a waiter that saw the data of the node it waits
// on change waits for that node's deletion before it reads the node: the
// deletion of a marked release comes right behind its data change, and a
// read then would be wasted.
const markGrace = 5 * time.Millisecond

// fastHandoff is the fast handoff, with its marked release (mark) or
// without (the latch layout, see driver.noMark).
type fastHandoff struct{ mark bool }

// wantMark reports whether a waiter watching nodes[i] needs its release
// told apart from a plain deletion: only one with others cached ahead of
// it, on a path where every node is sequential.
func (f fastHandoff) wantMark(nodes []queueNode, i int) bool {
	return f.mark && i > 0 && allSequential(nodes)
}

func (f fastHandoff) requests(nodes []queueNode, i int) int {
	if f.wantMark(nodes, i) {
		return markRequests
	}
	return 1
}

func (f fastHandoff) watch(ctx context.Context, s *Session, target string, nodes []queueNode, i int) (targetWatch, error) {
	if f.wantMark(nodes, i) {
		return s.watchMarked(ctx, target)
	}
	// Nothing cached ahead of target to tell apart: its deletion is all
	// the waiter needs. A deletion watch (a children watch) is not fired
	// by the data change of a marked release, which would cost a read.
	d, err := await(ctx, s.watchDeletionAsync(ctx, target))
	return targetWatch{data: d.w, stop: func() {}}, err
}

// next trusts the cached listing when every node in it is sequential.
func (f fastHandoff) next(pred predicate, nodes []queueNode, i int, own string, marked bool) ([]queueNode, bool) {
	switch {
	case !allSequential(nodes):
		return nodes, true
	case marked:
		// The watched node was released by its holder (see
		// releaseMarked): every node ahead of it was gone already, for
		// good.
		return nodes[i+1:], false
	}
	nodes = append(nodes[:i:i], nodes[i+1:]...)
	// Nodes still cached ahead of ours were not seen to go (the deleted
	// node was cancelled or expired while it waited, or never marked its
	// grant): one listing settles where the queue stands.
	held, _ := pred(nodes, indexOf(nodes, own))
	return nodes, !held
}

// release marks the release of a holder that waited: only such a holder
// can have a waiter behind it that still lists nodes ahead of it.
func (f fastHandoff) release(ctx context.Context, s *Session, path string, waited bool) error {
	if f.mark && waited {
		return s.releaseMarked(ctx, path)
	}
	return s.delete(ctx, path)
}

// markRequests is the number of requests watchMarked sends.
const markRequests = 2

// watchMarked watches target twice, its data and its deletion (a children
// watch, which a data change does not consume), in one round trip, so that
// a marked release is taken on its notifications alone. A data change
// after which target is still there was someone else's (Curator's Revoker
// writes into the node it revokes): the watch goes on. The verdict comes
// from a goroutine the Session waits for in Close.
func (s *Session) watchMarked(ctx context.Context, target string) (targetWatch, error) {
	dc := s.getWAsync(ctx, target)
	del, derr := await(ctx, s.watchDeletionAsync(ctx, target))
	d, err := await(ctx, dc)
	if err = firstErr(derr, err); err != nil {
		return targetWatch{stop: func() {}}, err
	}
	out, stop := make(chan released, 1), make(chan struct{})
	if !s.spawn(func() { out <- s.awaitMarked(ctx, target, d.w, del.w, stop) }) {
		return targetWatch{stop: func() {}}, ErrClosed
	}
	return targetWatch{marked: out, stop: sync.OnceFunc(func() { close(stop) })}, nil
}

// awaitMarked waits on target's two watches for its verdict; its read is
// reported under ctx (observe.go), which does not cancel it.
func (s *Session) awaitMarked(ctx context.Context, target string, dataW, delW <-chan zk.Event, stop <-chan struct{}) released {
	changed := false                 // target's data changed and it has not been seen since
	var checkLater <-chan time.Time  // when to read target after that change
	var timer *time.Timer            // behind checkLater
	var verify <-chan reply[watched] // the read sent then
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case ev := <-delW:
			return onMarkedDeletion(ev, dataW, changed)
		case ev := <-dataW:
			dataW = nil
			switch ev.Type {
			case zk.EventNodeDeleted:
				if !changed {
					return released{done: true}
				}
			case zk.EventNodeDataChanged:
				changed = true
				select {
				case dv := <-delW:
					return onMarkedDeletion(dv, nil, true) // deleted in the same breath
				default:
				}
				// The deletion of a marked release follows its data change
				// in the same breath, but go-zookeeper hands the two
				// notifications over one at a time: give the second
				// markGrace to arrive before reading target to learn
				// whether the change was someone else's.
				if timer == nil {
					timer = time.NewTimer(markGrace)
				} else {
					timer.Reset(markGrace)
				}
				checkLater = timer.C
			case zk.EventNotWatching:
				return released{fail: true, err: ev.Err}
			default:
				return released{}
			}
		case <-checkLater:
			checkLater = nil
			verify = s.getWAsync(ctx, target)
		case r := <-verify:
			verify = nil
			switch {
			case r.err == zk.ErrNoNode:
				return released{marked: changed, done: true}
			case r.err != nil:
				return released{fail: true, err: r.err}
			}
			changed, dataW = false, r.v.w // still there: that change was no release
		case <-stop:
			return released{}
		case <-s.closedCh:
			return released{fail: true, err: ErrClosed}
		}
	}
}

// onMarkedDeletion is the verdict on the deletion watch's event: marked
// when target's data changed first (a data change of the same transaction
// is delivered first, on dataW).
func onMarkedDeletion(ev zk.Event, dataW <-chan zk.Event, changed bool) released {
	if ev.Type != zk.EventNodeDeleted {
		return released{fail: true, err: ev.Err}
	}
	select {
	case dv := <-dataW:
		changed = changed || dv.Type == zk.EventNodeDataChanged
	default:
	}
	return released{marked: changed, done: true}
}
