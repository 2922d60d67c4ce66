package zkrecipes

// The late self-watch. A queued node needs its Stat (the fencing token,
// the owner check) and a watch on its deletion; without this file it reads
// its node beside its first watch. When the token is known without a read
// (from the create's reply, or the listing behind it: see createListed),
// the node is not read while it waits, unless it waits longer than its
// session's timeout: a waiter's acquisition then costs the server no more
// requests than go-zookeeper's lock, however slow its handoffs. A node
// deleted under it meanwhile is found by a listing (after a plain deletion
// ahead), by that late read, or, once it holds, by the watch its hold sets
// after selfWatchGrace.

import (
	"context"
	"time"
)

// waiterReadAfter, when set, replaces the session's timeout as the time a
// waiter whose token its listing gave waits before it reads its own node.
// A var for tests only.
var waiterReadAfter time.Duration

// deferRead defers the read of the own node of a waiter whose token is
// known (false when the token is unknown: the node must be read
// now). The read is sent once the waiter has waited its session's timeout,
// and its reply arrives on sw.pending; sw.cancel withdraws it before then.
// The read is reported under ctx, the acquisition's (observe.go).
func (sw *selfWatch) deferRead(ctx context.Context, s *Session, node ownNode) bool {
	if !sw.tokenKnown() {
		return false
	}
	if sw.w == nil && sw.pending == nil {
		after := waiterReadAfter
		if after <= 0 {
			after = max(selfWatchGrace, s.grantedTimeout())
		}
		c := make(chan reply[watched], 1)
		t := time.AfterFunc(after, func() {
			if !s.spawn(func() { c <- <-s.watchDeletionAsync(ctx, node.path) }) {
				c <- reply[watched]{err: ErrClosed}
			}
		})
		sw.pending, sw.cancel = c, t.Stop
	}
	return true
}
