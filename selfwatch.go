package zkrecipes

// The late self-watch. A queued node needs its Stat (the fencing token,
// the owner check) and a watch on its deletion; without this file it reads
// its node beside its first watch. When the listing sent right behind the
// create gives the token (listingToken), the node is not read at once: it
// sets its deletion watch only once it has waited selfWatchGrace, as a
// hold does once it has lasted that long, so a short wait costs no read.

import "time"

// deferRead defers the read of the own node of a waiter whose token the
// listing gave (false when the token is unknown: the node must be read
// now). The read is sent once the waiter has waited selfWatchGrace, and
// its reply arrives on sw.pending; sw.cancel withdraws it before then.
func (sw *selfWatch) deferRead(s *Session, node ownNode) bool {
	if !sw.tokenKnown() {
		return false
	}
	if sw.w == nil && sw.pending == nil {
		c := make(chan reply[watched], 1)
		t := time.AfterFunc(selfWatchGrace, func() {
			if !s.spawn(func() { c <- <-s.watchDeletionAsync(node.path) }) {
				c <- reply[watched]{err: ErrClosed}
			}
		})
		sw.pending, sw.cancel = c, t.Stop
	}
	return true
}
