package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// The shared queue every lock recipe runs on (Curator's LockInternals):
// create a protected EPHEMERAL_SEQUENTIAL node, list and sort the children,
// let the recipe's predicate say "held" or "watch that node", watch it with
// getData, and clean up on every failure path.

// queue describes one recipe's queue under dir.
type queue struct {
	s       *Session
	dir     string   // absolute path of the recipe
	name    string   // node name after the protected prefix: "lock-", "__WRIT__", ...
	markers []string // sort markers
	kind    string   // recipe kind, to detect another recipe on the path
	pred    predicate
	// fast lets a waiter trust its first listing when every node is
	// sequential: nodes created later sort above it, so when the watched
	// node goes, the next one to watch (or the grant) is known without
	// listing the children again.
	fast bool
	// noMark turns off the marked release (mark.go) for recipes whose
	// foreign waiters cannot take a data change on the node they watch:
	// Curator's LeaderLatch acts on NodeDeleted only and does not set its
	// watch again, so a data change would leave it waiting forever.
	noMark bool
}

// errStartOver marks a failure after which the acquisition must start
// again from a new node: the session that owned the node ended, or the
// node was deleted under the waiter.
var errStartOver = errors.New("zkrecipes: start over")

type startOver struct{ cause error }

func (e *startOver) Error() string        { return e.cause.Error() }
func (e *startOver) Unwrap() error        { return e.cause }
func (e *startOver) Is(target error) bool { return target == errStartOver }

// acquire runs the queue until the predicate grants the caller, ctx ends,
// or (with try) someone else holds it. After a session loss or the loss of
// its node it starts over under the Session's retry policy. On every
// failure path its node is deleted before it returns (or, when the
// connection is down, in the background).
func (q *queue) acquire(ctx context.Context, data []byte, try bool, onEnd func()) (*hold, error) {
	bo := q.s.cfg.retry()
	for {
		h, err := q.attempt(ctx, data, try, onEnd)
		if err == nil || !errors.Is(err, errStartOver) {
			return h, err
		}
		q.s.cfg.log.Info("zkrecipes: acquisition starts over", "path", q.dir, "err", err)
		d := bo.NextBackOff()
		if d == Stop {
			return nil, fmt.Errorf("%w: %s: %w", ErrRetriesExhausted, q.s.rel(q.dir), errors.Unwrap(err))
		}
		if err := sleepCtx(ctx, d); err != nil {
			return nil, err
		}
	}
}

