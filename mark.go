package zkrecipes

// Marked releases: how a mutex waiter takes the lock on a notification
// alone, without listing the children again on every handoff.
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
// on a waiting node followed by that node's deletion before the waiter's
// read of it is answered (within a round trip). So, for operators: never
// set data on a queued lock node. Turn the fast handoff off
// (WithFastHandoff(false)) where that cannot be promised.

import (
	"context"
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
