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
// none is in the listing of any waiter behind it either.) The waiter's getData watch fires
// on the first operation, a NodeDataChanged, and the waiter reads the node
// once more (one small read, whatever the length of the queue): found gone,
// it was deleted by its holder. Every node ahead was gone, so the waiter
// holds the lock, and the release costs the server one write, as a plain
// delete does. Found still there, the data change was someone else's
// (Curator's Revoker writes "__REVOKE__" into the node it revokes, and a
// holder that ignores it keeps the lock): the waiter watches it again. A
// node deleted otherwise (cancelled, expired, deleted by an operator, or a
// peer such as Curator that deletes plainly) fires NodeDeleted, and the
// waiter lists once, as Curator always does. Waiters of other libraries
// see the data change as any change to the node they watch and look again.
//
// One consequence for operators: never set data on a queued lock node that
// may then be deleted before its holder is granted (a waiter that reads it
// gone after the change takes that as a holder's release). Turn the fast
// handoff off (WithFastHandoff(false)) where that cannot be promised.

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// releaseMarked deletes a held node in one transaction that first sets its
// data. It returns zk.ErrNoNode when the node is already gone.
func (s *Session) releaseMarked(ctx context.Context, path string) error {
	res, err := s.multi(ctx, path,
		&zk.SetDataRequest{Path: path, Data: nil, Version: -1},
		&zk.DeleteRequest{Path: path, Version: -1})
	if err != nil && len(res) > 0 && res[0].Error == zk.ErrNoNode {
		return zk.ErrNoNode
	}
	return err
}