// attempt is one pass: one node, one session.
func (q *queue) attempt(ctx context.Context, data []byte, try bool, onEnd func()) (*hold, error) {
	// The children are listed right behind the create (see pipeline.go).
	node, l, fresh, err := q.s.createListed(ctx, q.dir, q.name, data, plainList)
	kids, parent := l.kids, l.parent
	if err != nil {
		if errors.Is(err, zk.ErrSessionExpired) {
			return nil, &startOver{err}
		}
		return nil, err
	}
	own := baseName(node.path)
	granted, waited := false, false
	var self selfWatch
	defer func() {
		self.stopLate()
		if !granted {
			q.s.removeNode(node)
		}
	}()

	// The own node's Stat (fencing token, owner) and deletion watch, read
	// only when needed: not when the listing right behind the create gives
	// the token (listingToken); else beside the first watch when
	// the node waits, before the grant when others were in the listing.
	// Without the listing behind the create, the queue lists now.
	if fresh {
		self.token = listingToken(parent)
	}
	if kids == nil {
		if kids, parent, err = q.listStat(ctx, node); err != nil {
			return nil, err
		}
	}
	if err := self.checkOwner(node); err != nil {
		return nil, err
	}

	for {
		nodes := sortNodes(kids, q.markers)
		if k := conflictingKind(nodes, q.kind); k != "" {
			return nil, fmt.Errorf("%w: %s holds %s nodes; this is a %s", ErrRecipeConflict, q.s.rel(q.dir), k, q.kind)
		}
		idx := indexOf(nodes, own)
		if idx < 0 {
			return nil, &startOver{lost(ErrNodeDeleted)}
		}
		fast := q.fast && allSequential(nodes)
		relist := false
		for !relist {
			held, watch := q.pred(nodes, idx)
			if held {
				var token int64
				if err := q.awaitLate(ctx, node, &self); err != nil {
					return nil, err
				}
				switch {
				case self.stat != nil:
					token = self.stat.Czxid
				case self.tokenKnown():
					token = self.token
				case !waited && len(kids) == 1:
					token = listingToken(parent)
				default:
					if err := q.readSelf(ctx, node, &self); err != nil {
						return nil, err
					}
					token = self.stat.Czxid
				}
				epoch, err := q.grant(ctx, node)
				if err != nil {
					return nil, err
				}
				granted = true
				h := newHold(q.s, node, token, self.w, epoch, onEnd)
				// Only a holder that waited can have a waiter behind it
				// that still lists nodes ahead of it (see mark.go).
				h.markedRelease = waited && q.fast && !q.noMark
				return h, nil
			}
			if try {
				return nil, fmt.Errorf("%w: %s", ErrLocked, q.s.rel(q.dir))
			}
			waited = true
			// Only a node with others cached ahead of it needs its release
			// told apart from a plain deletion.
			marked, err := q.waitFor(ctx, node, joinPath(q.dir, nodes[watch].name), fast && watch > 0, &self)
			if err != nil {
				return nil, err
			}
			switch {
			case !fast:
				relist = true
			case marked:
				// The watched node was released by its holder (see
				// releaseMarked): every node ahead of it was gone already,
				// for good.
				nodes = nodes[watch+1:]
			default:
				nodes = append(nodes[:watch:watch], nodes[watch+1:]...)
				// Nodes still cached ahead of ours were not seen to go
				// (the deleted node was cancelled or expired while it
				// waited, or never marked its grant): one listing settles
				// where the queue stands.
				if held, _ := q.pred(nodes, indexOf(nodes, own)); !held {
					relist = true
				}
			}
			idx = indexOf(nodes, own)
		}
		if kids, err = q.list(ctx, node); err != nil {
			return nil, err
		}
	}
}

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

// checkOwner starts over when the node turns out to belong to another
// session than the one that created it.
func (sw *selfWatch) checkOwner(node ownNode) error {
	if sw.stat != nil && sw.stat.EphemeralOwner != node.gen.id {
		return &startOver{fmt.Errorf("%w: node %s belongs to session 0x%x", ErrSessionChanged, baseName(node.path), sw.stat.EphemeralOwner)}
	}
	return nil
}

// listingToken is the fencing token of a node granted without reading it,
// taken from the listing sent right behind its create: the parent's pzxid
// at that listing. It serves in two cases.
//
//   - Alone: the node was the only child in that listing. Its create set
//     pzxid to its czxid, so the two are equal unless a child created after
//     it was deleted again, or one created before it was deleted, before
//     the listing. pzxid is above every token of an earlier owner (their
//     nodes were deleted before the listing, at or below pzxid) and below
//     every token of a later one (their nodes are created after the
//     listing, above pzxid).
//   - Fresh: no child was created between its create and the listing
//     (noneCreatedSince), whoever else is in it. pzxid is its czxid unless a
//     child was deleted in between. It is above every token of an earlier
//     owner (their nodes were created before this one, and their tokens are
//     their czxid, or the pzxid of a listing made before this node's
//     create) and below every token of a later one (their nodes are created
//     after the listing, above pzxid, and a token is never below its node's
//     czxid).
//
// Semaphore leases take it in the fresh case too: the earlier and later
// leases are those created before and after it.
//
// Lease.Token documents this.
func listingToken(parent *zk.Stat) int64 { return parent.Pzxid }

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

// readSelf reads the own node and sets its deletion watch, retrying
// through a connection loss under the same session.
func (q *queue) readSelf(ctx context.Context, node ownNode, self *selfWatch) error {
	for {
		st, w, err := q.s.watchDeletion(ctx, node.path)
		if err == nil {
			self.stat, self.w = st, w
			return self.checkOwner(node)
		}
		if err = q.classify(ctx, node, err); err != nil {
			return err
		}
	}
}

