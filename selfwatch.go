package zkrecipes

// The own node's watch. A queued node needs its Stat (the fencing token,
// the owner check) and a watch on its deletion. When the listing sent
// right behind the create gives the token (listingToken), the node is not
// read at once: it sets its deletion watch only once it has waited
// selfWatchGrace (late), as a hold does once it has lasted that long.

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
)

// selfWatch is what a queued node knows of itself: its Stat, once read,
// and the watch that fires on its deletion.
type selfWatch struct {
	stat *zk.Stat
	w    <-chan zk.Event
	// token is the node's fencing token when known without reading the
	// node (listingToken), 0 otherwise (a pzxid taken after the node's
	// create is never 0). Such a node sets its deletion watch only once it
	// has waited selfWatchGrace (late), as a hold does once it has lasted
	// that long: the read sent then arrives on pending.
	token   int64
	late    *time.Timer
	pending <-chan reply[watched]
}

// known reports whether the node's token is known: read, or given by the
// listing.
func (sw *selfWatch) known() bool { return sw.stat != nil || sw.tokenKnown() }

// armLate starts the late timer of a node whose token the listing gave,
// once, when it first waits without a deletion watch.
func (sw *selfWatch) armLate() {
	if sw.w == nil && sw.late == nil && sw.pending == nil {
		sw.late = time.NewTimer(selfWatchGrace)
	}
}

// sendLate sends the late read of the own node, its deletion watch, once
// the node has waited selfWatchGrace with its token known.
func (sw *selfWatch) sendLate(s *Session, node ownNode) {
	sw.late = nil
	sw.pending = s.watchDeletionAsync(node.path)
}

// tokenKnown reports whether the listing gave the node's token.
func (sw *selfWatch) tokenKnown() bool { return sw.token != 0 }

// lateC is the channel of the late timer, nil before it is armed.
func (sw *selfWatch) lateC() <-chan time.Time {
	if sw.late == nil {
		return nil
	}
	return sw.late.C
}

// stopLate stops the late timer.
func (sw *selfWatch) stopLate() {
	if sw.late != nil {
		sw.late.Stop()
	}
}

// awaitLate waits for the own node's late read, if one is on its way, so
// that a holder starts with the watch it set: the node is found gone, or
// the read stands.
func (q *queue) awaitLate(ctx context.Context, node ownNode, self *selfWatch) error {
	for self.pending != nil {
		select {
		case r := <-self.pending:
			if err := q.takeLate(ctx, node, self, r); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// takeLate takes the reply to the own node's late read: it keeps the
// node's Stat and deletion watch, sends the read again after a connection
// loss under the same session, or says why the queue gives up or starts
// over (the node is gone, say).
func (q *queue) takeLate(ctx context.Context, node ownNode, self *selfWatch, r reply[watched]) error {
	self.pending = nil
	if r.err != nil {
		if err := q.classify(ctx, node, r.err); err != nil {
			return err
		}
		self.pending = q.s.watchDeletionAsync(node.path)
		return nil
	}
	self.stat, self.w = r.v.stat, r.v.w
	return self.checkOwner(node)
}
