package wire

import (
	"encoding/binary"
	"sync/atomic"
)

// Servers 3.6 to 3.8 keep one watch mode per connection and path
// (ZOOKEEPER-4466, fixed in 3.9): a one-shot watch set on a node that has
// a persistent one turns it back into a one-shot. So after every frame of
// go-zookeeper's that sets a watch on the path of a persistent watch
// (getData, exists, getChildren with the watch flag; SetWatches after a
// reconnection), the layer writes that persistent watch's addWatch again,
// right behind it. On 3.9 and later that addWatch changes nothing.
//
// Where a watch must be set again after a gap in which it was not set as
// it should be (behind such a frame; after putBack, and a recursive watch
// behind a plain add: watches.go), the zxids of the replies on either
// side tell whether anything happened meanwhile: a server processes no
// read while it applies a write (CommitProcessor), so two replies with
// the same zxid prove no change was made between them; otherwise the
// watch's owner is told as on a reconnection (OnReset).

// gap is the zxid of the reply before a gap in which a watch was not set
// as it should be, for the reply to the addWatch that closes the gap.
type gap struct {
	zxid atomic.Int64
	set  atomic.Bool
}

func gapAt(zxid int64) *gap {
	g := &gap{}
	g.mark(zxid)
	return g
}

func (g *gap) mark(zxid int64) { g.zxid.Store(zxid); g.set.Store(true) }

// changed tells whether a change may have been made between the reply
// that opened the gap and one with zxid.
func (g *gap) changed(zxid int64) bool { return !g.set.Load() || g.zxid.Load() != zxid }

// Opcodes of go-zookeeper's requests that may set a watch.
const (
	opExists       = 3
	opGetData      = 4
	opGetChildren  = 8
	opGetChildren2 = 12
)

// reArm is what a frame of go-zookeeper's asks of the persistent watches
// (reArmFor): nothing (the zero value), every registered watch set again
// (all: behind a SetWatches), or the watches on path set again, closing
// gap (behind a request that sets a watch on path).
type reArm struct {
	all  bool
	path []byte
	gap  *gap
}

// reArmFor tells, c.g.mu held, what a frame of go-zookeeper's about to be
// written on c asks of the persistent watches. A getData, exists or
// getChildren with the watch flag on the path of a persistent watch turns
// that path's server watch (its data or its child side) into a one-shot
// on a server that keeps one mode per path, until the re-arm behind it: a
// change it fires on deletes it, and a change below a recursive watch's
// path is not notified. The request's reply marks the gap with its zxid
// (shots.go), and a re-arm's reply with another zxid tells the watch's
// owner to read again (onAdded).
func (l *Layer) reArmFor(c *conn, p []byte) reArm {
	// A server that keeps a watch per mode on a path (3.9 and later) needs
	// none of this: the persistent watch stays what it is. Until the probe
	// has answered, the layer does as for an older server (harmless there).
	if !l.watching() || len(p) < 12 || !c.own.ready || c.watchModes().typed() {
		return reArm{}
	}
	op := int32(binary.BigEndian.Uint32(p[8:12]))
	switch op {
	case opSetWatches:
		return reArm{all: true}
	case opExists, opGetData, opGetChildren, opGetChildren2:
	default:
		return reArm{}
	}
	path, ok := watchingPath(p)
	if !ok {
		return reArm{}
	}
	found, rec := l.onPath(string(path))
	if !found || rec && (op == opGetChildren || op == opGetChildren2) {
		// A child watch changes the path's child-watch mode only; while
		// the path's server watch is recursive, that one adds nothing to
		// the data-watch side, which stays recursive: re-arming would make
		// the child watch recursive, and go-zookeeper's NodeChildrenChanged
		// would never come.
		return reArm{}
	}
	return reArm{path: path, gap: &gap{}}
}

// reArmed writes, c.g.mu held, the addWatch frames r asks for behind the
// frame r was made of, once that frame is written (or gathered). The
// frame's reply may be read, and its caller go on, before this runs: a
// watch unregistered meanwhile (RemoveWatch, Forget) is not set again,
// and its removal, which needs c.g.mu, is written after these frames.
func (l *Layer) reArmed(c *conn, r reArm) {
	if c.watchModes().typed() {
		return // the probe answered while the frame was written
	}
	switch {
	case r.all:
		counts.reArms.Add(l.addAllLocked(c, nil, false, nil))
	case r.path != nil:
		counts.reArms.Add(l.addAllLocked(c, r.path, false, r.gap))
	}
}