// listStat lists the children with the parent's Stat, retrying through a
// connection loss under the same session.
func (q *queue) listStat(ctx context.Context, node ownNode) ([]string, *zk.Stat, error) {
	for {
		kids, st, err := q.s.childrenStat(ctx, q.dir)
		if err == nil {
			return kids, st, nil
		}
		if err = q.classify(ctx, node, err); err != nil {
			return nil, nil, err
		}
	}
}

// list lists the children, retrying through a connection loss under the
// same session.
func (q *queue) list(ctx context.Context, node ownNode) ([]string, error) {
	for {
		kids, err := q.s.children(ctx, q.dir)
		if err == nil {
			return kids, nil
		}
		if err = q.classify(ctx, node, err); err != nil {
			return nil, err
		}
	}
}

// waitFor waits until target is gone. marked tells that it went in a
// holder's marked release (see mark.go): its data changed, and it was
// deleted before a read of it sent on that change could find it. A data
// change after which target is still there was someone else's (Curator's
// Revoker writes into the node it revokes): the wait goes on. With
// wantMark (the fast handoff) target is watched twice, its data and its
// deletion (a children watch, which a data change does not consume), so
// that the marked release is taken on its notifications alone. A target
// already gone sets no watch.
func (q *queue) waitFor(ctx context.Context, node ownNode, target string, wantMark bool, self *selfWatch) (marked bool, err error) {
	for {
		var dataW, delW <-chan zk.Event
		var err error
		if self.stat == nil && !self.tokenKnown() {
			// The own node is read beside the first watch: the queue
			// waits anyway, so that read adds no round trip.
			if err := ctx.Err(); err != nil {
				return false, err
			}
			q.s.gather(1 + targetRequests(wantMark))
			sc := q.s.watchDeletionAsync(node.path)
			dataW, delW, err = q.watchTarget(ctx, target, wantMark)
			r, rerr := await(ctx, sc)
			if rerr != nil {
				if rerr = q.classify(ctx, node, rerr); rerr != nil {
					return false, rerr
				}
				continue
			}
			self.stat, self.w = r.stat, r.w
			if err := self.checkOwner(node); err != nil {
				return false, err
			}
		} else {
			if self.w == nil && self.late == nil && self.pending == nil {
				self.late = time.NewTimer(selfWatchGrace)
			}
			q.s.gather(targetRequests(wantMark))
			dataW, delW, err = q.watchTarget(ctx, target, wantMark)
		}
		if err == zk.ErrNoNode {
			return false, nil
		}
		if err != nil {
			if err = q.classify(ctx, node, err); err != nil {
				return false, err
			}
			continue
		}
		marked, done, err := q.waitRelease(ctx, node, target, dataW, delW, self)
		if err != nil || done {
			return marked, err
		}
	}
}

// targetRequests is the number of requests watchTarget sends.
func targetRequests(wantMark bool) int {
	if wantMark {
		return 2
	}
	return 1
}

// watchTarget sets the watches a waiter needs on target, in one round
// trip: its data and its deletion (a children watch, which a data change
// does not consume) with wantMark, its data alone otherwise.
func (q *queue) watchTarget(ctx context.Context, target string, wantMark bool) (dataW, delW <-chan zk.Event, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	dc := q.s.getWAsync(target)
	if wantMark {
		del, derr := await(ctx, q.s.watchDeletionAsync(target))
		d, err := await(ctx, dc)
		return d.w, del.w, firstErr(derr, err)
	}
	d, err := await(ctx, dc)
	return d.w, nil, err
}

// waitRelease waits on target's watches: done when target is gone (marked
// as above); not done when the watches must be set again.
func (q *queue) waitRelease(ctx context.Context, node ownNode, target string, dataW, delW <-chan zk.Event, self *selfWatch) (marked, done bool, err error) {
	changed := false                 // target's data changed and it has not been seen since
	var checkLater <-chan time.Time  // when to read target after that change
	var timer *time.Timer            // behind checkLater
	var verify <-chan reply[watched] // the read sent then
	deleted := func(ev zk.Event) bool { return ev.Type == zk.EventNodeDeleted }
	for {
		select {
		case ev := <-delW:
			if !deleted(ev) {
				return false, false, q.classify(ctx, node, ev.Err)
			}
			// A data change of the same transaction was delivered first.
			select {
			case dv := <-dataW:
				changed = changed || dv.Type == zk.EventNodeDataChanged
			default:
			}
			return changed, true, nil
		case ev := <-dataW:
			dataW = nil
			switch ev.Type {
			case zk.EventNodeDeleted:
				if delW == nil || !changed {
					return changed, true, nil
				}
			case zk.EventNodeDataChanged:
				if delW == nil {
					return false, false, nil // no mark wanted: watch again
				}
				changed = true
				select {
				case dv := <-delW:
					if deleted(dv) {
						return true, true, nil // deleted in the same breath
					}
					return false, false, q.classify(ctx, node, dv.Err)
				default:
				}
				// The deletion of a marked release follows its data
				// change in the same breath, but go-zookeeper hands the
				// two notifications over one at a time: give the second
				// markGrace to arrive before reading target to learn
				// whether the change was someone else's.
				if timer == nil {
					timer = time.NewTimer(markGrace)
					defer timer.Stop()
				} else {
					timer.Reset(markGrace)
				}
				checkLater = timer.C
			case zk.EventNotWatching:
				return false, false, q.classify(ctx, node, ev.Err)
			default:
				return false, false, nil
			}
		case <-checkLater:
			checkLater = nil
			verify = q.s.getWAsync(target)
		case r := <-verify:
			verify = nil
			switch {
			case r.err == zk.ErrNoNode:
				return changed, true, nil
			case r.err != nil:
				if err := q.classify(ctx, node, r.err); err != nil {
					return false, false, err
				}
				return false, false, nil
			}
			changed, dataW = false, r.v.w // still there: that change was no release
		case <-self.lateC():
			// Waited selfWatchGrace with the token known: set the watch
			// on the own node's deletion now.
			self.late = nil
			self.pending = q.s.watchDeletionAsync(node.path)
		case r := <-self.pending:
			if err := q.takeLate(ctx, node, self, r); err != nil {
				return false, false, err
			}
		case ev := <-self.w:
			switch ev.Type {
			case zk.EventNodeDeleted:
				return false, false, q.classify(ctx, node, lost(ErrNodeDeleted))
			case zk.EventNotWatching:
				return false, false, q.classify(ctx, node, ev.Err)
			}
			if _, self.w, err = q.s.watchDeletion(ctx, node.path); err != nil {
				return false, false, q.classify(ctx, node, err)
			}
		case <-node.gen.done:
			return false, false, &startOver{node.gen.err}
		case <-ctx.Done():
			return false, false, ctx.Err()
		}
	}
}

// grant confirms that the caller's session still stands before it is told
// it holds: when the grant arrives during a connection loss it waits for
// the connection to come back under the same session. It returns the
// ownership epoch the lease lives in.
func (q *queue) grant(ctx context.Context, node ownNode) (*signal, error) {
	for {
		gen, epoch := q.s.current()
		if gen != node.gen || gen.fired() {
			return nil, &startOver{node.gen.err}
		}
		if !epoch.fired() {
			return epoch, nil
		}
		if _, _, err := q.s.awaitConnected(ctx); err != nil {
			return nil, err
		}
	}
}

// classify turns a failure while queued into what to do: nil to retry
// after the connection came back under the same session, a startOver when
// the node's session or node is gone, or the error to return.
func (q *queue) classify(ctx context.Context, node ownNode, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrClosed) || errors.Is(err, zk.ErrClosing):
		return ErrClosed
	case errors.Is(err, ErrNodeDeleted) || err == zk.ErrNoNode:
		return &startOver{lost(ErrNodeDeleted)}
	case errors.Is(err, zk.ErrSessionExpired) || node.gen.fired():
		return &startOver{lost(ErrSessionExpired)}
	case isRetryable(err):
		gen, _, werr := q.s.awaitConnected(ctx)
		if werr != nil {
			return werr
		}
		if gen != node.gen {
			return &startOver{lost(ErrSessionChanged)}
		}
		return nil
	}
	return fmt.Errorf("zkrecipes: %s: %w", q.s.rel(q.dir), err)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
